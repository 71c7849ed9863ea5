import { setTimeout as sleep } from "node:timers/promises";
import type { KubeConfig, KubernetesObject } from "@kubernetes/client-node";
import type { ClusterEntry, KubeconfigRef } from "../catalog/index.js";
import type { Logger } from "../log/index.js";
import type { Labels, StatusWatcherInstruments } from "../metrics/index.js";
import { LABEL_MANAGED_BY, MANAGED_BY } from "../repo/index.js";
import { collectionPath, createDiscovery, createKubeApi, type Discover, type ResourceInfo } from "../kube/index.js";
import { createWatchCache, type WatchCache, type WatchCacheEvent, type WatchCacheOptions } from "./kube-cache.js";
import { createOwnerIndex } from "./owner-index.js";
import { observeSync, syncCollectionPath, syncSubject, type SyncObservation } from "./sync-state.js";

/**
 * One sister cluster as the watcher sees it: watch caches of the broker's objects (label
 * `app.kubernetes.io/managed-by=gitops-broker`), of the objects the plans' `sources` name that
 * the broker did not render (`managed-by!=gitops-broker`: the two never hold the same object),
 * and of the Argo CD Application / Flux Kustomization syncing it. Kinds are watched from the
 * first time a status needs them (one discovery request per apiVersion, then list+watch); every
 * read after that is from memory.
 */

/** A kind in a namespace ("" for cluster-scoped kinds or all namespaces). */
export interface KindRef {
  apiVersion: string;
  kind: string;
  namespace: string;
}

export type Role = "owned" | "foreign";

/**
 * Why a cluster cannot answer yet, as a value (never a sentence to parse): `gathering`, the
 * watcher's own view is incomplete (connecting, the first list, a discovery, a check it is still
 * making), so an answer now would be provisional (ADR 0012); `blocked`, the cluster or the
 * registry says so (a sync object not found, a watch refused, no spec.sync, a sync or health
 * still to come). `description` is for humans: last_operation shows it.
 */
export type NotReady = { state: "gathering" | "blocked"; description: string };

export const gathering = (description: string): NotReady => ({ state: "gathering", description });
export const blocked = (description: string): NotReady => ({ state: "blocked", description });

/** A sync observation, or why there is none yet. */
export const isNotReady = (value: SyncObservation | NotReady): value is NotReady => "state" in value;

const SELECTORS: Record<Role, string> = {
  owned: `${LABEL_MANAGED_BY}=${MANAGED_BY}`,
  foreign: `${LABEL_MANAGED_BY}!=${MANAGED_BY}`,
};

/** A failed kubeconfig load or discovery is tried again after this. */
const RETRY_MS = 30_000;

export interface LiveClusterDeps {
  kubeConfigFor: (ref: KubeconfigRef | undefined, cluster: ClusterEntry) => Promise<KubeConfig>;
  logger: Logger;
  metrics?: StatusWatcherInstruments;
  delay?: (ms: number) => Promise<void>;
  random?: () => number;
  relistIntervalMs?: number;
}

export interface LiveCluster {
  readonly entry: ClusterEntry;
  /** Changes with every change seen (objects, sync object, watches starting); never repeats. */
  version(): number;
  /** Counts as a change (e.g. a record read finished). */
  touch(): void;
  onChange(listener: () => void): () => void;
  /** Why the cluster cannot be read now (kubeconfig, connection), or undefined. */
  problem(): string | undefined;
  /** The sync object's state, or why it is not known. */
  sync(): SyncObservation | NotReady;
  /** Watches these kinds from now on; says why they cannot all be read yet, or undefined. */
  watch(role: Role, kinds: KindRef[]): NotReady | undefined;
  /** A live object: the broker's, else a foreign one. Undefined when absent. */
  get(kind: KindRef, name: string): KubernetesObject | undefined;
  /** The broker's live objects carrying this instance (or binding) key. */
  ownedBy(label: "instance" | "binding", key: string): KubernetesObject[];
  stop(): Promise<void>;
}

export interface KindWatch {
  role: Role;
  kind: KindRef;
  info?: ResourceInfo;
  cache?: WatchCache;
  discovering: boolean;
  failure?: { message: string; at: number };
}

interface Connection {
  discover: Discover;
  kubeConfig: KubeConfig;
  syncCache?: WatchCache;
}

/** Versions are unique across clusters and restarts: a memo of a replaced cluster never matches. */
let lastVersion = 0;

