import type { CommitInfo, GitWriter, HistoryRewrite, LogOptions, Operation, PushEvent, SubmitResult, TreeReader } from "../gitwriter/index.js";
import { ServiceUnavailableError } from "../errors/index.js";
import type { Logger } from "../log/index.js";
import type { GitWriterInstruments } from "../metrics/index.js";
import { instanceRecordDir, storeLabel } from "../repo/index.js";
import { compositeCommit, compositeTree, emptyTree, parseCompositeCommit, settleWrites, type CompositeTree } from "./composite-tree.js";
import { storeForNewInstance } from "./store-choice.js";
import { startStores, type StoreStarts } from "./store-start.js";
import { CONTROL, StoreMismatchError, StoreUnavailableError, type StoreName } from "./types.js";

/** One store's state for /readyz and the admin views. */
export interface StoreHealth {
  name: StoreName;
  reachable: boolean;
  trouble?: string;
}

/**
 * What decides the repository of an operation before it runs (see StoreSet.route): an operation
 * on an existing instance (the store holding its record), or a provision of an id that may be new
 * (that store, else the store the id hashes to).
 */
export type Placement = { instance: string; provision?: boolean };

/**
 * The control repository and the stores as one GitWriter (ADR 0027). Reads see one tree (see
 * compositeTree); an operation is queued on the one store it is routed to (`submit`'s `route`,
 * else the control repository) and re-run on the store an edit of it belongs to, so every
 * commit is in exactly one repository. Each store keeps its own queue, pushes and fetches: a
 * store that does not answer fails only the operations routed to it.
 */
export interface StoreSet extends GitWriter {
  readonly names: readonly StoreName[];
  writer(name: StoreName): GitWriter;
  /** The store a cluster's instances and manifests are in (CONTROL: none of its own). */
  storeOf(clusterId: string): StoreName;
  /**
   * The store holding an instance's record, from the last fetched tips. `confirm`: when none
   * holds it, fetch every store and look again (a store that cannot be fetched fails the call).
   */
  locate(instanceId: string, confirm?: "all"): Promise<StoreName | undefined>;
  health(): StoreHealth[];
  /**
   * The repository an operation runs in, decided before it runs: the store holding the instance's
   * record in the last fetched tips; when none does, for a provision the store the id hashes to
   * (storeForNewInstance: every replica sends a new id to the same store), for any other operation
   * every store is fetched first (a "not found" needs every store current) and it runs in the
   * control repository, where it answers from a current view.
   */
  route(placement: Placement): Promise<StoreName>;
  /** Queues `op` on `store` (see route); it reads every repository and writes `store` only. */
  submitTo<R>(store: StoreName, op: Operation<R>): Promise<SubmitResult<R>>;
  /** False for a store that has not answered since the broker started (its requests are answered 503; it is retried in the background). */
  available(name: StoreName): boolean;
}

export interface StoreSetOptions {
  control: GitWriter;
  /** The stores other than the control repository, by name. */
  stores: ReadonlyMap<StoreName, GitWriter>;
  /** Which store a cluster belongs to (read from the registry as it is now); unknown clusters: CONTROL. */
  storeOf: (clusterId: string) => StoreName;
  /** The registry's clusters as served now (where new ids go: storeForNewInstance); default none. */
  clusters?: () => readonly { id: string; schedulable: boolean }[];
  logger: Logger;
  /** Times an operation is moved to the store it edited before it fails (default 3). */
  maxReroutes?: number;
  /**
   * How long start() waits for the stores (the control repository is always waited for): a store
   * that has not answered by then is served as unavailable until it does (default 10000 ms).
   */
  startWaitMs?: number;
  /** The writers' instruments: `remoteUp` shows a store that has not answered since start. */
  metrics?: GitWriterInstruments;
}

