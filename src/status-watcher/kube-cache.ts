import { setTimeout as sleep } from "node:timers/promises";
import type { IsomorphicFetchHttpLibrary, KubeConfig, KubernetesObject, ResponseContext, Watch } from "@kubernetes/client-node";
import { KubeApiError } from "../errors/index.js";
import type { Logger } from "../log/index.js";
import type { Counter, Labels } from "../metrics/index.js";
import { loadClientNode, type ClientNode } from "./client-node.js";

/**
 * A list+watch cache of one Kubernetes collection (`/api/v1/secrets`,
 * `/apis/acid.zalan.do/v1/namespaces/x/postgresqls`, ...), so that reading live objects costs no
 * API request.
 *
 * Modelled on client-node's `ListWatch` (src/cache.ts), closing its gaps: it lists, then watches
 * from the list's resourceVersion with bookmarks; a watch that ends is resumed from the last
 * resourceVersion seen; a 410 (ERROR event or HTTP status) re-lists and reports what vanished as
 * DELETED; every other failure is logged, shown in `state()` and retried after an exponential
 * backoff (1s..30s, equal jitter; Retry-After on a 429 list) instead of stopping the cache; and it
 * re-lists every `relistIntervalMs`, which also bounds how long a silently dead watch connection
 * can go unnoticed.
 */

export type WatchCacheEventType = "ADDED" | "MODIFIED" | "DELETED";

export interface WatchCacheEvent<T extends KubernetesObject = KubernetesObject> {
  type: WatchCacheEventType;
  object: T;
}

export interface WatchCacheState {
  /** The first list succeeded: the cache holds the collection (possibly stale while `lastError` is set). */
  synced: boolean;
  /** The most recent failure, cleared by the next successful list or watch. */
  lastError?: string;
  /** End of the last successful list. */
  lastSyncAt?: Date;
  /** The resourceVersion the next watch starts from (advanced by events and bookmarks). */
  resourceVersion: string;
  /** Lists after the first one (410, periodic, after a failed list). */
  relists: number;
  /** Watches started after the first one. */
  watchRestarts: number;
}

export interface WatchCacheOptions {
  kubeConfig: KubeConfig;
  /** Collection path, e.g. `/apis/acid.zalan.do/v1/postgresqls` or `/api/v1/namespaces/ns/secrets`. */
  path: string;
  labelSelector?: string;
  logger: Logger;
  /** Waits between retries (default: a timer that `stop()` cancels). */
  delay?: (ms: number) => Promise<void>;
  /** Counts each retry after a failed list or watch (with these labels). */
  restarts?: { counter: Counter; labels: Labels };
  /** Counts each full re-list after the first list (with these labels). */
  relists?: { counter: Counter; labels: Labels };
  /** Called after each successful list (the first one included). */
  onListed?: () => void;
  /** Jitter source in [0, 1) (default Math.random). */
  random?: () => number;
  /** Full re-list period (default 5 minutes). */
  relistIntervalMs?: number;
  /** Asked of the server for each watch (default 240 s). */
  watchTimeoutSeconds?: number;
  now?: () => Date;
}

export interface WatchCache<T extends KubernetesObject = KubernetesObject> {
  /** Starts listing and watching; resolves after the first successful list, rejects if stopped before. */
  start(): Promise<void>;
  /** `namespace` is "" for cluster-scoped objects. */
  get(namespace: string, name: string): T | undefined;
  list(): T[];
  /** Called for every change (also those found by a re-list); returns an unsubscribe function. */
  onChange(listener: (event: WatchCacheEvent<T>) => void): () => void;
  state(): WatchCacheState;
  /** Ends the watch, the list in flight, the timers; resolves when nothing is left running. */
  stop(): Promise<void>;
}

/** A Kubernetes API request of the cache failed (HTTP status, Status ERROR event or network). */
const BACKOFF_MIN_MS = 1_000;
const BACKOFF_MAX_MS = 30_000;

