import { setTimeout as sleep } from "node:timers/promises";
import type { KubeConfig, KubernetesObject } from "@kubernetes/client-node";
import { InvalidArgumentError, KubeApiError } from "../errors/index.js";
import type { Logger } from "../log/index.js";
import type { Counter, Labels } from "../metrics/index.js";
import { clientNodeListWatch, type KubeStatus, type ListWatchTransport } from "../kube/index.js";
import { openWatch, type WatchConnection } from "./watch-connection.js";
import { createWatchProgress, type WatchCacheState } from "./watch-progress.js";
import { applyWatchEvent, keyOf, replaceObjects, type WatchCacheEvent, type WatchEnd, type WatchStep } from "./watch-state.js";

export type { WatchCacheEvent, WatchCacheEventType } from "./watch-state.js";
export type { WatchCacheState } from "./watch-progress.js";

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
 * resourceVersions and watch ends (watch-state.ts, pure), of lists, watches and failures
 * (watch-progress.ts, with the retry policy of ../retry), one watch connection
 * (watch-connection.ts), and here the loop, the timers and the listeners.
 */

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

/** The transport of `options`: the one given, else client-node's with the kubeConfig. */
function transportOf<T extends KubernetesObject>(options: WatchCacheOptions<T>): ListWatchTransport<T> {
  const { path, labelSelector, kubeConfig, watchTimeoutSeconds } = options;
  if (!path.startsWith("/") || path.includes("?")) throw new InvalidArgumentError(`watch cache path must be an absolute path without query: ${path}`);
  if (options.transport !== undefined) return options.transport;
  if (kubeConfig === undefined) throw new InvalidArgumentError("watch cache needs a kubeConfig or a transport");
  return clientNodeListWatch<T>({
    kubeConfig,
    path,
    ...(labelSelector === undefined ? {} : { labelSelector }),
    ...(watchTimeoutSeconds === undefined ? {} : { watchTimeoutSeconds }),
  });
}

/** The cache's listeners: one that throws is logged, and the others still called. */
function createListeners<T extends KubernetesObject>(log: Logger) {
  const listeners = new Set<(event: WatchCacheEvent<T>) => void>();
  return {
    add(listener: (event: WatchCacheEvent<T>) => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    emit(event: WatchCacheEvent<T> | undefined): void {
      if (event === undefined) return;
      for (const listener of listeners) {
        try {
          listener(event);
        } catch (error) {
          log.error({ err: error, type: event.type, key: keyOf(event.object) }, "watch cache listener failed");
        }
      }
    },
  };
}

/** A promise with its resolve and reject (Promise.withResolvers, which Node 20 lacks). */
function deferred(): { promise: Promise<void>; resolve: () => void; reject: (error: Error) => void } {
  let resolve: () => void = () => {};
  let reject: (error: Error) => void = () => {};
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export function createWatchCache<T extends KubernetesObject = KubernetesObject>(options: WatchCacheOptions<T>): WatchCache<T> {
  const { path, labelSelector } = options;
  const transport = transportOf(options);
  const relistIntervalMs = options.relistIntervalMs ?? 5 * 60_000;
  if (!(relistIntervalMs > 0)) throw new InvalidArgumentError(`relistIntervalMs must be positive: ${relistIntervalMs}`);
  const random = options.random ?? Math.random;
  const now = options.now ?? (() => new Date());
  const log = options.logger.child({ path, ...(labelSelector === undefined ? {} : { labelSelector }) });

  const objects = new Map<string, T>();
  const listeners = createListeners<T>(log);
  const progress = createWatchProgress();
  let running: Promise<void> | undefined;
  let started: ReturnType<typeof deferred> | undefined;
  let stopped = false;
  const stopping = new AbortController();
  const stoppedSignal = new Promise<void>((resolve) => stopping.signal.addEventListener("abort", () => resolve(), { once: true }));
  let listAbort: AbortController | undefined;
  let watch: WatchConnection | undefined;
  let relistTimer: NodeJS.Timeout | undefined;
  const delay = options.delay ?? ((ms: number) => sleep(ms, undefined, { signal: stopping.signal }).catch(() => {}));

  async function listOnce(): Promise<void> {
    listAbort = new AbortController();
    const list = await transport.list(listAbort.signal).finally(() => {
      listAbort = undefined;
    });
    for (const event of replaceObjects(objects, list.items)) listeners.emit(event);
    if (progress.listed(list.resourceVersion, now())) options.relists?.counter.inc(options.relists.labels);
    options.onListed?.();
    armRelistTimer();
    log.debug({ resourceVersion: list.resourceVersion, objects: objects.size }, "watch cache listed");
    started?.resolve();
  }

  function armRelistTimer(): void {
    clearTimeout(relistTimer);
    relistTimer = setTimeout(() => {
      log.debug("periodic re-list due");
      progress.needList = true;
      watch?.interrupt();
    }, relistIntervalMs);
  }

  function apply(type: string, object: T & KubeStatus): WatchStep<T> {
    const step = applyWatchEvent(objects, type, object, path);
    if (step.kind === "event") {
      listeners.emit(step.change);
      if (step.resourceVersion !== undefined) progress.resourceVersion = step.resourceVersion;
    }
    return step;
  }

  async function watchOnce(): Promise<WatchEnd> {
    progress.watching();
    watch = openWatch({ transport, resourceVersion: progress.resourceVersion, path, logger: log, apply, onStarted: () => progress.succeeded() });
    try {
      return await watch.ended;
    } finally {
      watch = undefined;
    }
  }

  async function retry(error: unknown): Promise<void> {
    const { failure, failures, delayMs } = progress.failed(error, random);
    options.restarts?.counter.inc(options.restarts.labels);
    log.warn({ err: failure, failures, delayMs, relisting: progress.needList }, "watch cache request failed, retrying");
    await Promise.race([delay(delayMs), stoppedSignal]);
  }

  async function run(): Promise<void> {
    while (!stopped) {
      try {
        if (progress.needList) await listOnce();
        if ((await watchOnce()) === "expired") {
          log.info({ resourceVersion: progress.resourceVersion }, "watch expired (410), re-listing");
          progress.needList = true;
        }
      } catch (error) {
        if (stopped) break;
        await retry(error);
      }
    }
  }

  return {
    start() {
      if (stopped) return Promise.reject(new KubeApiError(`watch cache for ${path} was stopped`));
      if (started === undefined) {
        started = deferred();
        running = run();
      }
      return started.promise;
    },
    get: (namespace, name) => objects.get(`${namespace}/${name}`),
    list: () => [...objects.values()],
    onChange: (listener) => listeners.add(listener),
    state: () => progress.state(),
    async stop() {
      if (stopped) return running;
      stopped = true;
      stopping.abort();
      clearTimeout(relistTimer);
      listAbort?.abort();
      watch?.interrupt();
      if (!progress.state().synced) {
        started?.reject(new KubeApiError(`watch cache for ${path} stopped before its first list succeeded`, {}, { cause: progress.lastFailure }));
      }
      await running;
    },
  };
}