export function createStoreSet(options: StoreSetOptions): StoreSet {
  const { control, logger, maxReroutes = 3 } = options;
  const writers = new Map<StoreName, GitWriter>([[CONTROL, control], ...options.stores]);
  /** The stores' starts: which have not answered yet, retried in the background. */
  let starts: StoreStarts | undefined;
  const unavailable = (name: StoreName): StoreUnavailableError | undefined => starts?.unavailable(name);
  const names = [...writers.keys()];
  const storeOf = (clusterId: string): StoreName => {
    const name = options.storeOf(clusterId);
    return writers.has(name) ? name : CONTROL;
  };
  const writer = (name: StoreName): GitWriter => {
    const w = writers.get(name);
    if (!w) throw new StoreMismatchError("", name, CONTROL);
    return w;
  };

  function snapshot(): CompositeTree {
    const stores = new Map<StoreName, TreeReader>([...writers].map(([name, w]) => [name, w.snapshot()]));
    const commits = new Map([...stores].map(([name, tree]) => [name, tree.commit]));
    return compositeTree({ control: stores.get(CONTROL)!, stores, storeOf, commit: compositeCommit(commits) });
  }

  const holder = (instanceId: string): Promise<StoreName | undefined> => snapshot().storeOfInstance(instanceRecordDir(instanceId));

  /** Fetch every store; the first failure rejects (a "not found" needs every store current). */
  async function refreshAll(): Promise<void> {
    const results = await Promise.allSettled([...writers].map(([name, w]) => {
      const down = unavailable(name);
      return down ? Promise.reject(down) : w.refresh();
    }));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
  }

  async function route(placement: Placement): Promise<StoreName> {
    const found = await holder(placement.instance);
    if (found !== undefined) return found;
    if (placement.provision) return storeForNewInstance(placement.instance, options.clusters?.() ?? [], storeOf) ?? CONTROL;
    await refreshAll();
    return (await holder(placement.instance)) ?? CONTROL;
  }

  async function submitTo<R>(home: StoreName, op: Operation<R>): Promise<SubmitResult<R>> {
    let store = home;
    const tried = new Set<StoreName>();
    for (let attempt = 0; ; attempt++) {
      tried.add(store);
      const target = writer(store);
      const down = unavailable(store);
      if (down) throw down;
      try {
        return await target.submit(async (draft) => {
          const stores = new Map<StoreName, TreeReader>([...writers].map(([name, w]) => [name, name === store ? draft : w.snapshot()]));
          const tree = compositeTree({ control: stores.get(CONTROL)!, stores, storeOf, commit: draft.commit }, { name: store, draft });
          const outcome = await op(tree);
          await settleWrites(tree);
          return outcome;
        });
      } catch (error) {
        const owner = rerouteTo(error, store, tried, attempt >= maxReroutes ? maxReroutes : undefined);
        logger.debug({ from: store, to: owner, path: (error as StoreMismatchError).path }, "operation belongs to another store: queued there");
        store = owner;
      }
    }
  }

  return {
    names,
    writer,
    storeOf,
    snapshot,
    readerAt: (commit) => readerAt(writers, storeOf, commit),
    log: (from, paths, logOptions) => log(writers, from, paths, logOptions),
    submit: (op) => submitTo(CONTROL, op),
    submitTo,
    route,
    async start() {
      // The control repository must answer: it holds the catalog and the registry.
      await control.start();
      starts = startStores(options.stores, { logger, waitMs: options.startWaitMs ?? 10_000, ...(options.metrics ? { metrics: options.metrics } : {}) });
      await starts.started;
    },
    available: (name) => unavailable(name) === undefined,
    async refresh() {
      await refreshAll();
      return control.snapshot().commit;
    },
    async locate(instanceId, confirm) {
      const found = await holder(instanceId);
      if (found !== undefined || confirm === undefined) return found;
      await refreshAll();
      return holder(instanceId);
    },
    onTip: (listener) => control.onTip(listener),
    onPushed(listener: (event: PushEvent) => void) {
      const stops = [...writers.values()].map((w) => w.onPushed(listener));
      return () => stops.forEach((stop) => stop());
    },
    get remoteReachable() {
      return control.remoteReachable;
    },
    get remoteTrouble() {
      return control.remoteTrouble;
    },
    get historyRewrite(): HistoryRewrite | undefined {
      for (const w of writers.values()) if (w.historyRewrite) return w.historyRewrite;
      return undefined;
    },
    health: () => health(writers, unavailable),
    async close() {
      starts?.stop();
      await Promise.all([...writers.values()].map((w) => w.close()));
    },
  };
}

