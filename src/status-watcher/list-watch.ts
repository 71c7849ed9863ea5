import type { IsomorphicFetchHttpLibrary, KubeConfig, KubernetesObject, ResponseContext, Watch } from "@kubernetes/client-node";
import { KubeApiError } from "../errors/index.js";
import { loadClientNode, type ClientNode } from "./client-node.js";

/**
 * The I/O of a watch cache (kube-cache.ts): one list of a collection, one watch from a
 * resourceVersion. Everything the cache decides (what changed, where to resume, 410, backoff)
 * happens outside, so a test can hand the cache a transport of its own, as client-node's
 * `ListWatch(path, watch, listFn)` takes its I/O as parameters.
 */

/** A Kubernetes Status, as an ERROR watch event or a failed request's body carries it. */
export interface KubeStatus {
  code?: number;
  reason?: string;
  message?: string;
}

export interface ListResult<T extends KubernetesObject> {
  items: T[];
  /** The list's resourceVersion: where the watch that follows starts. */
  resourceVersion: string;
}

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

/** The transport through @kubernetes/client-node (loaded on the first list). */
export function clientNodeListWatch<T extends KubernetesObject = KubernetesObject>(options: ClientNodeListWatchOptions): ListWatchTransport<T> {
  const { kubeConfig, path, labelSelector } = options;
  const server = kubeConfig.getCurrentCluster()?.server;
  if (server === undefined) throw new KubeApiError("watch cache kubeConfig has no current cluster");
  const watchTimeoutSeconds = options.watchTimeoutSeconds ?? 240;
  let client: { k8s: ClientNode; http: IsomorphicFetchHttpLibrary; watcher: Watch } | undefined;
  const clientNode = async () => {
    if (client === undefined) {
      const k8s = await loadClientNode();
      client ??= { k8s, http: new k8s.IsomorphicFetchHttpLibrary(), watcher: new k8s.Watch(kubeConfig) };
    }
    return client;
  };

  return {
    async list(signal) {
      const { k8s, http } = await clientNode();
      const request = new k8s.RequestContext(`${server}${path}`, k8s.HttpMethod.GET);
      request.setHeaderParam("Accept", "application/json");
      if (labelSelector !== undefined) request.setQueryParam("labelSelector", labelSelector);
      request.setSignal(signal);
      await kubeConfig.applySecurityAuthentication(request);
      let response: ResponseContext;
      let text: string;
      try {
        response = await http.send(request).toPromise();
        text = await response.body.text();
      } catch (error) {
        throw new KubeApiError(`list ${path} failed`, {}, { cause: error });
      }
      if (response.httpStatusCode !== 200) throw listError(path, response.httpStatusCode, text, response.headers["retry-after"]);
      let list: { kind?: string; apiVersion?: string; metadata?: { resourceVersion?: string }; items?: T[] };
      try {
        list = JSON.parse(text) as typeof list;
      } catch (error) {
        throw new KubeApiError(`list ${path}: the response is not JSON`, { status: 200 }, { cause: error });
      }
      // kube-apiserver leaves apiVersion/kind out of the items of built-in lists; put them back.
      const kind = list.kind?.replace(/List$/, "");
      return { items: (list.items ?? []).map((item) => ({ apiVersion: list.apiVersion, kind, ...item })), resourceVersion: list.metadata?.resourceVersion ?? "" };
    },
    async watch(resourceVersion, onEvent, onDone) {
      // The first list (which always precedes the first watch) loaded client-node.
      const { watcher } = await clientNode();
      const query = { resourceVersion, allowWatchBookmarks: true, timeoutSeconds: watchTimeoutSeconds, labelSelector };
      return watcher.watch(path, query, onEvent, onDone);
    },
  };
}

/** A failed list's error: the Status's message, and Retry-After when the server gave one. */
export function listError(path: string, code: number, body: string, retryAfter: string | undefined): KubeApiError {
  let parsed: KubeStatus = {};
  try {
    parsed = JSON.parse(body) as KubeStatus;
  } catch {
    // Not a Status (e.g. a proxy's HTML page): the HTTP status says enough.
  }
  const seconds = retryAfter === undefined ? Number.NaN : Number(retryAfter);
  return new KubeApiError(`list ${path}: HTTP ${code}${parsed.message ? `: ${parsed.message}` : ""}`, {
    status: code,
    ...(parsed.reason === undefined ? {} : { reason: parsed.reason }),
    ...(Number.isFinite(seconds) && seconds >= 0 ? { retryAfterMs: seconds * 1000 } : {}),
  });
}
