import { performance } from "node:perf_hooks";
import { BaseError, GitRemoteError, GitWriterClosedError } from "../errors/index.js";
import { formatCommitMessage } from "./commit-message.js";
import { EMPTY_TIP, EMPTY_TREE_OID, type ObjectStore, type Tip } from "./object-store.js";
import type { Remote } from "./remote.js";
import { DraftTree, TreeView } from "./tree-view.js";
import type { GitAuthor, GitWriter, Operation, OperationOutcome, SubmitResult, TreeReader } from "./types.js";

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
  maxPushAttempts: number;
}

interface Backoff {
  baseMs: number;
  capMs: number;
}

/** After a rejected push: someone else just pushed, so retry soon. */
const REJECTED_BACKOFF: Backoff = { baseMs: 25, capMs: 1_000 };
/** While the remote is unreachable. */
const UNREACHABLE_BACKOFF: Backoff = { baseMs: 250, capMs: 5_000 };

/** Exponential backoff with "equal jitter": between half and all of the exponential step. */
function backoffMs(attempt: number, { baseMs, capMs }: Backoff): number {
  const step = Math.min(capMs, baseMs * 2 ** (attempt - 1));
  return Math.round(step / 2 + (Math.random() * step) / 2);
}

interface Entry {
  readonly op: Operation<unknown>;
  /** performance.now() at submit; the unreachable deadline counts from here. */
  readonly queuedAt: number;
  readonly resolve: (value: SubmitResult<unknown>) => void;
  readonly reject: (reason: unknown) => void;
  /** Set when the operation ran on the current chain. */
  outcome?: { commit: string | null; result: unknown };
}

/**
 * Commits of queued operations not yet on the remote: `entries[0, built)` ran, in order, on
 * drafts starting at `base` (the remote tip they were built on); `tip` is the last commit.
 */
interface Chain {
  base: Tip;
  tip: Tip;
  built: number;
}

interface Waiter<T> {
  resolve: (value: T) => void;
  reject: (reason: unknown) => void;
}

type State = "new" | "open" | "closing" | "closed";

/**
 * One queue per writer, drained by one worker loop. Each round runs the queued operations that
 * have not run yet on top of the chain (one commit each), then pushes the chain's tip: every
 * operation that arrived while the previous push was in flight goes out in this push. On a
 * rejected push the chain is dropped and every unsettled operation re-runs on the new remote tip.
 *
 * The local branch ref only ever moves to a tip the remote holds (after a push or a fetch);
 * unpushed commits live in `chain` only, so nothing unpushed is ever visible and a crash loses
 * nothing that was acknowledged.
 */
export class Writer implements GitWriter {
  private readonly deps: WriterDeps;
  private readonly branchRef: string;
  private readonly trackingRef: string;
  private state: State = "new";
  private starting: Promise<void> | undefined;
  private remoteTip: Tip = EMPTY_TIP;
  private reachable = true;
  private readonly entries: Entry[] = [];
  private chain: Chain = { base: EMPTY_TIP, tip: EMPTY_TIP, built: 0 };
  private refreshWaiters: Waiter<string | null>[] = [];
  private worker: Promise<void> | undefined;
  private readonly listeners = new Set<(tip: string | null, previous: string | null) => void>();
  /** Consecutive rejected pushes of the current batch. */
  private rejections = 0;
  /** Consecutive failures to reach the remote. */
  private outages = 0;

  constructor(deps: WriterDeps) {
    this.deps = deps;
    this.branchRef = `refs/heads/${deps.branch}`;
    this.trackingRef = `refs/remotes/origin/${deps.branch}`;
  }

  get remoteReachable(): boolean {
    return this.reachable;
  }

  start(): Promise<void> {
    // A failed start (remote unreachable) may be retried.
    this.starting ??= this.doStart().catch((error: unknown) => {
      this.starting = undefined;
      throw error;
    });
    return this.starting;
  }

