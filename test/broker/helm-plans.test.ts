import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { adler32 } from "../../src/charts/index.js";
import { bindingManifestDir, instanceManifestDir, keyOf } from "../../src/repo/index.js";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { readRemoteFile, readRemoteFiles } from "../support/git-fixtures.js";
import { repoFiles } from "../support/repo-files.js";
import { provisionBody, remoteFiles } from "./helpers.js";

/**
 * A Service Fabrik `type: helm` plan through the OSB API: the chart lives in the GitOps
 * repository, `content` (a gotemplate) renders its values, and the manifests committed under
 * clusters/<id>/ are the objects `helm template --include-crds --skip-tests` prints for that
 * chart and those values (the expected text below is reasoned from Helm's code, see
 * test/cli/render-chart.test.ts for the rules), with the broker's labels and namespace.
 */

const CHARTS = path.join(import.meta.dirname, "testdata", "charts");
const SERVICE_ID = "5f1c3a52-0d8b-4b0e-9d3e-7d1f2c9a6b01";
const PLAN_ID = "8a2e4c61-3b7d-4f5e-a1c9-2e6d8b0f4a37";
const NAMESPACE = "gitops-broker-instances";

async function chartFiles(name: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (dir: string) => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) await walk(full);
      else out[`catalog/charts/${name}/${path.relative(path.join(CHARTS, name), full).split(path.sep).join("/")}`] = await readFile(full, "utf8");
    }
  };
  await walk(path.join(CHARTS, name));
  return out;
}

const SERVICE = `apiVersion: osb.servicefabrik.io/v1alpha1
kind: SFService
metadata:
  name: ${SERVICE_ID}
spec:
  id: ${SERVICE_ID}
  name: kvstore
  description: A key-value store from a Helm chart
  bindable: true
  planUpdatable: true
`;

const PLAN = `apiVersion: osb.servicefabrik.io/v1alpha1
kind: SFPlan
metadata:
  name: ${PLAN_ID}
spec:
  id: ${PLAN_ID}
  name: standard
  serviceId: ${SERVICE_ID}
  description: three replicas
  free: true
  bindable: true
  manager:
    async: false
  context:
    replicas: 3
  templates:
  - action: provision
    type: helm
    url: catalog/charts/kvstore
    content: |
      auth:
        username: {{ .instance.spec.parameters.user | default "" | quote }}
      replicas: {{ .plan.spec.context.replicas }}
      exporter:
        enabled: {{ .instance.spec.parameters.monitoring }}
  - action: bind
    type: helm
    url: catalog/charts/kvstore-user
    content: |
      store: in-{{ adler32sum .instance.metadata.name }}-kvstore
      permissions: {{ .binding.spec.parameters.permissions | default "read" }}
`;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    files: await repoFiles([{ id: "c1", namespace: NAMESPACE }], {
      "catalog/kvstore/service.yaml": SERVICE,
      "catalog/kvstore/plan.yaml": PLAN,
      ...(await chartFiles("kvstore")),
      ...(await chartFiles("kvstore-user")),
    }),
  });
}, 120_000);
afterAll(async () => {
  await h?.close();
});

/** The objects of the YAML files directly in `dir` on the remote's main branch. */
async function objectsIn(dir: string): Promise<Record<string, unknown>[]> {
  const files = (await remoteFiles(h.remoteDir, dir)).filter((f) => path.posix.dirname(f) === dir);
  const out: Record<string, unknown>[] = [];
  for (const text of await readRemoteFiles(h.remoteDir, "main", files)) out.push(...parseAllDocuments(text ?? "").map((d) => d.toJS() as Record<string, unknown>));
  return out.sort((a, b) => key(a).localeCompare(key(b)));
}

const key = (o: Record<string, unknown>) => `${String(o.kind)}/${(o.metadata as { name: string }).name}`;

/** `helm template` documents with the broker's labels and the instance namespace (not on the CRD). */
function expected(helmOutput: string, labels: Record<string, string>): Record<string, unknown>[] {
  return parseAllDocuments(helmOutput)
    .map((d) => d.toJS() as Record<string, unknown>)
    .map((o) => {
      const metadata = o.metadata as Record<string, unknown>;
      const namespaced = o.kind !== "CustomResourceDefinition";
      return {
        ...o,
        metadata: {
          ...metadata,
          ...(namespaced ? { namespace: NAMESPACE } : {}),
          labels: { ...((metadata.labels as Record<string, string> | undefined) ?? {}), ...labels },
        },
      };
    })
    .sort((a, b) => key(a).localeCompare(key(b)));
}

