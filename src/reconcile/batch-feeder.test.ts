import { describe, expect, it, vi } from "vitest";
import { createBatchFeeder, type BatchFeederOptions } from "./batch-feeder.js";

/** A feeder whose runs the test releases, with everything it reports recorded. */
function setUp(overrides: Partial<BatchFeederOptions<string>> = {}) {
  const runs: string[] = [];
  const held: Array<() => void> = [];
  const pauses: number[] = [];
  const queued: number[] = [];
  const progress: Array<{ done: number; left: number }> = [];
  let ended = 0;
  const feeder = createBatchFeeder<string>({
    batchSize: 2,
    maxPerSecond: 4,
    clock: () => 0,
    pause: async (ms) => void pauses.push(ms),
    run: (item) => {
      runs.push(item);
      return new Promise<void>((resolve) => held.push(resolve));
    },
    queued: (size) => void queued.push(size),
    progress: () => (p) => void progress.push(p),
    ended: () => {
      ended++;
    },
    ...overrides,
  });
  const release = () => held.splice(0).forEach((resolve) => resolve());
  return { feeder, runs, release, pauses, queued, progress, ended: () => ended };
}

describe("the batch feeder", () => {
  it("feeds what was added in one go in batches, in order, one item per key, pausing between batches for the rate", async () => {
    const t = setUp();
    for (const [key, item] of [["a", "a1"], ["b", "b1"], ["c", "c1"], ["a", "a2"], ["d", "d1"]] as const) t.feeder.add(key, item);
    expect(t.queued).toEqual([1, 2, 3, 3, 4]);
    // The second item for "a" replaced the first, in its place.
    await vi.waitFor(() => expect(t.runs).toEqual(["a2", "b1"]));
    t.release();
    await vi.waitFor(() => expect(t.runs).toEqual(["a2", "b1", "c1", "d1"]));
    t.release();
    await t.feeder.settled();
    await vi.waitFor(() => expect(t.ended()).toBe(1));
    // 2 items at 4 per second take 500 ms; the clock says no time passed. No pause after the last batch.
    expect(t.pauses).toEqual([500]);
    expect(t.progress).toEqual([{ done: 2, left: 2 }, { done: 4, left: 0 }]);
    expect(t.queued).toEqual([1, 2, 3, 3, 4, 2, 0]);
    expect(t.feeder.busy()).toBe(false);
  });

  it("pauses only for what the batch did not already take", async () => {
    let now = 0;
    const t = setUp({
      clock: () => now,
      run: async () => {
        now += 200;
      },
    });
    for (const key of ["a", "b", "c"]) t.feeder.add(key, key);
    await vi.waitFor(() => expect(t.ended()).toBe(1));
    // Each item takes 200 ms of the clock: a batch of 2 takes 400 ms of its 500 ms at 4 per second. No pause after the last batch.
    expect(t.pauses).toEqual([100]);
  });

  it("is busy while something is queued or fed; clear forgets what is queued, not the batch in flight", async () => {
    const t = setUp({ batchSize: 1 });
    t.feeder.add("a", "a");
    t.feeder.add("b", "b");
    expect(t.feeder.busy()).toBe(true);
    await vi.waitFor(() => expect(t.runs).toEqual(["a"]));
    t.feeder.clear();
    expect(t.queued.at(-1)).toBe(0);
    expect(t.feeder.busy()).toBe(true);
    t.release();
    await t.feeder.settled();
    expect(t.runs).toEqual(["a"]);
    expect(t.feeder.busy()).toBe(false);
  });

  it("after close adds nothing and starts no further batch", async () => {
    const t = setUp({ batchSize: 1 });
    t.feeder.add("a", "a");
    t.feeder.add("b", "b");
    await vi.waitFor(() => expect(t.runs).toEqual(["a"]));
    t.feeder.close();
    t.feeder.add("c", "c");
    t.release();
    await t.feeder.settled();
    expect(t.runs).toEqual(["a"]);
  });

  it("feeds what was added after a run ended in a new run", async () => {
    const t = setUp();
    t.feeder.add("a", "a");
    await vi.waitFor(() => expect(t.runs).toEqual(["a"]));
    t.release();
    await vi.waitFor(() => expect(t.ended()).toBe(1));
    t.feeder.add("b", "b");
    await vi.waitFor(() => expect(t.runs).toEqual(["a", "b"]));
    t.release();
    await vi.waitFor(() => expect(t.ended()).toBe(2));
    expect(t.progress).toEqual([{ done: 1, left: 0 }, { done: 1, left: 0 }]);
  });
});
