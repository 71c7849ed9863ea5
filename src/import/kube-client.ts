import type { KubeConfig, KubernetesObject } from "@kubernetes/client-node";
import { KubeApiError } from "../errors/index.js";
import { loadClientNode, type ClientNode } from "../kube/index.js";
import type { ClusterClient, KubeObject, ObjectIdentity } from "./landscape.js";

/**
 * The import's access to a cluster through @kubernetes/client-node: lists in pages of 500 (one
 * discovery request per apiVersion, cached by client-node), merge patches and orphaning deletes
 * for the hand-over. Failures are KubeApiErrors naming the cluster and the request.
 */

function objectApiClass(k8s: ClientNode) {
  return class ObjectApi extends k8s.KubernetesObjectApi {
    served(apiVersion: string, kind: string) {
      return this.resource(apiVersion, kind);
    }
  };
}

const PAGE = 500;

export async function clusterClient(kubeConfig: KubeConfig, label: string): Promise<ClusterClient> {
  const k8s = await loadClientNode();
  const api = kubeConfig.makeApiClient(objectApiClass(k8s));
  const server = kubeConfig.getCurrentCluster()?.server ?? "(no server)";
  const fail = (what: string, error: unknown) => {
    const code = (error as { code?: unknown }).code;
    return new KubeApiError(`${label} (${server}): ${what}`, typeof code === "number" ? { status: code } : {}, { cause: error });
  };
  const header = (ref: ObjectIdentity): KubernetesObject => ({ apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name, ...(ref.namespace ? { namespace: ref.namespace } : {}) } });
  const name = (ref: ObjectIdentity) => `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ""}${ref.name}`;
  return {
    server,
    async list(apiVersion, kind) {
      try {
        if ((await api.served(apiVersion, kind)) === undefined) return [];
        const out: KubeObject[] = [];
        let token: string | undefined;
        do {
          const page = await api.list(apiVersion, kind, undefined, undefined, undefined, undefined, undefined, undefined, PAGE, token);
          for (const item of page.items) out.push({ ...item, apiVersion, kind } as KubeObject);
          token = page.metadata?._continue || undefined;
        } while (token !== undefined);
        return out;
      } catch (error) {
        throw fail(`cannot list ${apiVersion} ${kind}`, error);
      }
    },
    async mergePatch(ref, patch) {
      try {
        const metadata = typeof patch.metadata === "object" && patch.metadata !== null ? (patch.metadata as Record<string, unknown>) : {};
        const body = { ...patch, apiVersion: ref.apiVersion, kind: ref.kind, metadata: { ...metadata, name: ref.name, ...(ref.namespace ? { namespace: ref.namespace } : {}) } };
        await api.patch(body, undefined, undefined, "gitops-broker-import", undefined, k8s.PatchStrategy.MergePatch);
      } catch (error) {
        throw fail(`cannot patch ${name(ref)}`, error);
      }
    },
    async deleteOrphan(ref) {
      try {
        await api.delete(header(ref), undefined, undefined, undefined, undefined, "Orphan");
      } catch (error) {
        if ((error as { code?: unknown }).code === 404) return;
        throw fail(`cannot delete ${name(ref)}`, error);
      }
    },
  };
}
