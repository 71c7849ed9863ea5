import { setTimeout as sleep } from "node:timers/promises";
import type { KubeConfig, KubernetesObject } from "@kubernetes/client-node";
import { KubeApiError } from "../errors/index.js";
import type { Logger } from "../log/index.js";
import type { Counter, Labels } from "../metrics/index.js";
import { backoffDelayMs, type BackoffPolicy } from "../retry/index.js";
import { clientNodeListWatch, type KubeStatus, type ListWatchTransport } from "./list-watch.js";
import { applyWatchEvent, keyOf, replaceObjects, watchEnd, type WatchCacheEvent, type WatchEnd } from "./watch-state.js";

export type { WatchCacheEvent, WatchCacheEventType } from "./watch-state.js";

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
 *
 * Composed of: the transport (list-watch.ts, the I/O, a parameter), the bookkeeping of objects,
 * resourceVersions and watch ends (watch-state.ts, pure), the retry policy (../retry), and here
 * the loop, the timers and the listeners.
 */

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

export interface WatchCacheOptions<T extends KubernetesObject = KubernetesObject> {
  /** Lists and watches through client-node with this configuration, unless `transport` is given. */
  kubeConfig?: KubeConfig;
  /** The list and watch I/O (default: `clientNodeListWatch` of `kubeConfig`, `path`, `labelSelector`). */
  transport?: ListWatchTransport<T>;
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

/** After a failed list or watch: 1 s..2 s, doubling up to 15 s..30 s. */
const BACKOFF: BackoffPolicy = { baseMs: 2_000, capMs: 30_000 };

export function createWatchCache<T extends KubernetesObject = KubernetesObject>(options: WatchCacheOptions<T>): WatchCache<T> {
  const { path, labelSelector } = options;
  if (!path.startsWith("/") || path.includes("?")) throw new TypeError(`watch cache path must be an absolute path without query: ${path}`);
  const transport =
    options.transport ??
    (options.kubeConfig === undefined
      ? undefined
      : clientNodeListWatch<T>({ kubeConfig: options.kubeConfig, path, ...(labelSelector === undefined ? {} : { labelSelector }), ...(options.watchTimeoutSeconds === undefined ? {} : { watchTimeoutSeconds: options.watchTimeoutSeconds }) }));
  if (transport === undefined) throw new TypeError("watch cache needs a kubeConfig or a transport");
  const relistIntervalMs = options.relistIntervalMs ?? 5 * 60_000;
  if (!(relistIntervalMs > 0)) throw new TypeError(`relistIntervalMs must be positive: ${relistIntervalMs}`);
  const random = options.random ?? Math.random;
  const now = options.now ?? (() => new Date());
  const log = options.logger.child({ path, ...(labelSelector === undefined ? {} : { labelSelector }) });

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

  function emit(event: WatchCacheEvent<T> | undefined): void {
    if (event === undefined) return;
    for (const listener of listeners) {
      try {
        listener(event);
      } catch (error) {
        log.error({ err: error, type: event.type, key: keyOf(event.object) }, "watch cache listener failed");
      }
    }
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
      const list = await transport!.list(abort.signal);
      for (const event of replaceObjects(objects, list.items)) emit(event);
      resourceVersion = list.resourceVersion;
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
      const seen: { interrupted: boolean; expired: boolean; failure?: KubeApiError } = { interrupted: false, expired: false };
      let handle: { abort(): void } | undefined;
      let finished = false;
      interruptWatch = () => {
        seen.interrupted = true;
        handle?.abort();
      };
      const onEvent = (type: string, object: T & KubeStatus): void => {
        // The transport's stream swallows what its callback throws: catch here so nothing is lost silently.
        try {
          const step = applyWatchEvent(objects, type, object, path);
          if (step.kind === "expired") seen.expired = true;
          else if (step.kind === "failed") seen.failure = step.error;
          else {
            emit(step.change);
            if (step.resourceVersion !== undefined) resourceVersion = step.resourceVersion;
          }
        } catch (error) {
          log.error({ err: error, type }, "watch cache failed to apply an event");
        }
      };
      const onDone = (error: unknown): void => {
        finished = true;
        interruptWatch = undefined;
        const end = watchEnd(seen, error, path);
        if (end instanceof KubeApiError) reject(end);
        else resolve(end);
      };
      transport!.watch(resourceVersion, onEvent, onDone).then((h) => {
        handle = h;
        if (seen.interrupted) h.abort();
        // The watch resolves once the response head arrived: not finished yet means HTTP 200.
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
        failures++;
        const delayMs = retryAfterMs ?? backoffDelayMs(failures, BACKOFF, random);
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
