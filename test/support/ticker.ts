/**
 * A timer a test drives by hand, for a component that waits `delay(ms)` between passes of a loop
 * (records GC): `tick()` ends the current wait and resolves once the loop waits again, i.e. once
 * the pass it started has settled. No sleeping, no wall-clock budget.
 */
export interface ManualTicker {
  /** The component's delay function. */
  delay(ms: number): Promise<void>;
  /** Let one pass run; resolves when the loop is waiting again. */
  tick(): Promise<void>;
  /** Every wait asked for, in ms. */
  readonly waits: number[];
}

export function manualTicker(): ManualTicker {
  let release: (() => void) | undefined;
  let waiting: (() => void)[] = [];
  const waits: number[] = [];
  const untilWaiting = () => (release ? Promise.resolve() : new Promise<void>((resolve) => waiting.push(resolve)));
  return {
    waits,
    delay(ms) {
      waits.push(ms);
      return new Promise<void>((resolve) => {
        release = resolve;
        const woken = waiting;
        waiting = [];
        for (const w of woken) w();
      });
    },
    async tick() {
      await untilWaiting();
      const go = release!;
      release = undefined;
      go();
      await untilWaiting();
    },
  };
}
