import { performance } from "node:perf_hooks";
import { GitRemoteError, GitRepositoryError, InvalidArgumentError } from "../errors/index.js";
import type { GitWriterInstruments } from "../metrics/index.js";
import { backoffDelayMs, type BackoffPolicy } from "../retry/index.js";
import { applyOperation } from "./apply-operation.js";
import { CommitQueue, type Entry } from "./commit-queue.js";
import { FetchWaiters } from "./fetch-waiters.js";
import { HistoryWatch } from "./history-watch.js";
import { Lifecycle } from "./lifecycle.js";
import { Listeners } from "./listeners.js";
import { PushDoubts } from "./push-doubts.js";
import { PushWindow } from "./push-window.js";
import { Reachability } from "./reachability.js";
import { Repacker } from "./repacker.js";
import { WorkLoop } from "./work-loop.js";
import { EMPTY_TIP, type ObjectStore, type Tip } from "./object-store.js";
import type { Remote } from "./remote.js";
import { TreeView } from "./tree-view.js";
import type { CommitInfo, GitAuthor, LogOptions, GitWriter, HistoryRewrite, Operation, PushEvent, SubmitResult, TreeReader } from "./types.js";

export { pushSpacingMs } from "./push-window.js";

/** The logger the writer needs (a pino logger fits). */
export interface GitWriterLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface WriterDeps {
  store: ObjectStore;
  remote: Remote;
  branch: string;
  author: GitAuthor;
  logger: GitWriterLogger;
  now: () => Date;
  delay: (ms: number) => Promise<void>;
  remoteTimeoutMs: number;
  /** A fetch or push without an answer for this long makes the remote count as not answering. */
  activityTimeoutMs: number;
  maxPushAttempts: number;
  metrics: GitWriterInstruments;
  /** The store this writer writes (the `store` label of its metrics). */
  storeName: string;
  /** The repository's name in errors and messages ("the control repository", "store eu"). */
  repository: string;
  /**
   * The push window: a push starts at least this long after the start of the last push the
   * remote answered (accepted, or refused by a hook); 0: no window (see awaitWindow).
   */
  minPushIntervalMs: number;
  /**
   * Whether an operation's error is an answer about the repository's content that must come from
   * a current view: when the writer's view of the remote predates the request, it fetches and
   * re-runs the operation before rejecting it (ADR 0012). Default: never.
   */
  confirmRejection?: (error: unknown) => boolean;
  /** No background repack starts before this settles, nor after close() began (see Repacker). */
  holdRepacksUntil?: PromiseLike<unknown>;
}

/** After a rejected push: someone else just pushed, so retry soon. */
const REJECTED_BACKOFF: BackoffPolicy = { baseMs: 25, capMs: 1_000 };
/** While the remote is unreachable. */
const UNREACHABLE_BACKOFF: BackoffPolicy = { baseMs: 250, capMs: 5_000 };

/**
 * One queue per writer, drained by one worker loop, as a two-stage pipeline: queued operations run
 * in order on top of the chain (one commit each, objects in memory), and the chain's tip is pushed
 * as soon as it holds a commit. Operations that arrive while a push is in flight run meanwhile and
 * go out together in the next push; each is acknowledged when the push carrying its commit is
 * accepted. On a rejected push the chain is dropped and every unsettled operation re-runs on the
 * new remote tip.
 *
 * With a push window (minPushIntervalMs > 0), the chain waits for the window to open before it
 * is pushed, taking on what arrives meanwhile: at most one push per window, acknowledgements
 * still only after the push (see awaitWindow).
 *
 * The local branch ref only ever moves to a tip the remote holds (after a push or a fetch);
 * unpushed commits live on the chain only, so nothing unpushed is ever visible and a crash loses
 * nothing that was acknowledged.
 *
 * The writer is the composition: the flow of start, step (build, window, push), the push's
 * failures and the fetches, calling pieces that each keep their own state, with their own tests
 * (ADR 0005's addendum "the writer as pieces"): Lifecycle (new, open, closing, closed; the start
 * under way), CommitQueue (the queue and the chain; applyOperation runs one operation on a draft),
 * WorkLoop (the worker and its wake-up), FetchWaiters (reads and refusals waiting for a fetch),
 * Reachability, PushWindow, PushDoubts, HistoryWatch, Repacker, and Listeners (onTip, onPushed);
 * the remote's commands with their deadlines are Remote's. Its one field of its own that changes
 * is `remoteTip`, the remote tip it knows: every piece is handed it, and adopt() moves it in the
 * order the pieces need (pushes in doubt settled against the old one first, then the listeners,
 * then the local ref).
 */
