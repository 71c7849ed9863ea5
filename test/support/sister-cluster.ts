/**
 * A sister cluster for live-status tests: a Kubernetes API server double serving postgresqls and
 * the Argo CD / Flux kinds, its kubeconfig written to a file (as the registry references it), a
 * sync agent for `clusters/<id>/` of the GitOps remote and a postgres-operator double. Plus the
 * registry entry and the sample catalog files to seed a remote with.
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { startKubeApiServer, type KubeApiServer } from "./kube-api-server.js";
import { createPostgresOperator, POSTGRESQL, type PostgresOperator } from "./postgres-operator.js";
import { APPLICATION, createSyncAgent, GIT_REPOSITORY, KUSTOMIZATION, type SyncAgent, type SyncAgentOptions } from "./sync-agent.js";

export const INSTANCE_NAMESPACE = "gitops-broker-instances";
const EXAMPLES = fileURLToPath(new URL("../../examples/catalog/", import.meta.url));

export interface SisterCluster {
  id: string;
  server: KubeApiServer;
  kubeconfigPath: string;
  agent: SyncAgent;
  operator: PostgresOperator;
  /** registry/clusters/<id>.yaml */
  /** `nudge`: spec.sync.nudge as written in the registry. */
  registryEntry(options?: { schedulable?: boolean; mode?: "commit" | "live"; nudge?: Record<string, unknown> }): string;
  close(): Promise<void>;
}

export async function startSisterCluster(options: {
  id: string;
  sync: "argocd" | "flux";
  remoteDir: string;
  /** Where the kubeconfig file goes. */
  dir: string;
  fluxRevisionFormat?: "sha1" | "slash";
  now?: () => Date;
  /** Passed to the sync agent double (poll wait, repoURL, webhook secret, Flux Receiver). */
  agent?: Pick<SyncAgentOptions, "delay" | "repoURL" | "webhookSecret" | "receiver" | "manifestGeneratePaths" | "persistResourceHealth">;
  /** The postgres-operator double's bootstrap time. */
  operatorReadyAfterMs?: number;
}): Promise<SisterCluster> {
  const { id, sync } = options;
  const server = await startKubeApiServer({ bookmarkIntervalMs: 200, resources: [POSTGRESQL, APPLICATION, KUSTOMIZATION, GIT_REPOSITORY] });
  const kubeconfigPath = path.join(options.dir, `${id}.kubeconfig`);
  await fs.writeFile(kubeconfigPath, server.kubeconfig(), { mode: 0o600 });
  const namespace = sync === "argocd" ? "argocd" : "flux-system";
  const agent = createSyncAgent({
    kind: sync,
    name: id,
    namespace,
    clusterId: id,
    remoteDir: options.remoteDir,
    server,
    ...(options.fluxRevisionFormat ? { fluxRevisionFormat: options.fluxRevisionFormat } : {}),
    ...(options.now ? { now: options.now } : {}),
    ...options.agent,
  });
  const operator = createPostgresOperator(server, { readyAfterMs: options.operatorReadyAfterMs ?? 0 });
  return {
    id,
    server,
    kubeconfigPath,
    agent,
    operator,
    registryEntry: ({ schedulable = true, mode = "live", nudge } = {}) =>
      stringify(
        {
          apiVersion: "gitops-broker.io/v1alpha1",
          kind: "Cluster",
          metadata: { name: id },
          spec: {
            namespace: INSTANCE_NAMESPACE,
            schedulable,
            kubeconfig: { path: kubeconfigPath },
            status: { mode },
            sync: { kind: sync, name: id, namespace, ...(nudge ? { nudge } : {}) },
          },
        },
        { lineWidth: 0 },
      ),
    async close() {
      await agent.stop();
      await operator.stop();
      await server.close();
    },
  };
}

/**
 * Waits until the server got no request for 300 ms (the watches of a cluster are all open) and
 * returns how many it recorded: the baseline to prove that polls cost no request.
 */
export async function quietRequests(server: KubeApiServer): Promise<number> {
  let seen = -1;
  for (;;) {
    const count = server.requests.length;
    if (count === seen) return count;
    seen = count;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

/** The sample catalog (examples/catalog) as repo files under `catalog/`. */
export async function sampleCatalogFiles(): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of await fs.readdir(EXAMPLES, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    files[`catalog/${path.relative(EXAMPLES, full).split(path.sep).join("/")}`] = await fs.readFile(full, "utf8");
  }
  return files;
}
