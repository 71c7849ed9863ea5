import type { CommitInfo, GitWriter, HistoryRewrite, LogOptions, Operation, PushEvent, SubmitResult, TreeReader } from "../gitwriter/index.js";
import { GitRemoteError, InvalidArgumentError, StoreUnavailableError } from "../errors/index.js";
import type { Logger } from "../log/index.js";
import { storeLabel } from "../repo/index.js";
import type { GitWriterInstruments } from "../metrics/index.js";
import { CompositeDraft } from "./composite-draft.js";
import { compositeCommit, compositeTree, emptyTree, parseCompositeCommit, type CompositeTree } from "./composite-tree.js";
import { createRoute } from "./store-route.js";
import { startStores, type StoreStarts } from "./store-start.js";
import { CONTROL, type CompositeParts, type Placement, type StoreName } from "./types.js";

export type { Placement };

/** One store's state for /readyz and the admin views. */
export interface StoreHealth {
  name: StoreName;
  reachable: boolean;
  trouble?: string;
}

/**
 * The control repository and the stores as one GitWriter (ADR 0027). Reads see one tree (see
 * compositeTree); an operation runs in the one repository StoreSet.route names for it, queued
 * there by StoreSet.submitTo (ADR 0036), so every commit is in exactly one repository. Each store
 * keeps its own queue, pushes and fetches: a store that does not answer fails only the operations
 * routed to it. `submit` (the GitWriter's) queues on the control repository.
 */
export interface StoreSet extends GitWriter {
  readonly names: readonly StoreName[];
  writer(name: StoreName): GitWriter;
  /** The store a cluster's instances and manifests are in by the registry (CONTROL: none of its own, or not in the registry). */
  storeOf(clusterId: string): StoreName;
  health(): StoreHealth[];
  /**
   * The repository an operation runs in, decided before it runs, by the rules its edits are
   * checked with (CompositeDraft):
   * - an instance: the store holding its record in the last fetched tips (with two, the one of its
   *   cluster, see createRouting); when none does, for a provision the store the id hashes to
   *   (storeForNewInstance: every replica sends a new id to the same store), for any other
   *   operation every store is fetched first (a "not found" needs every store current) and it
   *   runs in the control repository, where it answers from a current view;
   * - a cluster: its store (the registry's, or the one a finished move sent it to); with an
   *   instance, that instance must be there (else InstanceMoveAcrossStoresError: an instance moves
   *   between clusters of one repository only).
   */
  route(placement: Placement): Promise<StoreName>;
  /** Queues `op` on `store` (see route); it reads every repository and writes `store` only (a CompositeDraft). */
  submitTo<R>(store: StoreName, op: Operation<R>): Promise<SubmitResult<R>>;
  /** False for a store that has not answered since the broker started (its requests are answered 503; it is retried in the background). */
  available(name: StoreName): boolean;
}

export interface StoreSetOptions {
  control: GitWriter;
  /** The stores other than the control repository, by name. */
  stores: ReadonlyMap<StoreName, GitWriter>;
  /** Which store the registry (as it is now) names for a cluster: CONTROL for none; undefined for a cluster not in the registry. */
  storeOf: (clusterId: string) => StoreName | undefined;
  /** The registry's clusters as served now (where new ids go: storeForNewInstance); default none. */
  clusters?: () => readonly { id: string; schedulable: boolean }[];
  logger: Logger;
  /**
   * How long start() waits for the stores (the control repository is always waited for): a store
   * that has not answered by then is served as unavailable until it does (default 10000 ms).
   */
  startWaitMs?: number;
  /** The writers' instruments: `remoteUp` shows a store that has not answered since start. */
  metrics?: GitWriterInstruments;
}