export class Writer implements GitWriter {
  private readonly deps: WriterDeps;
  private readonly branchRef: string;
  private readonly trackingRef: string;
  /** The `store` label of every metric update. */
  private readonly labels: { store: string };
  /** The remote tip known: what snapshot() reads and the chain is built on; only adopt() (and the start) moves it. */
  private remoteTip: Tip = EMPTY_TIP;
  // The pieces, each with its own state.
  private readonly life = new Lifecycle();
  private readonly queue: CommitQueue;
  private readonly loop: WorkLoop;
  /** Reads and refusals to confirm (ADR 0012) waiting for the next fetch. */
  private readonly fetchWaiters: FetchWaiters<Entry>;
  private readonly reach: Reachability;
  private readonly window: PushWindow;
  private readonly inDoubtPushes = new PushDoubts<Entry, { result: unknown; commit: string | null }>();
  private readonly history: HistoryWatch;
  private readonly repacker: Repacker;
  private readonly tipListeners: Listeners<[tip: string | null, previous: string | null]>;
  private readonly pushListeners: Listeners<[event: PushEvent]>;

  constructor(deps: WriterDeps) {
    this.deps = deps;
    this.labels = { store: deps.storeName };
    const { logger, metrics } = deps;
    this.queue = new CommitQueue({
      apply: (op, base) => applyOperation(deps, op, base),
      refused: (entry, error) => this.refused(entry, error),
      queued: metrics.queuedOperations,
      labels: this.labels,
    });
    this.loop = new WorkLoop({ hasWork: () => this.hasWork(), turn: () => this.turn(), failed: (error) => this.failed(error) });
    this.fetchWaiters = new FetchWaiters(deps.remoteTimeoutMs);
    this.reach = new Reachability({ logger, metrics, labels: this.labels, activityTimeoutMs: deps.activityTimeoutMs, waitingMs: () => deps.remote.waitingMs });
    this.window = new PushWindow(deps.minPushIntervalMs);
    this.history = new HistoryWatch({ lostCommits: (a, b, max) => deps.remote.lostCommits(a, b, max), logger, metrics, labels: this.labels, now: deps.now });
    this.repacker = new Repacker({ store: deps.store, logger, ...(deps.holdRepacksUntil ? { holdUntil: deps.holdRepacksUntil } : {}) });
    this.tipListeners = new Listeners(logger, "onTip");
    this.pushListeners = new Listeners(logger, "onPushed");
    this.branchRef = `refs/heads/${deps.branch}`;
    this.trackingRef = `refs/remotes/origin/${deps.branch}`;
  }

  get remoteReachable(): boolean {
    return this.remoteTrouble === undefined;
  }

  get historyRewrite(): HistoryRewrite | undefined {
    return this.history.rewrite;
  }

  get remoteTrouble(): string | undefined {
    return this.reach.trouble;
  }

  start(): Promise<void> {
    // A failed start (remote unreachable) may be retried.
    return this.life.start(() => this.doStart());
  }

  submit<R>(op: Operation<R>): Promise<SubmitResult<R>> {
    if (this.life.state !== "open") return Promise.reject(this.life.notOpenError());
    if (typeof op !== "function") return Promise.reject(new InvalidArgumentError("an operation must be a function"));
    return new Promise<SubmitResult<R>>((resolve, reject) => {
      this.queue.add({
        op,
        queuedAt: performance.now(),
        resolve: resolve as (value: SubmitResult<unknown>) => void,
        reject,
      });
      this.loop.wake();
      this.loop.kick();
    });
  }

  snapshot(): TreeReader {
    return new TreeView(this.deps.store, this.remoteTip);
  }

  async readerAt(commit: string): Promise<TreeReader | null> {
    if (!/^[0-9a-f]{40}$/.test(commit)) return null;
    const tree = await this.deps.store.commitTreeIfPresent(commit);
    return tree === null ? null : new TreeView(this.deps.store, { commit, tree });
  }

