/** A read waiting for the next fetch (refresh()). */
export interface ReadWaiter {
  /** When it is answered at the latest (the clock's time), with the remote's answer or without it. */
  readonly deadline: number;
  resolve(tip: string | null): void;
  reject(reason: unknown): void;
}

interface Read extends ReadWaiter {
  settled?: boolean;
}

/**
 * Who waits for the next fetch, one of the writer's pieces: reads (refresh()), each answered by
 * the fetch or rejected when its timer fires `timeoutMs` after it came, whichever is first; and
 * operations refused on a view older than their request, to be run again after the fetch
 * (ADR 0012). A fetch never waits for the push window nor for queued writes: the work loop serves
 * these first whenever `waiting`.
 */
export class FetchWaiters<E> {
  private reads: Read[] = [];
  private refusals: E[] = [];
  private readonly now: () => number;

  constructor(
    private readonly timeoutMs: number,
    /** The clock of the deadlines (default performance.now). */
    now?: () => number,
  ) {
    this.now = now ?? (() => performance.now());
  }

  get waiting(): boolean {
    return this.reads.length > 0 || this.refusals.length > 0;
  }

  /** A read waits: resolves with the fetched tip, or rejects with `timedOut()` after `timeoutMs`. */
  read(timedOut: () => unknown): Promise<string | null> {
    return new Promise<string | null>((resolve, reject) => {
      const read: Read = { resolve, reject, deadline: this.now() + this.timeoutMs };
      const timer = setTimeout(() => {
        if (read.settled) return;
        read.settled = true;
        reject(timedOut());
      }, this.timeoutMs);
      read.resolve = (tip) => {
        clearTimeout(timer);
        if (!read.settled) resolve(tip);
        read.settled = true;
      };
      read.reject = (error) => {
        clearTimeout(timer);
        if (!read.settled) reject(error);
        read.settled = true;
      };
      this.reads.push(read);
    });
  }

  /** `entry` was refused on a view older than its request: it waits for a fetch to confirm. */
  confirm(entry: E): void {
    this.refusals.push(entry);
  }

  /** The refusals waiting (for their deadlines). */
  get refused(): readonly E[] {
    return this.refusals;
  }

  /** Hands over what the next fetch answers: the reads not answered yet, and the refusals. */
  take(): { reads: ReadWaiter[]; refusals: E[] } {
    const reads = this.reads.filter((r) => !r.settled);
    const refusals = this.refusals;
    this.reads = [];
    this.refusals = [];
    return { reads, refusals };
  }

  /** Removes the refusals `late` picks (their time is up) and returns them, to be answered. */
  dropLate(late: (entry: E) => boolean): E[] {
    const dropped = this.refusals.filter(late);
    if (dropped.length > 0) this.refusals = this.refusals.filter((e) => !dropped.includes(e));
    return dropped;
  }
}
