/**
 * Pushes are spaced by the window plus this much of it (at most 5 s): the remote counts a push
 * when it arrives, and arrivals jitter. With 10 %, k + 1 pushes span at least k windows plus k
 * tenths as the remote sees them, whatever each arrival's delay within that many tenths.
 */
export function pushSpacingMs(windowMs: number): number {
  return windowMs === 0 ? 0 : windowMs + Math.min(windowMs / 10, 5_000);
}

/** What the window needs of a queued operation: when it arrived, and what it waited so far. */
export interface WindowWaiter {
  readonly queuedAt: number;
  windowWaitMs?: number;
}

/**
 * The push window, one of the writer's pieces (ADR 0005's addendum on push pacing): a push starts
 * at least `pushSpacingMs(windowMs)` after the start of the last push the remote saw. `heldSince`:
 * since when the chain has been waiting for the current window; `openedAt`: when the last window
 * the chain waited for opened (operations queued before it could not be pushed earlier, so their
 * wait for the remote counts from there).
 */
export class PushWindow {
  private lastPushAt = Number.NEGATIVE_INFINITY;
  private heldSince: number | undefined;
  private opened = Number.NEGATIVE_INFINITY;

  constructor(readonly windowMs: number) {}

  get paced(): boolean {
    return this.windowMs > 0;
  }

  /** performance.now() when the next push may start. */
  get opensAt(): number {
    return this.lastPushAt + pushSpacingMs(this.windowMs);
  }

  /** When the last window the chain waited for opened. */
  get openedAt(): number {
    return this.opened;
  }

  /** A push the remote saw (accepted, refused by a hook, or in doubt) started at `startedAt`. */
  counted(startedAt: number): void {
    this.lastPushAt = startedAt;
  }

  /** The chain starts (or goes on) waiting for the window. */
  hold(now: number): void {
    this.heldSince ??= now;
  }

  /**
   * The window opened at `now` for `waiters` (the operations on the chain): each counts what it
   * waited for it. No-op when the chain was not held.
   */
  open(now: number, waiters: readonly WindowWaiter[]): void {
    if (this.heldSince === undefined) return;
    for (const w of waiters) w.windowWaitMs = (w.windowWaitMs ?? 0) + now - Math.max(w.queuedAt, this.heldSince);
    this.heldSince = undefined;
    this.opened = now;
  }
}