  /**
   * Resolves with the fetched tip, or rejects at the latest `remoteTimeoutMs` from now (a push
   * in flight or a remote that does not answer: unreachable), so a read waits no longer than a
   * write for the remote.
   */
  refresh(): Promise<string | null> {
    const { state } = this.life;
    if (state !== "open" && state !== "closing") return Promise.reject(this.life.notOpenError());
    const read = this.fetchWaiters.read(() => this.timeoutError("a read"));
    // A chain waiting for its push window lets the fetch go first.
    this.loop.wake();
    this.loop.kick();
    return read;
  }

  onTip(listener: (tip: string | null, previous: string | null) => void): () => void {
    return this.tipListeners.add(listener);
  }

  log(from: string, paths: readonly string[], options: LogOptions = {}): Promise<CommitInfo[]> {
    if (!/^[0-9a-f]{40}$/.test(from)) return Promise.reject(new InvalidArgumentError(`log needs a commit id, got ${JSON.stringify(from)}`));
    if (options.max !== undefined && !(Number.isInteger(options.max) && options.max > 0)) {
      return Promise.reject(new InvalidArgumentError(`log: max must be a positive integer, got ${options.max}`));
    }
    return this.deps.store.log(from, paths, options);
  }

  onPushed(listener: (event: PushEvent) => void): () => void {
    return this.pushListeners.add(listener);
  }

  async close(): Promise<void> {
    const drained = await this.life.close(async () => {
      // A chain waiting for its push window is pushed at once.
      this.loop.wake();
      await this.loop.idle();
      await this.repacker.finish();
      this.deps.store.close();
    });
    if (drained) this.deps.logger.info({ tip: this.remoteTip.commit }, "git writer closed");
  }

  private async doStart(): Promise<void> {
    const { remote, store, logger } = this.deps;
    await remote.init();
    // What the repository holds already is not news to the fetch below (see fetchTip).
    store.refreshPacks();
    this.repacker.atStart();
    // The local ref only ever holds a tip the remote had: if the new tip does not descend from
    // it, the branch was rewritten while no broker watched.
    const known = await store.resolveRef(this.branchRef).catch(() => null);
    const tip = await this.fetchTip();
    if (known !== null && tip.commit !== null && known !== tip.commit) await this.history.check(known, tip.commit);
    // Unconditionally: the ref may hold a commit a crashed process never got acknowledged.
    await store.setRef(this.branchRef, tip.commit);
    this.remoteTip = tip;
    this.queue.reset(tip);
    // close() may have been called while starting.
    this.life.opened();
    logger.info({ tip: tip.commit }, "git writer started");
    if (tip.commit !== null) this.tipListeners.emit(tip.commit, null);
  }

  /** `what` got no answer from the remote within its bound. */
  private timeoutError(what: string): GitRemoteError {
    const seconds = this.deps.remoteTimeoutMs / 1000;
    const said = this.reach.lastSaid();
    return new GitRemoteError("unreachable", `no answer from the remote within ${seconds} s (git.pushTimeoutSeconds) for ${what}${said}`, {
      repository: this.deps.repository,
      timedOut: true,
    });
  }

  /** When an entry is answered at the latest, unless it is in a push in doubt: its wait for the remote counts from its arrival, or from the opening of the window it waited for. */
  private deadline(entry: Entry): number {
    return Math.max(entry.queuedAt, this.window.openedAt) + this.deps.remoteTimeoutMs;
  }

  private inDoubt(entry: Entry): boolean {
    return this.inDoubtPushes.has(entry);
  }

  /** The first deadline of `entries` outside any push in doubt (such a push has no deadline of its own); undefined when none has one. */
  private firstDeadline(entries: readonly Entry[]): number | undefined {
    let first: number | undefined;
    for (const entry of entries) if (!this.inDoubt(entry)) first = Math.min(first ?? Number.POSITIVE_INFINITY, this.deadline(entry));
    return first;
  }

  private hasWork(): boolean {
    return this.queue.length > 0 || this.fetchWaiters.waiting;
  }

  /** One turn of the work loop. Between batches: a refresh waits for the push in flight, never for all queued work. */
  private turn(): Promise<void> {
    return this.fetchWaiters.waiting ? this.serveRefresh() : this.step();
  }

  /** Not a remote failure (those are handled in step): the local repository failed us. Whatever is queued cannot be trusted to commit; reject it rather than loop. */
  private failed(error: unknown): void {
    this.deps.logger.error({ err: error }, "git writer failed");
    this.rejectEntries([...this.queue.entries], error);
  }