const kindKey = (role: Role, k: KindRef) => `${role} ${k.apiVersion} ${k.kind} ${k.namespace}`;
const describeKind = (k: KindRef) => `${k.apiVersion} ${k.kind}${k.namespace ? ` in ${k.namespace}` : ""}`;

/**
 * Why a kind's objects cannot be read yet: its discovery or watch failed (blocked), it is being
 * discovered or listed for the first time (gathering); undefined once its cache holds them.
 */
export function kindWatchProblem(w: KindWatch): NotReady | undefined {
  if (w.failure) return blocked(`cannot watch ${describeKind(w.kind)}: ${w.failure.message}`);
  if (w.discovering || !w.cache) return gathering(`discovering ${describeKind(w.kind)}`);
  const state = w.cache.state();
  if (!state.synced) return gathering(`listing ${describeKind(w.kind)}${state.lastError ? `: ${state.lastError}` : ""}`);
  return undefined;
}

/**
 * The options of a cluster's watch caches: its logger, the deps' delay, jitter and re-list period,
 * and the metrics (cluster_up: 1 after a list succeeded, 0 after a list or watch failed, until the
 * next list).
 */
function cacheOptionsFor(deps: LiveClusterDeps, log: Logger, clusterId: string) {
  const metrics = deps.metrics;
  const labels = { cluster: clusterId };
  const restartsDown = {
    inc(l?: Labels, value?: number): void {
      metrics?.watchRestarts.inc(l, value);
      metrics?.clusterUp.set(0, labels);
    },
  };
  return (kubeConfig: KubeConfig, path: string, labelSelector?: string): WatchCacheOptions => ({
    kubeConfig,
    path,
    logger: log,
    ...(labelSelector === undefined ? {} : { labelSelector }),
    ...(deps.delay ? { delay: deps.delay } : {}),
    ...(metrics
      ? {
          restarts: { counter: restartsDown, labels },
          relists: { counter: metrics.relists, labels },
          onListed: () => metrics.clusterUp.set(1, labels),
        }
      : {}),
    ...(deps.random ? { random: deps.random } : {}),
    ...(deps.relistIntervalMs ? { relistIntervalMs: deps.relistIntervalMs } : {}),
  });
}

interface Loaded {
  discover: Discover;
  kubeConfig: KubeConfig;
  /** The sync object's cluster: `kubeConfig` unless the registry names another. */
  syncKubeConfig: KubeConfig;
}

/**
 * Loads the cluster's kubeconfig (and its sync object's, when that lives elsewhere) and discovery,
 * and hands them to `use`; a failure of either is logged, told to `failed` and tried again after
 * RETRY_MS, until `signal` aborts.
 */
async function connect(entry: ClusterEntry, deps: LiveClusterDeps, log: Logger, signal: AbortSignal, use: (loaded: Loaded) => void, failed: (message: string) => void): Promise<void> {
  while (!signal.aborted) {
    try {
      const kubeConfig = await deps.kubeConfigFor(entry.kubeconfig, entry);
      const syncKubeConfig = entry.sync?.kubeconfig ? await deps.kubeConfigFor(entry.sync.kubeconfig, entry) : kubeConfig;
      const discover = createDiscovery(createKubeApi({ kubeConfig }));
      if (!signal.aborted) use({ discover, kubeConfig, syncKubeConfig });
      return;
    } catch (error) {
      log.warn({ err: error }, "cannot load the cluster's kubeconfig, retrying");
      failed(error instanceof Error ? error.message : String(error));
      await sleep(RETRY_MS, undefined, { signal }).catch(() => undefined);
    }
  }
}

/**
 * The state of the cluster's sync object as its cache holds it (undefined: not connected yet), or
 * why it is not known; observed anew only when the object changed.
 */
export function syncReader(entry: ClusterEntry): (cache: Pick<WatchCache, "state" | "get"> | undefined) => SyncObservation | NotReady {
  let last: { object: KubernetesObject; observation: SyncObservation } | undefined;
  return (cache) => {
    const ref = entry.sync;
    if (!ref) return blocked(`cluster ${entry.id} has no spec.sync: live status needs the Argo CD Application or Flux Kustomization that syncs it`);
    if (!cache) return gathering(`connecting to cluster ${entry.id}`);
    if (!cache.state().synced) return gathering(`listing the ${syncSubject(ref)}`);
    const object = cache.get(ref.namespace, ref.name);
    if (!object) return blocked(`${syncSubject(ref)} not found in namespace ${ref.namespace}`);
    if (last?.object !== object) last = { object, observation: observeSync(ref, object, last?.observation) };
    return last.observation;
  };
}

