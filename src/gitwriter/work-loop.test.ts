import { afterEach, describe, expect, it, vi } from "vitest";
import { WorkLoop } from "./work-loop.js";

/** A loop whose work is `queue`: a turn takes one item (after a turn of the event loop) and does it. */
function setup() {
  const queue: (() => void)[] = [];
  const failures: unknown[] = [];
  let active = 0;
  let mostActive = 0;
  const loop = new WorkLoop({
    hasWork: () => queue.length > 0,
    turn: async () => {
      active += 1;
      mostActive = Math.max(mostActive, active);
      await new Promise((resolve) => setImmediate(resolve));
      active -= 1;
      queue.shift()!();
    },
    failed: (error) => void failures.push(error),
  });
  return { loop, queue, failures, mostActive: () => mostActive };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("WorkLoop", () => {
  it("runs one turn at a time while there is work, however often it is kicked", async () => {
    const { loop, queue, mostActive } = setup();
    const done: number[] = [];
    for (const n of [1, 2, 3]) {
      queue.push(() => void done.push(n));
      loop.kick();
    }
    await loop.idle();
    expect(done).toEqual([1, 2, 3]);
    expect(mostActive()).toBe(1);
  });

  it("hands a turn that throws to failed and goes on with the rest", async () => {
    const { loop, queue, failures } = setup();
    const boom = new Error("boom");
    const done: string[] = [];
    queue.push(() => {
      throw boom;
    });
    queue.push(() => void done.push("after"));
    loop.kick();
    await loop.idle();
    expect(failures).toEqual([boom]);
    expect(done).toEqual(["after"]);
  });

  it("starts a loop again for work that came in as the last one ended", async () => {
    const done: string[] = [];
    const queue: (() => void)[] = [() => void done.push("first")];
    let arriveLate = true;
    const loop = new WorkLoop({
      hasWork: () => {
        if (queue.length === 0 && arriveLate) {
          // The loop found nothing and is ending: work arrives before it has ended.
          arriveLate = false;
          queueMicrotask(() => queue.push(() => void done.push("late")));
        }
        return queue.length > 0;
      },
      turn: async () => queue.shift()!(),
      failed: () => undefined,
    });
    loop.kick();
    await loop.idle();
    await loop.idle();
    expect(done).toEqual(["first", "late"]);
  });

  it("a nap ends at its time, at wake(), or when what it waits beside settles, and leaves no timer", async () => {
    vi.useFakeTimers();
    const loop = new WorkLoop({ hasWork: () => false, turn: async () => undefined, failed: () => undefined });
    loop.wake(); // no nap: nothing to end
    let ended = false;
    const timed = loop.nap(1_000).then(() => void (ended = true));
    await vi.advanceTimersByTimeAsync(999);
    expect(ended).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await timed;
    expect(ended).toBe(true);

    const woken = loop.nap(60_000);
    loop.wake();
    await woken;
    expect(vi.getTimerCount()).toBe(0);

    let settle: () => void = () => undefined;
    const beside = loop.nap(Number.POSITIVE_INFINITY, new Promise<void>((resolve) => (settle = resolve)));
    expect(vi.getTimerCount()).toBe(0); // no timer for an infinite nap
    settle();
    await beside;
  });
});