  /**
   * Runs what is queued onto the chain and pushes it. Operations that arrive during the push run
   * onto the chain meanwhile (the CPU works while the remote does), and go out with the next push.
   */
  private async step(): Promise<void> {
    // Push as soon as one operation is on the chain: the others run during that push, and what
    // ran during a push goes out with the next. Building everything first would leave the remote
    // idle while the CPU works, then the CPU idle while the remote works.
    const { queue } = this;
    if (queue.built === 0 || queue.base.commit !== this.remoteTip.commit) {
      await queue.build(this.remoteTip, () => queue.built > 0);
    }
    // Paced: the chain waits for the window, taking on arrivals; a fetch to serve comes first.
    if (this.deps.minPushIntervalMs > 0 && queue.tip.commit !== this.remoteTip.commit && !(await this.awaitWindow())) return;
    // What ran out of time while it ran or waited is answered now, never pushed.
    this.expire(queue.entries, performance.now());
    const batch = queue.batch();
    if (batch.length === 0) return;
    const tip = queue.tip;
    const before = this.remoteTip.commit;
    const pushed = tip.commit !== before;
    if (pushed && !(await this.pushBatch(tip, batch))) return;
    // Whatever ran on top of the pushed tip stays on the chain, now based on that tip.
    queue.pushed(batch.length, tip);
    await this.adopt(tip);
    if (pushed) this.notifyPushed(before, tip.commit!, batch);
    const paced = this.deps.minPushIntervalMs > 0;
    for (const entry of batch) {
      if (paced) this.deps.metrics.pushWindowWaitSeconds.observe((entry.windowWaitMs ?? 0) / 1000, this.labels);
      entry.resolve({ result: entry.outcome?.result, commit: entry.outcome?.commit ?? null });
    }
    this.repacker.afterPush();
  }

  /** Pushes the chain's tip carrying `batch`; true when the remote accepted it (failures are handled here). */
  private async pushBatch(tip: Tip, batch: Entry[]): Promise<boolean> {
    const started = performance.now();
    // Killed when its first operation's time is up.
    const failure = await this.pushWhileBuilding(tip, batch.length, this.firstDeadline(batch));
    const { metrics } = this.deps;
    metrics.pushSeconds.observe((performance.now() - started) / 1000, this.labels);
    if (failure !== undefined) {
      if (!(failure.error instanceof GitRemoteError)) throw failure.error;
      metrics.pushes.inc({ ...this.labels, result: failure.error.kind });
      // A push the remote took (refused by a hook, or in doubt) counts for the window; a lost
      // race or a remote out of reach is retried on its own backoff (see awaitWindow).
      if (failure.error.kind === "hook" || failure.error.inDoubt) this.window.counted(started);
      await this.onPushFailure(failure.error, batch, tip);
      return false;
    }
    this.window.counted(started);
    // The branch moved from the base of any push in doubt: none of them can land any more, and
    // this one carried their operations (see Doubt).
    this.inDoubtPushes.clear();
    metrics.pushes.inc({ ...this.labels, result: "accepted" });
    metrics.batchOperations.observe(batch.length, this.labels);
    this.queue.pushesSettled();
    this.reach.reached(started);
    const commits = batch.filter((e) => typeof e.outcome?.commit === "string").length;
    const ms = Math.round(performance.now() - started);
    this.deps.logger.info({ commit: tip.commit, ops: batch.length, commits, ms }, "pushed");
    return true;
  }

  /**
   * Flushes and pushes `tip` (the chain's first `batchLength` entries), killed at `deadline`;
   * builds arrivals meanwhile, and answers those that run out of time waiting behind it (they
   * were never pushed). Resolves with the push's failure if any.
   */
  private async pushWhileBuilding(tip: Tip, batchLength: number, deadline: number | undefined): Promise<{ error: unknown } | undefined> {
    let settled: { failure: { error: unknown } | undefined } | undefined;
    const pushed = (async () => {
      await this.deps.store.flush();
      await this.deps.remote.push(tip.commit!, deadline);
    })().then(
      () => void (settled = { failure: undefined }),
      (error: unknown) => void (settled = { failure: { error } }),
    );
    const behind = () => this.queue.entries.slice(batchLength);
    while (settled === undefined) {
      this.expireBehind(batchLength, tip);
      const due = Math.min(...[...behind(), ...this.fetchWaiters.refused].map((e) => this.deadline(e)));
      if (this.queue.unbuilt) {
        await this.queue.build(this.remoteTip, () => settled !== undefined || performance.now() >= due);
        continue;
      }
      await this.loop.nap(due - performance.now(), pushed);
    }
    return settled.failure;
  }