export function startLiveCluster(entry: ClusterEntry, deps: LiveClusterDeps): LiveCluster {
  const log = deps.logger.child({ cluster: entry.id });
  const stopping = new AbortController();
  const watches = new Map<string, KindWatch>();
  const listeners = new Set<() => void>();
  const owners = createOwnerIndex();
  const cacheOptions = cacheOptionsFor(deps, log, entry.id);
  let version = ++lastVersion;
  let connection: Connection | undefined;
  let connectFailure: string | undefined;
  const readSync = syncReader(entry);

  function touch(): void {
    version = ++lastVersion;
    for (const listener of listeners) listener();
  }

  function startCache(cache: WatchCache, onEvent?: (event: WatchCacheEvent) => void): void {
    cache.onChange((event) => {
      onEvent?.(event);
      touch();
    });
    // A failing list is retried by the cache and shown in its state(); stop() rejects start().
    cache.start().then(touch, () => undefined);
  }

  function startWatch(w: KindWatch, c: Connection): void {
    w.discovering = true;
    c.discover(w.kind.apiVersion, w.kind.kind)
      .then((info) => {
        if (stopping.signal.aborted) return;
        w.info = info;
        delete w.failure;
        w.cache = createWatchCache(cacheOptions(c.kubeConfig, collectionPath(w.kind.apiVersion, info, w.kind.namespace), SELECTORS[w.role]));
        const key = kindKey(w.role, w.kind);
        startCache(w.cache, w.role === "owned" ? (event) => owners.apply(key, event) : undefined);
      })
      .catch((error: unknown) => {
        w.failure = { message: error instanceof Error ? error.message : String(error), at: performance.now() };
        log.warn({ err: error, apiVersion: w.kind.apiVersion, kind: w.kind.kind }, "cannot watch a kind");
      })
      .finally(() => {
        w.discovering = false;
        touch();
      });
  }

  function use({ discover, kubeConfig, syncKubeConfig }: Loaded): void {
    const c: Connection = { discover, kubeConfig };
    if (entry.sync) {
      c.syncCache = createWatchCache(cacheOptions(syncKubeConfig, syncCollectionPath(entry.sync)));
      startCache(c.syncCache);
    }
    connection = c;
    connectFailure = undefined;
    for (const w of watches.values()) startWatch(w, c);
    log.info({ sync: entry.sync?.name }, "watching cluster");
    touch();
  }
  const connecting = connect(entry, deps, log, stopping.signal, use, (failure) => {
    connectFailure = failure;
    touch();
  });

  /** kindWatchProblem, trying a failed discovery or watch again once RETRY_MS passed. */
  function watchProblem(w: KindWatch, c: Connection): NotReady | undefined {
    if (w.failure && !w.discovering && performance.now() - w.failure.at > RETRY_MS) startWatch(w, c);
    return kindWatchProblem(w);
  }

  function findCache(role: Role, kind: KindRef, name: string): KubernetesObject | undefined {
    const w = watches.get(kindKey(role, kind));
    if (!w?.cache || !w.info) return undefined;
    return w.cache.get(w.info.namespaced ? kind.namespace : "", name);
  }

  const caches = () => [connection?.syncCache, ...[...watches.values()].map((w) => w.cache)];

  return {
    entry,
    version: () => version,
    touch,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    problem() {
      if (connectFailure !== undefined) return `cluster ${entry.id} cannot be reached: ${connectFailure}`;
      const failing = caches().find((c) => c?.state().lastError !== undefined);
      return failing ? `cluster ${entry.id} cannot be reached: ${failing.state().lastError}` : undefined;
    },
    sync: () => readSync(connection?.syncCache),
    watch(role, kinds) {
      let problem: NotReady | undefined;
      for (const kind of kinds) {
        const key = kindKey(role, kind);
        let w = watches.get(key);
        if (!w) {
          w = { role, kind, discovering: false };
          watches.set(key, w);
          if (connection) startWatch(w, connection);
        }
        problem ??= connection ? watchProblem(w, connection) : gathering(`connecting to cluster ${entry.id}`);
      }
      return problem;
    },
    get: (kind, name) => findCache("owned", kind, name) ?? findCache("foreign", kind, name),
    ownedBy: (label, key) => owners.ownedBy(label, key),
    async stop() {
      stopping.abort();
      await connecting;
      await Promise.all(caches().flatMap((c) => (c ? [c.stop()] : [])));
      listeners.clear();
    },
  };
}
