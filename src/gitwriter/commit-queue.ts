import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { Gauge } from "../metrics/index.js";
import type { Applied } from "./apply-operation.js";
import { EMPTY_TIP, type Tip } from "./object-store.js";
import type { Operation, SubmitResult } from "./types.js";

/** A submitted operation, from submit() until it is answered. */
export interface Entry {
  readonly op: Operation<unknown>;
  /** performance.now() at submit; the unreachable deadline counts from here. */
  readonly queuedAt: number;
  readonly resolve: (value: SubmitResult<unknown>) => void;
  readonly reject: (reason: unknown) => void;
  /** Set when the operation ran on the current chain; `paths`: what its commit edited. */
  outcome?: { commit: string | null; result: unknown; paths: string[] };
  /** Re-queued after a fetch confirmed the view: its next rejection is final. */
  confirmed?: boolean;
  /** Time it waited for push windows so far (see Writer.awaitWindow). */
  windowWaitMs?: number;
}

export interface CommitQueueDeps {
  /** Runs one operation on a draft over `base` (applyOperation). */
  apply: (op: Operation<unknown>, base: Tip) => Promise<Applied>;
  /** `entry` threw on the chain; it is out of the queue already, the writer answers it. */
  refused: (entry: Entry, error: unknown) => void;
  /** gitops_broker_git_queued_operations, set to the queue's length whenever it changes. */
  queued: Pick<Gauge, "set">;
  labels: { store: string };
}

/**
 * The queue and the chain (group commit), one of the writer's pieces. The queue holds the
 * operations submitted and not answered yet, in order. The chain holds their commits that are not
 * on the remote: `entries[0, built)` ran, in order, on drafts starting at `base` (the remote tip
 * they were built on); `tip` is the last commit. Also the number of pushes of the current batch the
 * remote rejected in a row (a lost race: the batch re-runs on the new tip).
 */
export class CommitQueue {
  private readonly queue: Entry[] = [];
  private chainBase: Tip = EMPTY_TIP;
  private chainTip: Tip = EMPTY_TIP;
  private builtCount = 0;
  private rejectedInARow = 0;

  constructor(private readonly deps: CommitQueueDeps) {}

  /** The operations not answered yet, in order (read only: they change through the methods). */
  get entries(): readonly Entry[] {
    return this.queue;
  }

  get length(): number {
    return this.queue.length;
  }

  /** How many entries, from the first, ran on the chain. */
  get built(): number {
    return this.builtCount;
  }

  /** The remote tip the chain was built on. */
  get base(): Tip {
    return this.chainBase;
  }

  /** The chain's last commit (its base when nothing on it made one). */
  get tip(): Tip {
    return this.chainTip;
  }

  /** Whether some queued operations have not run on the chain yet. */
  get unbuilt(): boolean {
    return this.builtCount < this.queue.length;
  }

  add(entry: Entry): void {
    this.queue.push(entry);
    this.deps.queued.set(this.queue.length, this.deps.labels);
  }

  /** Drops the chain: whatever is queued runs again from `remote`. */
  reset(remote: Tip): void {
    this.chainBase = remote;
    this.chainTip = remote;
    this.builtCount = 0;
  }

  /**
   * Runs the queued operations that have not run on the chain yet, in order, until `stop()` says
   * so; a chain built on an older remote tip than `remote` is dropped first. An operation that
   * makes no commit on top of nothing unpushed is answered at once (everything it read is on the
   * remote); one that throws leaves the queue and goes to `refused`.
   */
  async build(remote: Tip, stop: () => boolean = () => false): Promise<void> {
    if (this.chainBase.commit !== remote.commit) this.reset(remote);
    const { queue } = this;
    while (this.builtCount < queue.length && !stop()) {
      const index = this.builtCount;
      const entry = queue[index]!;
      const base = this.chainTip;
      let applied: Applied;
      try {
        applied = await this.deps.apply(entry.op, base);
      } catch (error) {
        queue.splice(index, 1);
        this.deps.queued.set(queue.length, this.deps.labels);
        this.deps.refused(entry, error);
        continue;
      }
      if (applied.tip.commit === base.commit && base.commit === remote.commit) {
        // No commit and nothing unpushed before it: everything it read is on the remote.
        queue.splice(index, 1);
        this.deps.queued.set(queue.length, this.deps.labels);
        entry.resolve({ result: applied.result, commit: null });
        continue;
      }
      const commit = applied.tip.commit === base.commit ? null : applied.tip.commit;
      entry.outcome = { commit, result: applied.result, paths: commit === null ? [] : applied.paths };
      this.chainTip = applied.tip;
      this.builtCount += 1;
      // An operation reads from memory and page cache only, so it never waits for I/O: without
      // this, a long queue would hold back HTTP requests and the end of the push in flight.
      await yieldToEventLoop();
    }
  }

  /** The entries that ran on the chain: what a push of its tip carries. */
  batch(): Entry[] {
    return this.queue.slice(0, this.builtCount);
  }

  /** The first `count` entries are on the remote at `tip`: out of the queue; what ran on top of them stays on the chain, now based on `tip`. */
  pushed(count: number, tip: Tip): void {
    this.queue.splice(0, count);
    this.deps.queued.set(this.queue.length, this.deps.labels);
    this.chainBase = tip;
    this.builtCount -= count;
  }

  /** Takes `set` out of the queue (the chain is the caller's to keep or drop). */
  remove(set: ReadonlySet<Entry>): void {
    const { queue } = this;
    for (let i = queue.length - 1; i >= 0; i--) {
      if (set.has(queue[i]!)) queue.splice(i, 1);
    }
    this.deps.queued.set(queue.length, this.deps.labels);
  }

  /** Settles `rejected` with `error` and drops the chain: whatever stays queued re-runs from `remote`. */
  reject(rejected: readonly Entry[], error: unknown, remote: Tip): void {
    this.remove(new Set(rejected));
    for (const entry of rejected) entry.reject(error);
    this.reset(remote);
  }

  /**
   * During a push of the first `batchLength` entries to `pushedTip`: takes the entries behind it
   * that `late` picks out of the queue and returns them (they are not in the push, so never
   * written). When any of them ran on the chain, the chain is cut back to the pushed tip: what
   * stays queued behind the push runs again on it.
   */
  dropBehind(batchLength: number, pushedTip: Tip, late: (entry: Entry) => boolean): Entry[] {
    const expired = this.queue.slice(batchLength).filter(late);
    if (expired.length === 0) return expired;
    const set = new Set(expired);
    if (this.queue.slice(batchLength, this.builtCount).some((e) => set.has(e))) {
      this.chainTip = pushedTip;
      this.builtCount = batchLength;
    }
    this.remove(set);
    return expired;
  }

  /** Puts `entries` back ahead of what has not run yet; what ran on the chain keeps its place. */
  requeue(entries: readonly Entry[]): void {
    this.queue.splice(Math.min(this.builtCount, this.queue.length), 0, ...entries);
    this.deps.queued.set(this.queue.length, this.deps.labels);
  }

  /** A push of the current batch lost a race; returns how many did in a row. */
  pushRejected(): number {
    this.rejectedInARow += 1;
    return this.rejectedInARow;
  }

  /** The current batch's pushes are over (accepted, refused by a hook, or given up on). */
  pushesSettled(): void {
    this.rejectedInARow = 0;
  }
}