/** Equal jitter: half of min(30s, 2s * 2^attempt) fixed, half random, so 1s..30s and never 0. */
function backoffMs(attempt: number, random: () => number): number {
  const ceiling = Math.min(BACKOFF_MAX_MS, 2 * BACKOFF_MIN_MS * 2 ** attempt);
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

interface StatusLike {
  code?: number;
  reason?: string;
  message?: string;
}

function keyOf(object: KubernetesObject): string {
  return `${object.metadata?.namespace ?? ""}/${object.metadata?.name ?? ""}`;
}

/** How one watch connection ended (failures reject instead). */
type WatchEnd = "ended" | "expired" | "interrupted";

export function createWatchCache<T extends KubernetesObject = KubernetesObject>(options: WatchCacheOptions): WatchCache<T> {
  const { kubeConfig, path, labelSelector } = options;
  if (!path.startsWith("/") || path.includes("?")) throw new TypeError(`watch cache path must be an absolute path without query: ${path}`);
  const server = kubeConfig.getCurrentCluster()?.server;
  if (server === undefined) throw new TypeError("watch cache kubeConfig has no current cluster");
  const relistIntervalMs = options.relistIntervalMs ?? 5 * 60_000;
  if (!(relistIntervalMs > 0)) throw new TypeError(`relistIntervalMs must be positive: ${relistIntervalMs}`);
  const watchTimeoutSeconds = options.watchTimeoutSeconds ?? 240;
  const random = options.random ?? Math.random;
  const now = options.now ?? (() => new Date());
  const log = options.logger.child({ path, ...(labelSelector === undefined ? {} : { labelSelector }) });
  /** Made by the first list (which always precedes the first watch): loading client-node is async. */
  let client: { k8s: ClientNode; http: IsomorphicFetchHttpLibrary; watcher: Watch } | undefined;

  const objects = new Map<string, T>();
  const listeners = new Set<(event: WatchCacheEvent<T>) => void>();
  const status: Omit<WatchCacheState, "resourceVersion"> = { synced: false, relists: 0, watchRestarts: 0 };
  let resourceVersion = "";
  let watches = 0;
  /** Consecutive failures: the backoff exponent. */
  let failures = 0;
  let needList = true;

  let running: Promise<void> | undefined;
  let started: Promise<void> | undefined;
  let resolveStarted: () => void = () => {};
  let rejectStarted: (error: Error) => void = () => {};
  let lastFailure: Error | undefined;
  let stopped = false;
  const stopping = new AbortController();
  const stoppedSignal = new Promise<void>((resolve) => stopping.signal.addEventListener("abort", () => resolve(), { once: true }));
  let listAbort: AbortController | undefined;
  /** Ends the current watch on purpose (re-list due, stop). */
  let interruptWatch: (() => void) | undefined;
  let relistTimer: NodeJS.Timeout | undefined;

  const delay = options.delay ?? ((ms: number) => sleep(ms, undefined, { signal: stopping.signal }).catch(() => {}));

  function emit(event: WatchCacheEvent<T>): void {
    for (const listener of listeners) {
      try {
        listener(event);
      } catch (error) {
        log.error({ err: error, type: event.type, key: keyOf(event.object) }, "watch cache listener failed");
      }
    }
  }

  /** Stores an object from a watch event or a list; emits ADDED/MODIFIED unless unchanged. */
  function put(object: T): void {
    const key = keyOf(object);
    const previous = objects.get(key);
    if (previous?.metadata?.resourceVersion !== undefined && previous.metadata.resourceVersion === object.metadata?.resourceVersion) return;
    objects.set(key, object);
    emit({ type: previous === undefined ? "ADDED" : "MODIFIED", object });
  }

  function remove(object: T): void {
    const key = keyOf(object);
    if (objects.delete(key)) emit({ type: "DELETED", object });
  }

  function succeeded(): void {
    failures = 0;
    delete status.lastError;
    lastFailure = undefined;
  }

  async function listOnce(): Promise<void> {
    const abort = new AbortController();
    listAbort = abort;
    try {
      if (client === undefined) {
        const k8s = await loadClientNode();
        client ??= { k8s, http: new k8s.IsomorphicFetchHttpLibrary(), watcher: new k8s.Watch(kubeConfig) };
      }
      const { k8s, http } = client;
      const request = new k8s.RequestContext(`${server}${path}`, k8s.HttpMethod.GET);
      request.setHeaderParam("Accept", "application/json");
      if (labelSelector !== undefined) request.setQueryParam("labelSelector", labelSelector);
      request.setSignal(abort.signal);
      await kubeConfig.applySecurityAuthentication(request);
      let response: ResponseContext;
      let text: string;
      try {
        response = await http.send(request).toPromise();
        text = await response.body.text();
      } catch (error) {
        throw new KubeApiError(`list ${path} failed`, {}, { cause: error });
      }
      if (response.httpStatusCode !== 200) throw listError(response.httpStatusCode, text, response.headers["retry-after"]);
      let list: { kind?: string; apiVersion?: string; metadata?: { resourceVersion?: string }; items?: T[] };
      try {
        list = JSON.parse(text) as typeof list;
      } catch (error) {
        throw new KubeApiError(`list ${path}: the response is not JSON`, { status: 200 }, { cause: error });
      }
      // kube-apiserver leaves apiVersion/kind out of the items of built-in lists; put them back.
      const kind = list.kind?.replace(/List$/, "");
      const items = (list.items ?? []).map((item) => ({ apiVersion: list.apiVersion, kind, ...item }));
      reconcile(items);
      resourceVersion = list.metadata?.resourceVersion ?? "";
    } finally {
      listAbort = undefined;
    }
    if (status.synced) {
      status.relists++;
      options.relists?.counter.inc(options.relists.labels);
    }
    options.onListed?.();
    status.synced = true;
    status.lastSyncAt = now();
    needList = false;
    succeeded();
    armRelistTimer();
    log.debug({ resourceVersion, objects: objects.size }, "watch cache listed");
    resolveStarted();
  }

  function listError(code: number, body: string, retryAfter: string | undefined): KubeApiError {
    let parsed: StatusLike = {};
    try {
      parsed = JSON.parse(body) as StatusLike;
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

  /** Replaces the contents with a fresh list: DELETED for what vanished, ADDED/MODIFIED for changes. */
  function reconcile(items: T[]): void {
    const fresh = new Set(items.map(keyOf));
    for (const [key, object] of objects) {
      if (!fresh.has(key)) {
        objects.delete(key);
        emit({ type: "DELETED", object });
      }
    }
    for (const item of items) put(item);
  }

  function armRelistTimer(): void {
    clearTimeout(relistTimer);
    relistTimer = setTimeout(() => {
      log.debug("periodic re-list due");
      needList = true;
      interruptWatch?.();
    }, relistIntervalMs);
  }

  function watchOnce(): Promise<WatchEnd> {
    if (watches++ > 0) status.watchRestarts++;
    return new Promise<WatchEnd>((resolve, reject) => {
      let interrupted = false;
      let expired = false;
      let failure: KubeApiError | undefined;
      let controller: AbortController | undefined;
      interruptWatch = () => {
        interrupted = true;
        controller?.abort();
      };
      let finished = false;
      const onEvent = (type: string, object: T & StatusLike): void => {
        if (type === "ERROR") {
          if (object.code === 410) expired = true;
          else failure = new KubeApiError(`watch ${path}: ${object.message ?? "ERROR event"}`, { status: object.code, reason: object.reason });
          return;
        }
        const rv = object.metadata?.resourceVersion;
        if (type === "ADDED" || type === "MODIFIED") put(object);
        else if (type === "DELETED") remove(object);
        if (rv !== undefined) resourceVersion = rv;
      };
      const onDone = (err: unknown): void => {
        finished = true;
        interruptWatch = undefined;
        const statusCode = (err as { statusCode?: unknown } | null)?.statusCode;
        if (interrupted) resolve("interrupted");
        else if (expired || statusCode === 410) resolve("expired");
        else if (err) {
          // eslint-disable-next-line @typescript-eslint/no-base-to-string -- whatever the client passed, as it prints
          const message = err instanceof Error ? err.message : String(err);
          reject(new KubeApiError(`watch ${path} failed: ${message}`, typeof statusCode === "number" ? { status: statusCode } : {}, { cause: err }));
        } else if (failure) reject(failure);
        else resolve("ended");
      };
      const query = { resourceVersion, allowWatchBookmarks: true, timeoutSeconds: watchTimeoutSeconds, labelSelector };
      if (client === undefined) throw new Error("watch cache: a watch before the first list"); // run() lists first
      client.watcher
        .watch(
          path,
          query,
          (type, object: T & StatusLike) => {
            // Watch swallows what its callback throws: catch here so nothing is lost silently.
            try {
              onEvent(type, object);
            } catch (error) {
              log.error({ err: error, type }, "watch cache failed to apply an event");
            }
          },
          onDone,
        )
        .then((c) => {
          controller = c;
          if (interrupted) c.abort();
          // Watch resolves once the response head arrived: not finished yet means HTTP 200.
          else if (!finished) succeeded();
        }, reject);
    });
  }

  async function run(): Promise<void> {
    while (!stopped) {
      try {
        if (needList) await listOnce();
        const end = await watchOnce();
        if (end === "expired") {
          log.info({ resourceVersion }, "watch expired (410), re-listing");
          needList = true;
        }
      } catch (error) {
        if (stopped) break;
        const failure = error instanceof Error ? error : new KubeApiError("watch cache failed", {}, { cause: error });
        const retryAfterMs = failure instanceof KubeApiError ? failure.retryAfterMs : undefined;
        const delayMs = retryAfterMs ?? backoffMs(failures, random);
        failures++;
        status.lastError = failure.message;
        lastFailure = failure;
        options.restarts?.counter.inc(options.restarts.labels);
        log.warn({ err: failure, failures, delayMs, relisting: needList }, "watch cache request failed, retrying");
        await Promise.race([delay(delayMs), stoppedSignal]);
      }
    }
  }

  return {
    start() {
      if (stopped) return Promise.reject(new KubeApiError(`watch cache for ${path} was stopped`));
      if (started === undefined) {
        started = new Promise<void>((resolve, reject) => {
          resolveStarted = resolve;
          rejectStarted = reject;
        });
        running = run();
      }
      return started;
    },
    get: (namespace, name) => objects.get(`${namespace}/${name}`),
    list: () => [...objects.values()],
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    state: () => ({ ...status, resourceVersion }),
    async stop() {
      if (stopped) return running;
      stopped = true;
      stopping.abort();
      clearTimeout(relistTimer);
      listAbort?.abort();
      interruptWatch?.();
      if (!status.synced) {
        rejectStarted(new KubeApiError(`watch cache for ${path} stopped before its first list succeeded`, {}, { cause: lastFailure }));
      }
      await running;
    },
  };
}