  /**
   * During a push: answers the operations behind it (and refusals waiting to be confirmed) whose
   * time is up. They are not in the push, so they are never written; the chain is cut back to
   * the pushed tip and what stays queued runs again on it.
   */
  private expireBehind(batchLength: number, pushedTip: Tip): void {
    const now = performance.now();
    for (const entry of this.fetchWaiters.dropLate((e) => now >= this.deadline(e))) entry.reject(this.timeoutError("a write waiting to be confirmed"));
    const expired = this.queue.dropBehind(batchLength, pushedTip, (e) => now >= this.deadline(e));
    if (expired.length === 0) return;
    const error = this.timeoutError("a write queued behind a push that is still waiting for it");
    this.deps.logger.error({ ops: expired.length, remoteMessage: error.remoteMessage }, "git remote not answering, queued operations rejected");
    for (const entry of expired) entry.reject(error);
  }

  /** Answers `candidates` whose time is up and that are in no push in doubt (503: never pushed, or the push failed for sure). */
  private expire(candidates: readonly Entry[], now: number, error?: GitRemoteError): void {
    const expired = candidates.filter((e) => now >= this.deadline(e) && !this.inDoubt(e));
    if (expired.length === 0) return;
    const reason = error ?? this.timeoutError("a write");
    this.deps.logger.error({ remoteMessage: reason.remoteMessage, ops: expired.length }, "git remote unreachable, operations rejected");
    this.rejectEntries(expired, reason);
  }

  /**
   * Holds the chain until the push window opens, minPushIntervalMs after the start of the last
   * push the remote answered, running arrivals onto the chain meanwhile so that they go out in the
   * same push. Start to start: pushes are at most one per window whatever a push takes, and a push
   * longer than the window adds no wait. Rejected (non-fast-forward) and unreachable attempts do
   * not move the window: their retries keep their own backoff, or a replica that keeps losing
   * races to another paced one would wait a window per loss, lose again and give up.
   *
   * Resolves true when the window is open or the writer is closing (close() pushes what is queued
   * at once); false, with the chain kept, when a fetch is waiting (refresh(), or a refusal to
   * confirm: a fetch never waits for the window). step() comes back here after it.
   */
  private async awaitWindow(): Promise<boolean> {
    const opensAt = this.window.opensAt;
    const fetchWaiting = () => this.fetchWaiters.waiting;
    const done = () => this.life.state !== "open" || fetchWaiting() || performance.now() >= opensAt;
    if (done()) return this.windowEnds(!fetchWaiting());
    this.window.hold(performance.now());
    while (!done()) {
      if (this.queue.unbuilt) {
        await this.queue.build(this.remoteTip, done);
        continue;
      }
      await this.loop.nap(opensAt - performance.now());
    }
    return this.windowEnds(!fetchWaiting());
  }

  /** Ends a wait for the window (`open`: the chain is pushed now); the operations on the chain count what they waited. */
  private windowEnds(open: boolean): boolean {
    if (open) this.window.open(performance.now(), this.queue.batch());
    return open;
  }

  /** An operation threw on the chain (it left the queue): confirmed on a fresh view first when its view may be too old, else rejected. */
  private refused(entry: Entry, error: unknown): void {
    if (this.doubts(entry, error)) {
      // Its view of the remote predates the request: a replica may have written what it
      // says is missing. Confirm with a fetch (serveRefresh) and run it again.
      this.fetchWaiters.confirm(entry);
      return;
    }
    this.deps.logger.debug({ err: error }, "operation rejected");
    entry.reject(error);
  }

  private async onPushFailure(error: GitRemoteError, batch: Entry[], tip: Tip): Promise<void> {
    const { logger } = this.deps;
    switch (error.kind) {
      case "hook":
        this.reach.reached();
        this.queue.pushesSettled();
        this.inDoubtPushes.clear();
        logger.error({ remoteMessage: error.remoteMessage, ops: batch.length }, "push refused by the remote");
        this.rejectEntries(batch, error);
        return;
      case "rejected":
        this.reach.reached();
        await this.onLostRace(error, batch);
        return;
      case "unreachable":
        if (error.inDoubt) this.recordDoubt(tip, batch, error);
        await this.onUnreachable(error);
    }
  }

