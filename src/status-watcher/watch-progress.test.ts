import { describe, expect, it } from "vitest";
import { KubeApiError } from "../errors/index.js";
import { asFailure, createWatchProgress, retryDelayMs } from "./watch-progress.js";

describe("the progress of a watch cache", () => {
  it("starts unsynced, with a list to make and no resourceVersion", () => {
    const progress = createWatchProgress();
    expect(progress.needList).toBe(true);
    expect(progress.lastFailure).toBeUndefined();
    expect(progress.state()).toEqual({ synced: false, relists: 0, watchRestarts: 0, resourceVersion: "" });
  });

  it("a list: synced at its time, resumes from its resourceVersion, needs no list; every list after the first is a re-list", () => {
    const progress = createWatchProgress();
    const first = new Date("2026-01-01T00:00:00Z");
    expect(progress.listed("10", first)).toBe(false);
    expect(progress.needList).toBe(false);
    expect(progress.state()).toEqual({ synced: true, relists: 0, watchRestarts: 0, resourceVersion: "10", lastSyncAt: first });
    progress.resourceVersion = "12";
    progress.needList = true;
    const second = new Date("2026-01-01T00:05:00Z");
    expect(progress.listed("20", second)).toBe(true);
    expect(progress.state()).toEqual({ synced: true, relists: 1, watchRestarts: 0, resourceVersion: "20", lastSyncAt: second });
  });

  it("counts every watch after the first as a restart", () => {
    const progress = createWatchProgress();
    progress.watching();
    expect(progress.state().watchRestarts).toBe(0);
    progress.watching();
    progress.watching();
    expect(progress.state().watchRestarts).toBe(2);
  });

  it("a failure: shown in state, kept as lastFailure, counted; the wait doubles from 1 s to 15 s at the lowest jitter", () => {
    const progress = createWatchProgress();
    const waits: number[] = [];
    for (let i = 1; i <= 6; i++) {
      const { failure, failures, delayMs } = progress.failed(new KubeApiError(`refused ${i}`, { status: 503 }), () => 0);
      expect(failures).toBe(i);
      expect(progress.lastFailure).toBe(failure);
      expect(progress.state().lastError).toBe(`refused ${i}`);
      waits.push(delayMs);
    }
    // Steps of 2 s doubling, capped at 30 s; equal jitter waits half of a step at random() = 0.
    expect(waits).toEqual([1_000, 2_000, 4_000, 8_000, 15_000, 15_000]);
  });

  it("a success (a list, or a watch the server answered) forgets the failures: the next wait is the first step again", () => {
    for (const succeed of [(p: ReturnType<typeof createWatchProgress>) => p.succeeded(), (p: ReturnType<typeof createWatchProgress>) => p.listed("5", new Date(0))]) {
      const progress = createWatchProgress();
      progress.failed(new Error("down"), () => 0);
      progress.failed(new Error("down"), () => 0);
      succeed(progress);
      expect(progress.lastFailure).toBeUndefined();
      expect(progress.state().lastError).toBeUndefined();
      expect(progress.failed(new Error("down"), () => 0)).toMatchObject({ failures: 1, delayMs: 1_000 });
    }
  });
});

describe("retryDelayMs", () => {
  it("waits what the server's Retry-After says, whatever the failures", () => {
    expect(retryDelayMs(new KubeApiError("too many", { status: 429, retryAfterMs: 7_000 }), 5, () => 0)).toBe(7_000);
  });

  it("else backs off: between half and all of the step", () => {
    expect(retryDelayMs(new Error("reset"), 1, () => 0)).toBe(1_000);
    expect(retryDelayMs(new Error("reset"), 1, () => 0.5)).toBe(1_500);
    expect(retryDelayMs(new KubeApiError("unavailable", { status: 503 }), 3, () => 0.5)).toBe(6_000);
  });
});

describe("asFailure", () => {
  it("keeps an Error, and wraps anything else in a KubeApiError with it as the cause", () => {
    const error = new Error("x");
    expect(asFailure(error)).toBe(error);
    const wrapped = asFailure("a string");
    expect(wrapped).toBeInstanceOf(KubeApiError);
    expect(wrapped.message).toBe("watch cache failed");
    expect(wrapped.cause).toBe("a string");
  });
});
