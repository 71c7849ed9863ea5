import { GitWriterClosedError } from "../errors/index.js";

export type LifecycleState = "new" | "open" | "closing" | "closed";

/**
 * The lifecycle, one of the writer's pieces: new until its start went through, open, closing while
 * close() drains what is queued, closed. One start at a time (a failed start may be tried again);
 * a close() during the start leaves the writer closed when the start ends.
 */
export class Lifecycle {
  private current: LifecycleState = "new";
  private starting: Promise<void> | undefined;

  get state(): LifecycleState {
    return this.current;
  }

  /** Runs `start` unless a start is under way or went through (then: its promise); a failed one may be tried again. */
  start(start: () => Promise<void>): Promise<void> {
    this.starting ??= start().catch((error: unknown) => {
      this.starting = undefined;
      throw error;
    });
    return this.starting;
  }

  /** The start went through: open, unless close() was called meanwhile. */
  opened(): void {
    if (this.current === "new") this.current = "open";
  }

  /** Why a writer that is not open refuses: not started yet, or closed. */
  notOpenError(): GitWriterClosedError {
    return new GitWriterClosedError(this.current === "new" ? "git writer not started" : "git writer is closed");
  }

  /**
   * Closes: an open writer is closing while `drain` runs, then closed (resolves true); one that
   * never opened is closed at once, after a start under way ended (false), and a closed one stays
   * so (false).
   */
  async close(drain: () => Promise<void>): Promise<boolean> {
    if (this.current === "closed") return false;
    if (this.current === "new") {
      this.current = "closed";
      await this.starting?.catch(() => undefined);
      return false;
    }
    this.current = "closing";
    await drain();
    this.current = "closed";
    return true;
  }
}