/**
 * Where an operation that failed with `error` on `store` goes next: the store it edited (a
 * StoreMismatchError), unless it went there already (it spans two repositories) or moved
 * `maxReroutes` times already; any other error is rethrown.
 */
function rerouteTo(error: unknown, store: StoreName, tried: ReadonlySet<StoreName>, maxReroutes: number | undefined): StoreName {
  if (!(error instanceof StoreMismatchError) || error.owner === store) throw error;
  if (tried.has(error.owner)) {
    // Each run of it edits the other repository: it spans two (an instance moved across stores),
    // or capacity changed under a provision twice; a retry tells which.
    throw new ServiceUnavailableError(
      `the operation edits ${error.path} of ${storeLabel(error.owner)} and paths of ${storeLabel(store)}: one operation is one commit in one repository; move the cluster (gitops-broker move-cluster) instead`,
      { cause: error },
    );
  }
  if (maxReroutes !== undefined) {
    throw new ServiceUnavailableError(`the operation moved between stores ${maxReroutes + 1} times (${error.message}); try again`, { cause: error });
  }
  return error.owner;
}

/** Each store's state: unavailable since start, or how its last contact with its remote went. */
function health(writers: ReadonlyMap<StoreName, GitWriter>, unavailable: (name: StoreName) => Error | undefined): StoreHealth[] {
  return [...writers].map(([name, w]) => {
    const down = unavailable(name);
    if (down) return { name, reachable: false, trouble: down.message };
    return { name, reachable: w.remoteReachable, ...(w.remoteReachable ? {} : { trouble: w.remoteTrouble ?? "last contact with the Git remote failed" }) };
  });
}

/** A reader at a commit of one repository, or at a compositeCommit of several (a composite tree). */
async function readerAt(writers: ReadonlyMap<StoreName, GitWriter>, storeOf: (clusterId: string) => StoreName, commit: string): Promise<TreeReader | null> {
  const parts = parseCompositeCommit(commit);
  if (!parts) {
    for (const w of writers.values()) {
      const reader = await w.readerAt(commit);
      if (reader) return reader;
    }
    return null;
  }
  const stores = new Map<StoreName, TreeReader>();
  for (const [name, at] of parts) {
    const w = writers.get(name);
    if (!w) return null;
    const reader = at === null ? emptyTree : await w.readerAt(at);
    if (!reader) return null;
    stores.set(name, reader);
  }
  for (const name of writers.keys()) if (!stores.has(name)) stores.set(name, emptyTree);
  return compositeTree({ control: stores.get(CONTROL)!, stores, storeOf, commit });
}

/** `git log` in the repository holding `from`; from a compositeCommit, every store's, newest first by author date. */
async function log(writers: ReadonlyMap<StoreName, GitWriter>, from: string, paths: readonly string[], options: LogOptions = {}): Promise<CommitInfo[]> {
  const parts = parseCompositeCommit(from);
  if (!parts) {
    for (const w of writers.values()) if (await w.readerAt(from)) return w.log(from, paths, options);
    return writers.get(CONTROL)!.log(from, paths, options);
  }
  const logs = await Promise.all([...parts].flatMap(([name, at]) => (at === null || !writers.has(name) ? [] : [writers.get(name)!.log(at, paths, options)])));
  const merged = logs.flat().sort((a, b) => Date.parse(b.authorDate) - Date.parse(a.authorDate));
  return options.max === undefined ? merged : merged.slice(0, options.max);
}
