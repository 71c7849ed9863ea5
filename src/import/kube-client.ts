import type { KubeConfig } from "@kubernetes/client-node";
import { KubeApiError } from "../errors/index.js";
import { collectionPath, createKubeApi, createResourceFinder, listAll, objectPath, type ResourceInfo } from "../kube/index.js";
import type { ClusterClient, KubeObject, ObjectIdentity } from "./landscape.js";
import { identityText } from "./landscape.js";

/**
 * The import's access to a cluster, over src/kube: every list to its last page (`pageSize` objects
 * a request, 500 by default), sifted as its pages arrive; merge patches and orphaning deletes for
 * the hand-over. Failures are KubeApiErrors naming the cluster and the request.
 */

export interface ClusterClientOptions {
  /** Objects per list request (default 500). */
  pageSize?: number;
}

export async function clusterClient(kubeConfig: KubeConfig, label: string, options: ClusterClientOptions = {}): Promise<ClusterClient> {
  const server = kubeConfig.getCurrentCluster()?.server ?? "(no server)";
  const where = `${label} (${server})`;
  const api = createKubeApi({ kubeConfig, label: where });
  const find = createResourceFinder(api);
  const pathOf = async (ref: ObjectIdentity): Promise<string | undefined> => {
    const info = await find(ref.apiVersion, ref.kind);
    return info && objectPath(ref.apiVersion, info, ref.namespace, ref.name);
  };
  return {
    server,
    async list(apiVersion, kind, keep = (o: KubeObject): KubeObject | undefined => o) {
      const info: ResourceInfo | undefined = await find(apiVersion, kind);
      if (info === undefined) return [];
      // Without managedFields (the API server's bookkeeping, about as large as the object; nothing
      // here reads it), and only what `keep` keeps, page by page: a list of 10,000 objects is not
      // held in full before it is sifted.
      const { items } = await listAll<KubeObject, KubeObject>(api, collectionPath(apiVersion, info, ""), {
        what: `list ${apiVersion} ${kind}`,
        ...options,
        keep: ({ metadata: { managedFields: _managed, ...metadata }, ...item }) => keep({ ...item, metadata, apiVersion, kind }),
      });
      return items;
    },
    async mergePatch(ref, patch) {
      const path = await pathOf(ref);
      const what = `patch ${identityText(ref)}`;
      if (path === undefined) throw new KubeApiError(`${where}: ${what}: the cluster does not serve ${ref.apiVersion} ${ref.kind}`, { status: 404 });
      await api.request({ method: "PATCH", path, query: { fieldManager: "gitops-broker-import" }, body: patch, contentType: "application/merge-patch+json", what });
    },
    async deleteOrphan(ref) {
      const path = await pathOf(ref);
      // A kind no longer served has no object left to orphan.
      if (path === undefined) return;
      const body = { apiVersion: "v1", kind: "DeleteOptions", propagationPolicy: "Orphan" };
      await api.request({ method: "DELETE", path, body, answers: [404], what: `delete ${identityText(ref)}` });
    },
  };
}
