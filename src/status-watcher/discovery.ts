import type { KubeConfig } from "@kubernetes/client-node";
import { KubeApiError } from "../errors/index.js";
import { loadClientNode, type ClientNode } from "./client-node.js";

/** How a kind is served: its collection name and scope. */
export interface ResourceInfo {
  plural: string;
  namespaced: boolean;
}

/** client-node's discovery (`resource()`, cached per apiVersion), which it keeps protected. */
function discoveryClass(k8s: ClientNode) {
  return class Discovery extends k8s.KubernetesObjectApi {
    find(apiVersion: string, kind: string) {
      return this.resource(apiVersion, kind);
    }
  };
}

/** Made once, after the first load of the module. */
let Discovery: ReturnType<typeof discoveryClass> | undefined;

export type Discover = (apiVersion: string, kind: string) => Promise<ResourceInfo>;

/**
 * Resolves `apiVersion` + `kind` to the collection to watch, with one discovery request per
 * apiVersion (client-node caches the APIResourceList). The discover function rejects with
 * KubeApiError when the kind is not served (e.g. the operator's CRD is not installed) or the
 * cluster cannot be asked. Async because it loads @kubernetes/client-node; rejects as
 * `makeApiClient` throws (a kubeconfig without a current cluster).
 */
export async function createDiscovery(kubeConfig: KubeConfig): Promise<Discover> {
  Discovery ??= discoveryClass(await loadClientNode());
  const discovery = kubeConfig.makeApiClient(Discovery);
  return async (apiVersion, kind) => {
    let found: Awaited<ReturnType<typeof discovery.find>>;
    try {
      found = await discovery.find(apiVersion, kind);
    } catch (error) {
      const status = (error as { code?: unknown }).code;
      throw new KubeApiError(`discovery of ${apiVersion} ${kind} failed`, typeof status === "number" ? { status } : {}, { cause: error });
    }
    if (found === undefined) throw new KubeApiError(`the cluster does not serve ${apiVersion} ${kind}`, { status: 404 });
    return { plural: found.name, namespaced: found.namespaced };
  };
}

/** The collection path of a kind, in one namespace or (cluster-scoped, or namespace "") all. */
export function collectionPath(apiVersion: string, info: ResourceInfo, namespace: string): string {
  const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return info.namespaced && namespace !== "" ? `${base}/namespaces/${namespace}/${info.plural}` : `${base}/${info.plural}`;
}
