import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FetchWaiters } from "./fetch-waiters.js";

let clock = 0;
const now = () => clock;

beforeEach(() => {
  vi.useFakeTimers();
  clock = 1_000;
});

afterEach(() => {
  vi.useRealTimers();
});

describe("FetchWaiters", () => {
  it("a read is answered by the fetch that takes it, before its time", async () => {
    const waiters = new FetchWaiters<string>(5_000, now);
    expect(waiters.waiting).toBe(false);
    const read = waiters.read(() => new Error("late"));
    expect(waiters.waiting).toBe(true);
    const { reads, refusals } = waiters.take();
    expect(waiters.waiting).toBe(false);
    expect(refusals).toEqual([]);
    expect(reads.map((r) => r.deadline)).toEqual([6_000]);
    reads[0]!.resolve("t1");
    await expect(read).resolves.toBe("t1");
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(10_000); // its timer is gone: nothing rejects it later
  });

  it("a read not answered within the timeout is rejected with the timeout's error; a fetch after that does not take it", async () => {
    const waiters = new FetchWaiters<string>(5_000, now);
    const timedOut = new Error("no answer from the remote within 5 s for a read");
    const read = waiters.read(() => timedOut);
    const settled = read.catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(4_999);
    waiters.read(() => new Error("other")).catch(() => undefined);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled).toBe(timedOut);
    expect(waiters.take().reads).toHaveLength(1); // the second one only
  });

  it("a read the fetch fails is rejected with the fetch's error", async () => {
    const waiters = new FetchWaiters<string>(5_000, now);
    const read = waiters.read(() => new Error("late"));
    const failure = new Error("unreachable");
    waiters.take().reads[0]!.reject(failure);
    await expect(read).rejects.toBe(failure);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("refusals wait for the fetch in order; those whose time is up are dropped to be answered", () => {
    const waiters = new FetchWaiters<string>(5_000, now);
    for (const e of ["a", "b", "c"]) waiters.confirm(e);
    expect(waiters.waiting).toBe(true);
    expect(waiters.refused).toEqual(["a", "b", "c"]);
    expect(waiters.dropLate((e) => e === "z")).toEqual([]);
    expect(waiters.dropLate((e) => e !== "b")).toEqual(["a", "c"]);
    expect(waiters.take()).toEqual({ reads: [], refusals: ["b"] });
    expect(waiters.waiting).toBe(false);
    expect(waiters.take()).toEqual({ reads: [], refusals: [] });
  });
});