export function createStoreSet(options: StoreSetOptions): StoreSet {
  const { control, logger } = options;
  const writers = new Map<StoreName, GitWriter>([[CONTROL, control], ...options.stores]);
  /** The stores' starts: which have not answered yet, retried in the background. */
  let starts: StoreStarts | undefined;
  const unavailable = (name: StoreName): StoreUnavailableError | undefined => starts?.unavailable(name);
  const names = [...writers.keys()];
  /** The registry's store of a cluster, a store this set has (a name it does not have: CONTROL, as the registry's guard keeps such a registry from being served). */
  const registryStore = (clusterId: string): StoreName | undefined => {
    const name = options.storeOf(clusterId);
    return name === undefined || writers.has(name) ? name : CONTROL;
  };
  const storeOf = (clusterId: string): StoreName => registryStore(clusterId) ?? CONTROL;
  const writer = (name: StoreName): GitWriter => {
    const w = writers.get(name);
    if (!w) throw new InvalidArgumentError(`no repository named ${name} (stores: ${names.join(", ")})`);
    return w;
  };
  const parts = (stores: Map<StoreName, TreeReader>, commit: string | null): CompositeParts => ({ control: stores.get(CONTROL)!, stores, storeOf: registryStore, commit });

  function snapshot(): CompositeTree {
    const stores = new Map<StoreName, TreeReader>([...writers].map(([name, w]) => [name, w.snapshot()]));
    const commits = new Map([...stores].map(([name, tree]) => [name, tree.commit]));
    return compositeTree(parts(stores, compositeCommit(commits)));
  }

  /** Fetch every store; rejects when one failed, naming every one that did (a "not found" needs every store current). */
  async function refreshAll(): Promise<void> {
    const results = await Promise.allSettled([...writers].map(([name, w]) => {
      const down = unavailable(name);
      return down ? Promise.reject(down) : w.refresh();
    }));
    const failures = results.flatMap((r, i): [StoreName, unknown][] => (r.status === "rejected" ? [[names[i]!, r.reason]] : []));
    if (failures.length > 0) throw failedStores(failures);
  }

  const route = createRoute({ snapshot, refreshAll, clusters: () => options.clusters?.() ?? [], readText: (store, path) => writer(store).snapshot().readText(path) });

  async function submitTo<R>(store: StoreName, op: Operation<R>): Promise<SubmitResult<R>> {
    const target = writer(store);
    const down = unavailable(store);
    if (down) throw down;
    return target.submit(async (draft) => {
      const stores = new Map<StoreName, TreeReader>([...writers].map(([name, w]) => [name, name === store ? draft : w.snapshot()]));
      const tree = new CompositeDraft(parts(stores, draft.commit), { name: store, draft });
      const outcome = await op(tree);
      await tree.settle();
      return outcome;
    });
  }

  return {
    names,
    writer,
    storeOf,
    snapshot,
    readerAt: (commit) => readerAt(writers, registryStore, commit),
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
 * One error for the stores a refresh could not fetch, so that a 503 names all of them rather than
 * the first in the list: a store unavailable since start (its clusters' requests are refused until
 * it answers); else, when every failure is a remote's, one GitRemoteError naming each repository.
 */
function failedStores(failures: readonly [StoreName, unknown][]): unknown {
  const errors = failures.map(([, error]) => error);
  if (errors.length === 1) return errors[0];
  const down = errors.find((e) => e instanceof StoreUnavailableError);
  if (down) return down;
  if (!errors.every((e) => e instanceof GitRemoteError)) return errors.find((e) => !(e instanceof GitRemoteError));
  const remotes = failures as [StoreName, GitRemoteError][];
  return new GitRemoteError("unreachable", remotes.map(([name, e]) => `${storeLabel(name)}: ${e.remoteMessage}`).join("; "), {
    repository: remotes.map(([name]) => storeLabel(name)).join(" and "),
    timedOut: remotes.some(([, e]) => e.timedOut),
    cause: remotes[0]![1],
  });
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
async function readerAt(writers: ReadonlyMap<StoreName, GitWriter>, storeOf: (clusterId: string) => StoreName | undefined, commit: string): Promise<TreeReader | null> {
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