  /** A push of `batch` lost a race (non-fast-forward): fetch the new tip after a backoff, so that the batch re-runs on it; give up after maxPushAttempts in a row. */
  private async onLostRace(error: GitRemoteError, batch: Entry[]): Promise<void> {
    const { logger, maxPushAttempts, delay } = this.deps;
    const rejections = this.queue.pushRejected();
    if (rejections >= maxPushAttempts) {
      logger.warn({ attempts: rejections, ops: batch.length }, "push rejected too often, giving up");
      this.queue.pushesSettled();
      this.rejectEntries(batch.filter((e) => !this.inDoubt(e)), error);
      return;
    }
    logger.info(
      { attempt: rejections, reason: error.remoteMessage },
      "push rejected, retrying on the new remote tip",
    );
    await delay(backoffDelayMs(rejections, REJECTED_BACKOFF));
    try {
      await this.adopt(await this.fetchTip(this.firstDeadline(this.queue.entries)));
    } catch (fetchError) {
      if (!(fetchError instanceof GitRemoteError)) throw fetchError;
      await this.onUnreachable(fetchError);
    }
  }

  /** Records a push in doubt (see Doubt): its operations wait for the remote's branch to tell. */
  private recordDoubt(tip: Tip, batch: Entry[], error: GitRemoteError): void {
    const outcomes = new Map(batch.map((e) => [e, { result: e.outcome?.result, commit: e.outcome?.commit ?? null }] as const));
    this.inDoubtPushes.record(tip.commit!, outcomes);
    this.deps.logger.error(
      { commit: tip.commit, ops: batch.length, remoteMessage: error.remoteMessage },
      "push without an answer after its pack may have reached the remote: its operations wait until the remote's branch shows whether it took them",
    );
  }

  /**
   * The branch moved to `tip` from the base of the pushes in doubt: each push is on it (its
   * operations are acknowledged with what they answered then) or can never land (the remote moves
   * a branch only from the old tip a push names), and its operations run again.
   */
  private async settleDoubts(tip: Tip): Promise<void> {
    const holds = async (commit: string, at: string) => (await this.deps.remote.lostCommits(commit, at, 1)).length === 0;
    const landed = await this.inDoubtPushes.settle(tip.commit, holds);
    if (landed.size === 0) return;
    const entries = [...landed.keys()].filter((e) => this.queue.entries.includes(e));
    this.queue.remove(new Set(entries));
    this.deps.logger.info({ tip: tip.commit, ops: entries.length }, "the push in doubt is on the remote: its operations are acknowledged");
    for (const entry of entries) entry.resolve(landed.get(entry)!);
  }

  /** Rejects what waited too long, then waits before the next attempt (never past a deadline). */
  private async onUnreachable(error: GitRemoteError): Promise<void> {
    const { logger, delay } = this.deps;
    error = this.reach.explain(error);
    this.reach.failed(error);
    const attempt = this.reach.attempt();
    const now = performance.now();
    if (this.life.state === "closing") {
      // Shutting down: a push in doubt is not waited for past its operations' time; their answer
      // says that the remote may have taken them (a retry is answered from the repository).
      const unknown = this.queue.entries.filter((e) => this.inDoubt(e) && now >= this.deadline(e));
      if (unknown.length > 0) this.rejectEntries(unknown, new GitRemoteError("unreachable", error.remoteMessage, { repository: this.deps.repository, inDoubt: true }));
    }
    this.expire(this.queue.entries, now, error);
    if (this.queue.length === 0) return;
    logger.warn({ remoteMessage: error.remoteMessage, attempt }, "git remote unreachable, retrying");
    const nextDeadline = this.firstDeadline(this.queue.entries) ?? Number.POSITIVE_INFINITY;
    await delay(Math.max(0, Math.min(backoffDelayMs(attempt, UNREACHABLE_BACKOFF), nextDeadline - now)));
  }

  /** Whether `entry`'s rejection must be confirmed on a fresh view before it is given. */
  private doubts(entry: Entry, error: unknown): boolean {
    if (entry.confirmed || this.reach.viewAsOf >= entry.queuedAt) return false;
    return this.deps.confirmRejection?.(error) ?? false;
  }

