import type { KubeConfig, KubernetesObject, Watch } from "@kubernetes/client-node";
import { loadClientNode } from "./client-node.js";
import { listAll, type ObjectList } from "./list.js";
import { createKubeApi, type KubeStatus } from "./request.js";

/**
 * The I/O of a watch cache (the status watcher's kube-cache.ts): one list of a collection, one watch from a
 * resourceVersion. Everything the cache decides (what changed, where to resume, 410, backoff)
 * happens outside, so a test can hand the cache a transport of its own, as client-node's
 * `ListWatch(path, watch, listFn)` takes its I/O as parameters.
 */

/** The list's objects and resourceVersion: where the watch that follows starts. */
export type ListResult<T extends KubernetesObject> = ObjectList<T>;

export interface WatchHandle {
  /** Ends the watch on purpose; `onDone` is called after. */
  abort(): void;
}

export interface ListWatchTransport<T extends KubernetesObject = KubernetesObject> {
  /**
   * Lists the collection; rejects with a KubeApiError (HTTP status, reason, Retry-After) when the
   * server refuses or cannot be reached.
   */
  list(signal: AbortSignal): Promise<ListResult<T>>;
  /**
   * Watches from `resourceVersion` with bookmarks. `onEvent` gets every event (ERROR ones
   * included), `onDone` once when the stream ends (with the error that ended it, if any).
   * Resolves once the server answered 200; rejects when it could not start.
   */
  watch(resourceVersion: string, onEvent: (type: string, object: T & KubeStatus) => void, onDone: (error: unknown) => void): Promise<WatchHandle>;
}

export interface ClientNodeListWatchOptions {
  kubeConfig: KubeConfig;
  /** Collection path, e.g. `/apis/acid.zalan.do/v1/postgresqls` or `/api/v1/namespaces/ns/secrets`. */
  path: string;
  labelSelector?: string;
  /** Asked of the server for each watch (default 240 s). */
  watchTimeoutSeconds?: number;
}

/** The transport through src/kube's list (every page) and client-node's Watch (loaded on the first list). */
export function clientNodeListWatch<T extends KubernetesObject = KubernetesObject>(options: ClientNodeListWatchOptions): ListWatchTransport<T> {
  const { kubeConfig, path, labelSelector } = options;
  const api = createKubeApi({ kubeConfig });
  const watchTimeoutSeconds = options.watchTimeoutSeconds ?? 240;
  let watcher: Watch | undefined;

  return {
    async list(signal) {
      return listAll<T>(api, path, { signal, ...(labelSelector === undefined ? {} : { labelSelector }) });
    },
    async watch(resourceVersion, onEvent, onDone) {
      watcher ??= new (await loadClientNode()).Watch(kubeConfig);
      const query = { resourceVersion, allowWatchBookmarks: true, timeoutSeconds: watchTimeoutSeconds, labelSelector };
      return watcher.watch(path, query, onEvent, onDone);
    },
  };
}
