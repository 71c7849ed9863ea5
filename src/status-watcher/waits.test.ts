import { describe, expect, it } from "vitest";
import type { OperationEntry } from "../repo/index.js";
import type { LiveCluster } from "./live-cluster.js";
import type { OperationStatus } from "./types.js";
import { bindStep, poll } from "./waits.js";

const bind: OperationEntry = { id: "op-1", action: "bind", at: "2026-03-01T10:00:00Z" };

describe("bindStep", () => {
  it("done with the credentials once the bind succeeded; they are read only then", () => {
    let reads = 0;
    const result = () => ({ credentials: { user: `u${++reads}` } });
    expect(bindStep({ state: "succeeded" }, bind, result)).toEqual({ done: { state: "succeeded", result: { credentials: { user: "u1" } } } });
    bindStep({ state: "in progress" }, bind, result);
    bindStep({ state: "failed" }, bind, result);
    expect(reads).toBe(1);
  });

  it("done when it failed, pending while in progress, each saying why", () => {
    expect(bindStep({ state: "failed", description: "quota" }, bind, () => ({}))).toEqual({ done: { state: "failed", description: "quota" } });
    expect(bindStep({ state: "in progress", description: "waiting for the Secret" }, bind, () => ({}))).toEqual({
      pending: { state: "in progress", description: "waiting for the Secret" },
    });
    expect(bindStep({ state: "in progress" }, bind, () => ({}))).toEqual({ pending: { state: "in progress", description: "bind in progress" } });
    expect(bindStep({ state: "failed" }, bind, () => ({}))).toEqual({ done: { state: "failed", description: "bind failed" } });
  });
});

/** A cluster whose changes the test makes. */
function changingCluster() {
  const listeners = new Set<() => void>();
  const live = {
    onChange(listener: () => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  } as unknown as LiveCluster;
  return { live, change: () => [...listeners].forEach((l) => l()), listening: () => listeners.size };
}

describe("poll", () => {
  it("answers at once when the first step is done", async () => {
    await expect(poll(() => undefined, 60_000, () => ({ done: "succeeded" }))).resolves.toBe("succeeded");
  });

  it("steps again on each change of the cluster until done, and stops listening", async () => {
    const cluster = changingCluster();
    const states: OperationStatus["state"][] = ["in progress", "in progress", "succeeded"];
    let steps = 0;
    const done = poll(() => cluster.live, 600_000, () => {
      const state = states[steps++]!;
      return state === "succeeded" ? { done: state } : { pending: state };
    });
    for (let i = 0; i < 2; i++) {
      await expect.poll(() => cluster.listening()).toBe(1);
      cluster.change();
    }
    await expect(done).resolves.toBe("succeeded");
    expect(steps).toBe(3);
    expect(cluster.listening()).toBe(0);
  });

  it("answers what the step last said while pending once the bound passed, or when the cluster is no longer watched", async () => {
    const cluster = changingCluster();
    await expect(poll(() => cluster.live, 0, () => ({ pending: "in progress" }))).resolves.toBe("in progress");
    await expect(poll(() => undefined, 600_000, () => ({ pending: "gone" }))).resolves.toBe("gone");
    expect(cluster.listening()).toBe(0);
  });
});
