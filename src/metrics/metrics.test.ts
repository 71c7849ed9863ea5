import { describe, expect, it } from "vitest";
import { createInstruments, noopMetrics, type Metrics } from "./index.js";

/** A factory that records what is registered and every update, by instrument name. */
function recording(): { metrics: Metrics; registered: string[]; updates: [string, unknown[]][] } {
  const registered: string[] = [];
  const updates: [string, unknown[]][] = [];
  const instrument = (name: string) => {
    registered.push(name);
    const record = (...args: unknown[]) => void updates.push([name, args]);
    return { inc: record, set: record, observe: record, reset: record };
  };
  return { metrics: { counter: instrument, gauge: instrument, histogram: instrument, onCollect: () => undefined }, registered, updates };
}

describe("instruments", () => {
  it("registers every instrument once, under a Prometheus-style name", () => {
    const r = recording();
    createInstruments(r.metrics);
    expect(r.registered.length).toBeGreaterThan(0);
    expect(new Set(r.registered).size).toBe(r.registered.length);
    for (const name of r.registered) expect(name).toMatch(/^gitops_broker_[a-z_]+$/);
  });

  it("hands each component the instruments of the factory it was given", () => {
    const r = recording();
    const { gitwriter } = createInstruments(r.metrics);
    gitwriter.pushes.inc({ result: "accepted" });
    expect(r.updates).toEqual([["gitops_broker_git_pushes_total", [{ result: "accepted" }]]]);
  });

  it("records nothing by default", () => {
    const { reconcile } = createInstruments();
    expect(() => reconcile.rerenders.inc({ reason: "manual", result: "rendered" })).not.toThrow();
    expect(noopMetrics.gauge("x", "y")).toBe(noopMetrics.gauge("z", "w"));
  });
});