describe("a helm plan", () => {
  it("provisions: the committed objects are the chart's, rendered with the values content gives", async () => {
    const id = "kv-1";
    const res = await h.osb.provision(id, provisionBody(SERVICE_ID, PLAN_ID, { parameters: { user: "admin", monitoring: true } }));
    expect(res.body).toEqual({});
    expect(res.status).toBe(201);
    // Service Fabrik's release name: in-<adler32 of the instance's name>.
    const release = `in-${adler32(id)}`;
    const crd = await readFile(path.join(CHARTS, "kvstore", "crds", "kvstores.yaml"), "utf8");
    // What `helm template in-… catalog/charts/kvstore -f <values> --namespace gitops-broker-instances
    // --include-crds --skip-tests` prints: the values are content's output (replicas 3, user
    // admin, exporter on); the exporter subchart sees the parent's exporter.port (9121).
    const helmOutput = `---
# Source: kvstore/crds/kvstores.yaml
${crd}
---
# Source: kvstore/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: ${release}-kvstore-config
  labels:
    app.kubernetes.io/name: kvstore
    app.kubernetes.io/instance: ${release}
    app.kubernetes.io/version: "2.4"
data:
  motd: "${release} serves 3 replica(s)"
  namespace: ${NAMESPACE}
---
# Source: kvstore/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: ${release}-kvstore
  labels:
    app.kubernetes.io/name: kvstore
    app.kubernetes.io/instance: ${release}
    app.kubernetes.io/version: "2.4"
spec:
  ports:
    - name: kv
      port: 6379
  selector:
    app.kubernetes.io/instance: ${release}
---
# Source: kvstore/charts/exporter/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${release}-exporter
spec:
  replicas: 1
  selector:
    matchLabels:
      app: ${release}-exporter
  template:
    metadata:
      labels:
        app: ${release}-exporter
    spec:
      containers:
        - name: exporter
          image: example/kv-exporter:1.2.0
          ports:
            - containerPort: 9121
---
# Source: kvstore/templates/kvstore.yaml
apiVersion: example.com/v1
kind: KVStore
metadata:
  name: ${release}-kvstore
  labels:
    app.kubernetes.io/name: kvstore
    app.kubernetes.io/instance: ${release}
    app.kubernetes.io/version: "2.4"
spec:
  replicas: 3
  storage: "1Gi"
  adminUser: admin
  configMap: ${release}-kvstore-config
`;
    const labels = { "app.kubernetes.io/managed-by": "gitops-broker", "gitops-broker.io/instance-id": keyOf(id) };
    expect(await objectsIn(instanceManifestDir("c1", id))).toEqual(expected(helmOutput, labels));
  });

  it("binds: the bind chart renders the binding's objects under its release name", async () => {
    const id = "kv-2";
    expect((await h.osb.provision(id, provisionBody(SERVICE_ID, PLAN_ID, { parameters: { user: "u", monitoring: false } }))).status).toBe(201);
    // Without the exporter the instance has no Deployment: the condition saw content's values.
    const kinds = (await objectsIn(instanceManifestDir("c1", id))).map((o) => o.kind);
    expect(kinds).toEqual(["ConfigMap", "CustomResourceDefinition", "KVStore", "Service"]);

    const res = await h.osb.bind(id, "app-1", { service_id: SERVICE_ID, plan_id: PLAN_ID, bind_resource: { app_guid: "app-guid" }, parameters: { permissions: "write" } });
    expect(res.status).toBe(201);
    const release = `in-${adler32("app-1")}`;
    const helmOutput = `---
# Source: kvstore-user/templates/user.yaml
apiVersion: example.com/v1
kind: KVStoreUser
metadata:
  name: ${release}
spec:
  store: in-${adler32(id)}-kvstore
  permissions: write
  secretName: ${release}-credentials
`;
    const labels = { "app.kubernetes.io/managed-by": "gitops-broker", "gitops-broker.io/instance-id": keyOf(id), "gitops-broker.io/binding-id": keyOf("app-1") };
    expect(await objectsIn(bindingManifestDir("c1", id, "app-1"))).toEqual(expected(helmOutput, labels));
  });

  it("refuses a provision whose values the chart rejects, with Helm's message and no commit", async () => {
    const res = await h.osb.provision("kv-3", provisionBody(SERVICE_ID, PLAN_ID, { parameters: { monitoring: false } }));
    expect(res.status).toBe(400);
    expect(String(res.body.description)).toContain("execution error at (kvstore/templates/kvstore.yaml:10:16): auth.username is required");
    expect(parse((await readRemoteFile(h.remoteDir, "main", "clusters/c1/namespace.yaml")) ?? "")).toBeTruthy();
    expect(await remoteFiles(h.remoteDir, instanceManifestDir("c1", "kv-3"))).toEqual([]);
  });
});
