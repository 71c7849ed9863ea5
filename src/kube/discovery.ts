import { InvalidArgumentError, KubeApiError } from "../errors/index.js";
import type { KubeApi } from "./request.js";

/**
 * Which collection serves a kind: one discovery request per apiVersion (`/api/v1`,
 * `/apis/<group>/<version>`), its APIResourceList kept once read. A group or version the cluster
 * does not serve (404: e.g. an operator's CRD not installed yet) is asked again next time.
 */

/** How a kind is served: its collection name and scope. */
export interface ResourceInfo {
  plural: string;
  namespaced: boolean;
}

/** The served resource of `apiVersion` + `kind`; undefined when the cluster does not serve it. */
export type FindResource = (apiVersion: string, kind: string) => Promise<ResourceInfo | undefined>;

/** Like FindResource, but a kind that is not served rejects with a KubeApiError (status 404). */
export type Discover = (apiVersion: string, kind: string) => Promise<ResourceInfo>;

interface ApiResourceList {
  resources?: { name: string; kind: string; namespaced: boolean }[];
}

export function createResourceFinder(api: KubeApi): FindResource {
  const lists = new Map<string, Promise<Map<string, ResourceInfo> | undefined>>();
  const read = async (apiVersion: string): Promise<Map<string, ResourceInfo> | undefined> => {
    const { status, body } = await api.request<ApiResourceList>({ method: "GET", path: groupVersionPath(apiVersion), answers: [404], what: `discovery of ${apiVersion}` });
    if (status === 404) return undefined;
    // Subresources (`postgresqls/status`) share the kind: only the collections.
    return new Map((body.resources ?? []).filter((r) => !r.name.includes("/")).map((r) => [r.kind, { plural: r.name, namespaced: r.namespaced }]));
  };
  return async (apiVersion, kind) => {
    let list = lists.get(apiVersion);
    if (list === undefined) {
      list = read(apiVersion);
      lists.set(apiVersion, list);
      // Only a served list is kept: a failure or a 404 is asked again.
      list.then((found) => found ?? lists.delete(apiVersion), () => lists.delete(apiVersion)).catch(() => undefined);
    }
    return (await list)?.get(kind);
  };
}

export function createDiscovery(api: KubeApi): Discover {
  const find = createResourceFinder(api);
  return async (apiVersion, kind) => {
    const found = await find(apiVersion, kind);
    if (found === undefined) throw new KubeApiError(`the cluster does not serve ${apiVersion} ${kind}`, { status: 404 });
    return found;
  };
}

function groupVersionPath(apiVersion: string): string {
  return apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}

/** The collection path of a kind, in one namespace or (cluster-scoped, or namespace "") all. */
export function collectionPath(apiVersion: string, info: ResourceInfo, namespace: string): string {
  const base = groupVersionPath(apiVersion);
  return info.namespaced && namespace !== "" ? `${base}/namespaces/${encodeURIComponent(namespace)}/${info.plural}` : `${base}/${info.plural}`;
}

/** The path of one object (`namespace` is ignored for a cluster-scoped kind, required for a namespaced one). */
export function objectPath(apiVersion: string, info: ResourceInfo, namespace: string | undefined, name: string): string {
  if (info.namespaced && !namespace) throw new InvalidArgumentError(`${info.plural} of ${apiVersion} are namespaced: ${name} needs a namespace`);
  return `${collectionPath(apiVersion, info, info.namespaced ? (namespace ?? "") : "")}/${encodeURIComponent(name)}`;
}
