import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { adler32 } from "../../src/charts/index.js";
import { instanceManifestDir, keyOf } from "../../src/repo/index.js";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { readRemoteFiles } from "../support/git-fixtures.js";
import { repoFiles } from "../support/repo-files.js";
import { provisionBody, remoteFiles } from "./helpers.js";

/**
 * A helm plan's `.Capabilities` are the target cluster's: `spec.kubeVersion` and
 * `spec.apiVersions` of its registry entry when it declares them (as `helm template
 * --kube-version --api-versions`), else `helm template`'s defaults. The expected objects are
 * reasoned from Helm (pkg/chartutil/capabilities.go, `helm template`): a declared version is read
 * as major.minor.patch and printed `v<major>.<minor>.<patch>`; `--api-versions` are appended to
 * the default set (client-go's scheme: it has batch/v1, not monitoring.coreos.com/v1) and `Has`
 * is exact membership; without a flag the version is the release build's, Kubernetes v1.36.0
 * (ADR 0015).
 */

const CHART = path.join(import.meta.dirname, "testdata", "charts", "capsprobe");
const SERVICE_ID = "0c7d2f3e-6a41-4b8e-9f52-1d3e5a7b9c02";
const DECLARED_PLAN_ID = "3e9a1b7c-5d2f-4e60-8a14-6b0c2d4f8e11";
const DEFAULT_PLAN_ID = "7b4c8d2e-1f3a-4c59-b6e0-9a2d4f6b8c33";
const NAMESPACE = "gitops-broker-instances";

async function chartFiles(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (dir: string) => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) await walk(full);
      else out[`catalog/charts/capsprobe/${path.relative(CHART, full).split(path.sep).join("/")}`] = await readFile(full, "utf8");
    }
  };
  await walk(CHART);
  return out;
}

const SERVICE = `apiVersion: osb.servicefabrik.io/v1alpha1
kind: SFService
metadata:
  name: ${SERVICE_ID}
spec:
  id: ${SERVICE_ID}
  name: capsprobe
  description: Prints the cluster's capabilities
  bindable: false
`;

/** A plan placed (scheduler label-selector) on the clusters labelled caps=<caps>. */
const plan = (id: string, name: string, caps: string) => `apiVersion: osb.servicefabrik.io/v1alpha1
kind: SFPlan
metadata:
  name: ${id}
spec:
  id: ${id}
  name: ${name}
  serviceId: ${SERVICE_ID}
  description: placed on caps=${caps}
  free: true
  bindable: false
  manager:
    async: false
  templates:
  - action: clusterSelector
    type: gotemplate
    content: caps=${caps}
  - action: provision
    type: helm
    url: catalog/charts/capsprobe
    content: ""
`;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    scheduler: "label-selector",
    files: await repoFiles(
      [
        {
          id: "declared",
          namespace: NAMESPACE,
          labels: { caps: "declared" },
          spec: { kubeVersion: "1.31.4", apiVersions: ["monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor"] },
        },
        { id: "plain", namespace: NAMESPACE, labels: { caps: "default" } },
      ],
      {
        "catalog/capsprobe/service.yaml": SERVICE,
        "catalog/capsprobe/declared.yaml": plan(DECLARED_PLAN_ID, "declared", "declared"),
        "catalog/capsprobe/default.yaml": plan(DEFAULT_PLAN_ID, "default", "default"),
        ...(await chartFiles()),
      },
    ),
  });
}, 120_000);
afterAll(async () => {
  await h?.close();
});

const key = (o: Record<string, unknown>) => `${String(o.kind)}/${(o.metadata as { name: string }).name}`;

async function objectsIn(dir: string): Promise<Record<string, unknown>[]> {
  const files = (await remoteFiles(h.remoteDir, dir)).filter((f) => path.posix.dirname(f) === dir);
  const out: Record<string, unknown>[] = [];
  for (const text of await readRemoteFiles(h.remoteDir, "main", files)) out.push(...parseAllDocuments(text ?? "").map((d) => d.toJS() as Record<string, unknown>));
  return out.sort((a, b) => key(a).localeCompare(key(b)));
}

/** `helm template` documents with the broker's labels and the instance namespace. */
function expected(helmOutput: string, id: string): Record<string, unknown>[] {
  const labels = { "app.kubernetes.io/managed-by": "gitops-broker", "gitops-broker.io/instance-id": keyOf(id) };
  return parseAllDocuments(helmOutput)
    .map((d) => d.toJS() as Record<string, unknown>)
    .map((o) => ({ ...o, metadata: { ...(o.metadata as Record<string, unknown>), namespace: NAMESPACE, labels } }))
    .sort((a, b) => key(a).localeCompare(key(b)));
}

describe("a helm plan's .Capabilities", () => {
  it("are the cluster's registry entry's when it declares kubeVersion and apiVersions", async () => {
    const id = "caps-declared";
    const res = await h.osb.provision(id, provisionBody(SERVICE_ID, DECLARED_PLAN_ID));
    expect(res.body).toEqual({});
    expect(res.status).toBe(201);
    const release = `in-${adler32(id)}`;
    // helm template --kube-version 1.31.4 --api-versions monitoring.coreos.com/v1
    //   --api-versions monitoring.coreos.com/v1/ServiceMonitor: both added names are in the set.
    const helmOutput = `---
# Source: capsprobe/templates/capabilities.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: ${release}-capabilities
data:
  kubeVersion: "v1.31.4"
  kubeMinor: "31"
  batchV1: "true"
  monitoringV1: "true"
---
# Source: capsprobe/templates/capabilities.yaml
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: ${release}-metrics
spec:
  endpoints:
    - port: metrics
  selector:
    matchLabels:
      app.kubernetes.io/instance: ${release}
`;
    expect(await objectsIn(instanceManifestDir("declared", id))).toEqual(expected(helmOutput, id));
  });

  it("are Helm's defaults on a cluster whose entry declares none", async () => {
    const id = "caps-default";
    const res = await h.osb.provision(id, provisionBody(SERVICE_ID, DEFAULT_PLAN_ID));
    expect(res.body).toEqual({});
    expect(res.status).toBe(201);
    const release = `in-${adler32(id)}`;
    // helm template without --kube-version / --api-versions: v1.36.0 and client-go's scheme,
    // which has batch/v1 and no monitoring.coreos.com group: no ServiceMonitor.
    const helmOutput = `---
# Source: capsprobe/templates/capabilities.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: ${release}-capabilities
data:
  kubeVersion: "v1.36.0"
  kubeMinor: "36"
  batchV1: "true"
  monitoringV1: "false"
`;
    expect(await objectsIn(instanceManifestDir("plain", id))).toEqual(expected(helmOutput, id));
  });
});
