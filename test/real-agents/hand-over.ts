import { writeFile } from "node:fs/promises";
import path from "node:path";
import { stringify } from "yaml";
import { clusterNamespacePath, namespaceManifest } from "../../src/repo/index.js";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { startKubeApiServer, type KubeApiServer } from "../support/kube-api-server.js";
import { POSTGRESQL } from "../support/postgres-operator.js";
import { trackedTempDir } from "../support/processes.js";
import type { KubeObject, RealKube } from "../support/real-kube.js";
import { copyServiceFabrikOnto } from "../support/real-service-fabrik.js";
import { importArgs, registerServiceFabrik, sampleServiceFabrikCatalog, seedLandscape } from "../support/service-fabrik-landscape.js";

/**
 * The Service Fabrik side of the hand-over to a real agent (flux-hand-over.test.ts,
 * argocd-hand-over.test.ts): one instance `r-1` with binding `r-1-b` on a real kube-apiserver
 * that is its own sister (SFCluster "1"), shaped in a double as Service Fabrik's code wrote it,
 * then created on the real server; the broker on a remote holding Service Fabrik's catalog and
 * cluster "1" (commit mode, its namespace.yaml); the import command's flags for them.
 */
export const PG_PATH = "/apis/acid.zalan.do/v1/namespaces/sf-r-1/postgresqls/sapcp-r-1";

const CRDS = path.resolve(import.meta.dirname, "../support/crds");
/** The CRDs of the seeded kinds. */
export const SERVICE_FABRIK_CRD_FILES = ["postgresqls.acid.zalan.do.yaml", "sfserviceinstances.osb.servicefabrik.io.yaml", "sfservicebindings.osb.servicefabrik.io.yaml"].map((f) => path.join(CRDS, f));

export type Live = KubeObject & {
  metadata: { uid: string; labels?: Record<string, string>; annotations?: Record<string, string>; managedFields?: { manager: string; operation: string }[]; ownerReferences?: unknown[] };
  spec: Record<string, unknown>;
  status?: unknown;
};

/** `manager/operation` of each managedFields entry. */
export const managers = (o: Live) => (o.metadata.managedFields ?? []).map((m) => `${m.manager}/${m.operation}`);

export interface HandOver {
  h: Harness;
  /** `--config FILE --master-kubeconfig FILE` (the real server's admin). */
  args: string[];
  close(): Promise<void>;
}

/** Seeds `kube` (its CRDs installed, SERVICE_FABRIK_CRD_FILES) and starts the broker; `namespaces` are created besides Service Fabrik's. */
export async function startHandOver(kube: RealKube, namespaces: readonly string[]): Promise<HandOver> {
  const root = await trackedTempDir("real-hand-over-");
  const shaped: KubeApiServer = await startKubeApiServer({ resources: [POSTGRESQL] });
  try {
    registerServiceFabrik(shaped);
    const { files, service, plan } = await sampleServiceFabrikCatalog();
    await seedLandscape({ master: shaped, sisters: { "1": shaped }, service, plan, instances: [{ id: "r-1", clusterId: "1", bindings: [{ id: "r-1-b" }] }] });
    await copyServiceFabrikOnto(shaped, kube);
    for (const name of namespaces) await kube.apply({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
    const kubeconfig = path.join(root, "admin.kubeconfig");
    await writeFile(kubeconfig, kube.kubeconfig(), { mode: 0o600 });
    const h = await startHarness({
      files: {
        ...files,
        "registry/clusters/1.yaml": stringify({ apiVersion: "gitops-broker.io/v1alpha1", kind: "Cluster", metadata: { name: "1" }, spec: { namespace: "gitops-broker-instances", kubeconfig: { path: kubeconfig }, status: { mode: "commit" } } }),
        [clusterNamespacePath("1")]: namespaceManifest("gitops-broker-instances"),
      },
    });
    const args = await importArgs(root, shaped, h.remoteUrl);
    args[args.indexOf("--master-kubeconfig") + 1] = kubeconfig;
    return {
      h,
      args,
      async close() {
        await h.close();
        await shaped.close();
      },
    };
  } catch (error) {
    await shaped.close();
    throw error;
  }
}
