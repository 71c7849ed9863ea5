/**
 * The work loop, one of the writer's pieces: at most one loop at a time runs `turn` while
 * `hasWork` says so; a turn that throws is handed to `failed` and the loop goes on. `kick()`
 * starts a loop unless one runs (and a loop that ends finds work that came in as it ended); a loop
 * waiting in `nap()` (for the push window, or beside a push in flight) is woken by `wake()` when
 * an operation or a fetch arrives.
 */
export class WorkLoop {
  private running: Promise<void> | undefined;
  /** Ends the nap under way, if any. */
  private wakeUp: (() => void) | undefined;

  constructor(
    private readonly deps: {
      hasWork: () => boolean;
      turn: () => Promise<void>;
      failed: (error: unknown) => void;
    },
  ) {}

  kick(): void {
    if (this.running !== undefined) return;
    this.running = this.run().finally(() => {
      this.running = undefined;
      if (this.deps.hasWork()) this.kick();
    });
  }

  /** Ends the loop's nap, if it is in one. */
  wake(): void {
    this.wakeUp?.();
  }

  /** Resolves once no loop runs. */
  async idle(): Promise<void> {
    while (this.running !== undefined) await this.running;
  }

  /** Waits `ms` (no timer when it is infinite), or until `until` settles, or until wake(). */
  async nap(ms: number, until?: Promise<unknown>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const woken = new Promise<void>((resolve) => {
      this.wakeUp = resolve;
      if (Number.isFinite(ms)) timer = setTimeout(resolve, Math.max(0, ms));
    });
    await (until === undefined ? woken : Promise.race([until, woken]));
    clearTimeout(timer);
    this.wakeUp = undefined;
  }

  private async run(): Promise<void> {
    while (this.deps.hasWork()) {
      try {
        await this.deps.turn();
      } catch (error) {
        this.deps.failed(error);
      }
    }
  }
}
