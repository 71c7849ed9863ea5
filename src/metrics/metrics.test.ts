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
    gitwriter.pushes.inc({ store: "control", result: "accepted" });
    expect(r.updates).toEqual([["gitops_broker_git_pushes_total", [{ store: "control", result: "accepted" }]]]);
  });

  it("labels every git writer series with the store, and keeps one last-fetch age per store", async () => {
    const m = createPrometheusMetrics(new Registry());
    let clock = 1_000;
    const { gitwriter } = createInstruments(m, () => clock);
    gitwriter.fetched.mark({ store: "control" });
    clock = 5_000;
    gitwriter.fetched.mark({ store: "eu" });
    gitwriter.pushes.inc({ store: "eu", result: "accepted" });
    gitwriter.pushWindowWaitSeconds.observe(4, { store: "eu" });
    clock = 11_000;
    const text = await m.exposition();
    // Each store's age counts from its own last contact: 10 s and 6 s.
    expect(text).toContain('gitops_broker_git_last_fetch_age_seconds{store="control"} 10');
    expect(text).toContain('gitops_broker_git_last_fetch_age_seconds{store="eu"} 6');
    expect(text).toContain('gitops_broker_git_pushes_total{store="eu",result="accepted"} 1');
    expect(text).toContain('gitops_broker_git_push_window_wait_seconds_bucket{le="5",store="eu"} 1');
    expect(text).toContain('gitops_broker_git_push_window_wait_seconds_bucket{le="2.5",store="eu"} 0');
    // A store marked again ages from then; the other keeps its age.
    gitwriter.fetched.mark({ store: "control" });
    clock = 12_000;
    const later = await m.exposition();
    expect(later).toContain('gitops_broker_git_last_fetch_age_seconds{store="control"} 1');
    expect(later).toContain('gitops_broker_git_last_fetch_age_seconds{store="eu"} 7');
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
