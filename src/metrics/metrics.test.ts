import { describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { createInstruments, createPrometheusMetrics, noopMetrics, type Metrics } from "./index.js";

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

describe("prometheus exposition", () => {
  it("runs the collect hooks once for scrapes that overlap, and again for the next one", async () => {
    const m = createPrometheusMetrics(new Registry());
    const gauge = m.gauge("gitops_broker_test_fills", "fills");
    let fills = 0;
    let release!: () => void;
    m.onCollect(async () => {
      fills++;
      gauge.set(fills);
      await new Promise<void>((r) => (release = r));
    });
    const a = m.exposition();
    const b = m.exposition();
    await new Promise((r) => setTimeout(r, 10));
    release();
    const [ta, tb] = await Promise.all([a, b]);
    expect(fills).toBe(1);
    expect(ta).toBe(tb);
    expect(ta).toContain("gitops_broker_test_fills 1");
    const c = m.exposition();
    await new Promise((r) => setTimeout(r, 10));
    release();
    expect(await c).toContain("gitops_broker_test_fills 2");
  });
});