  private async serveRefresh(): Promise<void> {
    // Those that ran out of time were answered already (see FetchWaiters, expireBehind).
    const { reads: waiters, refusals: doubted } = this.fetchWaiters.take();
    if (waiters.length === 0 && doubted.length === 0) return;
    // Killed by the first deadline of whatever waits: a read, a refusal to confirm, or a queued
    // write (which is answered right after, see below: a fetch must not hold it past its time).
    const queued = this.firstDeadline(this.queue.entries) ?? Number.POSITIVE_INFINITY;
    try {
      const tip = await this.fetchTip(Math.min(...waiters.map((w) => w.deadline), ...doubted.map((e) => this.deadline(e)), queued));
      const previous = this.remoteTip.commit;
      await this.adopt(tip);
      for (const waiter of waiters) waiter.resolve(tip.commit);
      if (doubted.length > 0) {
        this.deps.logger.debug({ ops: doubted.length, moved: previous !== tip.commit }, "refusals re-run on a fetched tip");
        // Ahead of what has not run yet; what ran on the chain keeps its place.
        for (const entry of doubted) entry.confirmed = true;
        this.queue.requeue(doubted);
      }
    } catch (error) {
      for (const waiter of waiters) waiter.reject(error);
      // The refusal cannot be confirmed: the remote is not reachable, say so (503), not "gone".
      for (const entry of doubted) entry.reject(error);
    }
    this.expire(this.queue.entries, performance.now());
  }

  /** Fetches the branch; resolves with the remote tip. Marks the remote (un)reachable. */
  private async fetchTip(deadline?: number): Promise<Tip> {
    const { remote, store } = this.deps;
    const started = performance.now();
    let found: boolean;
    try {
      found = await remote.fetch(deadline === undefined || Number.isFinite(deadline) ? deadline : undefined);
    } catch (error) {
      this.reach.failed(error);
      throw error;
    }
    this.reach.reached(started);
    this.repacker.afterFetch(store.refreshPacks());
    if (!found) {
      if (this.remoteTip.commit === null) return EMPTY_TIP;
      // Adopting "no branch" would make the next commit a new root: a history without any of the
      // files Argo CD / Flux deploy. Keep the known tip; the next push recreates the branch with it.
      this.deps.logger.error({ tip: this.remoteTip.commit }, "the remote branch is gone; keeping the last known tip");
      return this.remoteTip;
    }
    const commit = await store.resolveRef(this.trackingRef);
    if (commit === null) throw new GitRepositoryError(`fetch succeeded but ${this.trackingRef} does not exist`);
    if (commit === this.remoteTip.commit) return this.remoteTip;
    if (this.remoteTip.commit !== null) await this.history.check(this.remoteTip.commit, commit);
    return { commit, tree: await store.commitTree(commit) };
  }

  /** Makes `tip` the known remote tip: snapshot(), the local branch ref, onTip listeners. */
  private async adopt(tip: Tip): Promise<void> {
    const previous = this.remoteTip;
    if (previous.commit === tip.commit) return;
    if (this.inDoubtPushes.size > 0) await this.settleDoubts(tip);
    this.remoteTip = tip;
    this.tipListeners.emit(tip.commit, previous.commit);
    try {
      await this.deps.store.setRef(this.branchRef, tip.commit);
    } catch (error) {
      // The remote holds the tip and it is known in memory; the ref only keeps the objects from
      // being pruned, and the next adopt (or start) rewrites it.
      this.deps.logger.error({ err: error, tip: tip.commit }, "cannot update the local branch ref");
    }
  }

  private notifyPushed(previous: string | null, tip: string, batch: Entry[]): void {
    if (this.pushListeners.size === 0) return;
    const commits = batch.flatMap((e) => (typeof e.outcome?.commit === "string" ? [{ commit: e.outcome.commit, paths: e.outcome.paths }] : []));
    this.pushListeners.emit({ branch: this.deps.branch, previous, tip, commits });
  }

  /** Settles `rejected` with `error` and drops the chain: whatever stays queued re-runs from the remote tip. */
  private rejectEntries(rejected: readonly Entry[], error: unknown): void {
    this.queue.reject(rejected, error, this.remoteTip);
  }
}
