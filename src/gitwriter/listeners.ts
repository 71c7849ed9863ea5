import type { PieceLogger } from "./history-watch.js";

/**
 * Listeners, one of the writer's pieces: who listens for one kind of event (a new remote tip, an
 * accepted push). A listener that throws is logged ("<name> listener failed") and the others are
 * still called: a listener's failure is never the writer's.
 */
export class Listeners<A extends unknown[]> {
  private readonly listeners = new Set<(...args: A) => void>();
  private readonly failed: string;

  constructor(
    private readonly logger: Pick<PieceLogger, "error">,
    /** The method that adds them, in the log line: "onTip", "onPushed". */
    name: string,
  ) {
    this.failed = `${name} listener failed`;
  }

  get size(): number {
    return this.listeners.size;
  }

  /** Adds `listener`; returns what removes it. */
  add(listener: (...args: A) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(...args: A): void {
    for (const listener of this.listeners) {
      try {
        listener(...args);
      } catch (error) {
        this.logger.error({ err: error }, this.failed);
      }
    }
  }
}