  submit<R>(op: Operation<R>): Promise<SubmitResult<R>> {
    if (this.state !== "open") return Promise.reject(this.notOpenError());
    if (typeof op !== "function") return Promise.reject(new TypeError("an operation must be a function"));
    return new Promise<SubmitResult<R>>((resolve, reject) => {
      this.entries.push({
        op,
        queuedAt: performance.now(),
        resolve: resolve as (value: SubmitResult<unknown>) => void,
        reject,
      });
      this.kick();
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

  refresh(): Promise<string | null> {
    if (this.state !== "open" && this.state !== "closing") return Promise.reject(this.notOpenError());
    return new Promise<string | null>((resolve, reject) => {
      this.refreshWaiters.push({ resolve, reject });
      this.kick();
    });
  }

  onTip(listener: (tip: string | null, previous: string | null) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    if (this.state === "closed") return;
    if (this.state === "new") {
      this.state = "closed";
      await this.starting?.catch(() => undefined);
      return;
    }
    this.state = "closing";
    while (this.worker !== undefined) await this.worker;
    this.state = "closed";
    this.deps.logger.info({ tip: this.remoteTip.commit }, "git writer closed");
  }

  private async doStart(): Promise<void> {
    const { remote, store, logger } = this.deps;
    await remote.init();
    const tip = await this.fetchTip();
    // Unconditionally: the ref may hold a commit a crashed process never got acknowledged.
    await store.setRef(this.branchRef, tip.commit);
    this.remoteTip = tip;
    this.chain = { base: tip, tip, built: 0 };
    // close() may have been called while starting.
    if (this.state === "new") this.state = "open";
    logger.info({ tip: tip.commit }, "git writer started");
    if (tip.commit !== null) this.notify(tip.commit, null);
  }

  private notOpenError(): BaseError {
    return new GitWriterClosedError(this.state === "new" ? "git writer not started" : "git writer is closed");
  }

  private hasWork(): boolean {
    return this.entries.length > 0 || this.refreshWaiters.length > 0;
  }

  private kick(): void {
    if (this.worker !== undefined) return;
    this.worker = this.work().finally(() => {
      this.worker = undefined;
      if (this.hasWork()) this.kick();
    });
  }

  private async work(): Promise<void> {
    while (this.hasWork()) {
      try {
        // Between batches: a refresh waits for the push in flight, never for all queued work.
        if (this.refreshWaiters.length > 0) await this.serveRefresh();
        else await this.step();
      } catch (error) {
        // Not a remote failure (those are handled in step): the local repository failed us.
        // Whatever is queued cannot be trusted to commit; reject it rather than loop.
        this.deps.logger.error({ err: error }, "git writer failed");
        this.rejectEntries([...this.entries], error);
      }
    }
  }

  /** Runs what is queued onto the chain and pushes it. */
  private async step(): Promise<void> {
    await this.build();
    const batch = this.entries.slice(0, this.chain.built);
    if (batch.length === 0) return;
    const tip = this.chain.tip;
    try {
      // build() leaves entries queued only behind a commit, so the chain has one.
      await this.deps.remote.push(tip.commit!);
    } catch (error) {
      if (!(error instanceof GitRemoteError)) throw error;
      await this.onPushFailure(error, batch);
      return;
    }
    this.entries.splice(0, batch.length);
    this.rejections = 0;
    this.markReachable();
    const commits = batch.filter((e) => typeof e.outcome?.commit === "string").length;
    this.deps.logger.info({ commit: tip.commit, ops: batch.length, commits }, "pushed");
    await this.adopt(tip);
    for (const entry of batch) {
      entry.resolve({ result: entry.outcome?.result, commit: entry.outcome?.commit ?? null });
    }
  }

  /** Runs every queued operation that has not run on the chain yet, in order. */
  private async build(): Promise<void> {
    if (this.chain.base.commit !== this.remoteTip.commit) {
      this.chain = { base: this.remoteTip, tip: this.remoteTip, built: 0 };
    }
    while (this.chain.built < this.entries.length) {
      const index = this.chain.built;
      const entry = this.entries[index]!;
      const base = this.chain.tip;
      let applied: { tip: Tip; result: unknown };
      try {
        applied = await this.apply(entry.op, base);
      } catch (error) {
        this.entries.splice(index, 1);
        this.deps.logger.debug({ err: error }, "operation rejected");
        entry.reject(error);
        continue;
      }
      if (applied.tip.commit === base.commit && base.commit === this.remoteTip.commit) {
        // No commit and nothing unpushed before it: everything it read is on the remote.
        this.entries.splice(index, 1);
        entry.resolve({ result: applied.result, commit: null });
        continue;
      }
      entry.outcome = { commit: applied.tip.commit === base.commit ? null : applied.tip.commit, result: applied.result };
      this.chain.tip = applied.tip;
      this.chain.built += 1;
    }
  }

  /** Runs one operation on a draft over `base`; resolves with the new tip (`base` when nothing to commit). */
  private async apply(op: Operation<unknown>, base: Tip): Promise<{ tip: Tip; result: unknown }> {
    const draft = new DraftTree(this.deps.store, base);
    let outcome: unknown;
    try {
      outcome = await op(draft);
    } finally {
      draft.seal();
    }
    if (typeof outcome !== "object" || outcome === null || !("commit" in outcome)) {
      throw new TypeError("an operation must resolve with { commit, result }");
    }
    const { commit: spec, result } = outcome as OperationOutcome<unknown>;
    if (spec === null || !draft.changed) return { tip: base, result };
    const message = formatCommitMessage(spec);
    const tree = await draft.writeTree();
    if (tree === (base.tree ?? EMPTY_TREE_OID)) return { tip: base, result };
    const commit = await this.deps.store.writeCommit({
      tree,
      parent: base.commit,
      message,
      author: this.deps.author,
      date: this.deps.now(),
    });
    return { tip: { commit, tree }, result };
  }

  private async onPushFailure(error: GitRemoteError, batch: Entry[]): Promise<void> {
    const { logger, maxPushAttempts, delay } = this.deps;
    switch (error.kind) {
      case "hook":
        this.markReachable();
        this.rejections = 0;
        logger.error({ remoteMessage: error.remoteMessage, ops: batch.length }, "push refused by the remote");
        this.rejectEntries(batch, error);
        return;
      case "rejected":
        this.markReachable();
        this.rejections += 1;
        if (this.rejections >= maxPushAttempts) {
          logger.warn({ attempts: this.rejections, ops: batch.length }, "push rejected too often, giving up");
          this.rejections = 0;
          this.rejectEntries(batch, error);
          return;
        }
        logger.info(
          { attempt: this.rejections, reason: error.remoteMessage },
          "push rejected, retrying on the new remote tip",
        );
        await delay(backoffMs(this.rejections, REJECTED_BACKOFF));
        try {
          await this.adopt(await this.fetchTip());
        } catch (fetchError) {
          if (!(fetchError instanceof GitRemoteError)) throw fetchError;
          await this.onUnreachable(fetchError);
        }
        return;
      case "unreachable":
        await this.onUnreachable(error);
    }
  }

  /** Rejects what waited too long, then waits before the next attempt (never past a deadline). */
  private async onUnreachable(error: GitRemoteError): Promise<void> {
    const { logger, remoteTimeoutMs, delay } = this.deps;
    this.reachable = false;
    this.outages += 1;
    const now = performance.now();
    const expired = this.entries.filter((e) => now - e.queuedAt >= remoteTimeoutMs);
    if (expired.length > 0) {
      logger.error(
        { remoteMessage: error.remoteMessage, ops: expired.length },
        "git remote unreachable, operations rejected",
      );
      this.rejectEntries(expired, error);
    }
    if (this.entries.length === 0) return;
    logger.warn({ remoteMessage: error.remoteMessage, attempt: this.outages }, "git remote unreachable, retrying");
    const nextDeadline = Math.min(...this.entries.map((e) => e.queuedAt + remoteTimeoutMs));
    await delay(Math.max(0, Math.min(backoffMs(this.outages, UNREACHABLE_BACKOFF), nextDeadline - now)));
  }

  private async serveRefresh(): Promise<void> {
    const waiters = this.refreshWaiters;
    this.refreshWaiters = [];
    try {
      const tip = await this.fetchTip();
      await this.adopt(tip);
      for (const waiter of waiters) waiter.resolve(tip.commit);
    } catch (error) {
      for (const waiter of waiters) waiter.reject(error);
    }
  }

  /** Fetches the branch; resolves with the remote tip. Marks the remote (un)reachable. */
  private async fetchTip(): Promise<Tip> {
    const { remote, store } = this.deps;
    let found: boolean;
    try {
      found = await remote.fetch();
    } catch (error) {
      this.reachable = false;
      throw error;
    }
    this.markReachable();
    await store.forgetRemovedPacks();
    if (!found) {
      if (this.remoteTip.commit === null) return EMPTY_TIP;
      // Adopting "no branch" would make the next commit a new root: a history without any of the
      // files Argo CD / Flux deploy. Keep the known tip; the next push recreates the branch with it.
      this.deps.logger.error({ tip: this.remoteTip.commit }, "the remote branch is gone; keeping the last known tip");
      return this.remoteTip;
    }
    const commit = await store.resolveRef(this.trackingRef);
    if (commit === null) throw new Error(`fetch succeeded but ${this.trackingRef} does not exist`);
    if (commit === this.remoteTip.commit) return this.remoteTip;
    return { commit, tree: await store.commitTree(commit) };
  }

  /** Makes `tip` the known remote tip: snapshot(), the local branch ref, onTip listeners. */
  private async adopt(tip: Tip): Promise<void> {
    const previous = this.remoteTip;
    if (previous.commit === tip.commit) return;
    this.remoteTip = tip;
    this.notify(tip.commit, previous.commit);
    try {
      await this.deps.store.setRef(this.branchRef, tip.commit);
    } catch (error) {
      // The remote holds the tip and it is known in memory; the ref only keeps the objects from
      // being pruned, and the next adopt (or start) rewrites it.
      this.deps.logger.error({ err: error, tip: tip.commit }, "cannot update the local branch ref");
    }
  }

  private notify(tip: string | null, previous: string | null): void {
    for (const listener of this.listeners) {
      try {
        listener(tip, previous);
      } catch (error) {
        this.deps.logger.error({ err: error }, "onTip listener failed");
      }
    }
  }

  private markReachable(): void {
    if (!this.reachable) this.deps.logger.info({ after: this.outages }, "git remote reachable again");
    this.reachable = true;
    this.outages = 0;
  }

  /** Settles `rejected` with `error` and drops the chain: whatever stays queued re-runs from the remote tip. */
  private rejectEntries(rejected: Entry[], error: unknown): void {
    const set = new Set(rejected);
    for (let i = this.entries.length - 1; i >= 0; i--) {
      if (set.has(this.entries[i]!)) this.entries.splice(i, 1);
    }
    for (const entry of rejected) entry.reject(error);
    this.chain = { base: this.remoteTip, tip: this.remoteTip, built: 0 };
  }
}
