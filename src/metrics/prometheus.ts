import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { Labels, Metrics } from "./types.js";

/** Metrics over a prom-client Registry, plus what the /metrics endpoint needs. */
export interface PrometheusMetrics extends Metrics {
  /** Content-Type of the exposition text. */
  readonly contentType: string;
  /** Runs the collect hooks, then renders the registry (Prometheus text format). */
  exposition(): Promise<string>;
}

/**
 * The prom-client implementation of `Metrics`. The registry is the caller's (created in the entry
 * point, never prom-client's global one), so two brokers in one process (tests) do not mix.
 */
export function createPrometheusMetrics(registry: Registry): PrometheusMetrics {
  const hooks: (() => void | Promise<void>)[] = [];
  let inflight: Promise<string> | undefined;
  const names = (labelNames: readonly string[] | undefined): string[] => [...(labelNames ?? [])];
  return {
    counter(name, help, labelNames) {
      const c = new Counter({ name, help, labelNames: names(labelNames), registers: [registry] });
      return { inc: (labels?: Labels, value = 1) => (labels ? c.inc(labels, value) : c.inc(value)) };
    },
    gauge(name, help, labelNames) {
      const g = new Gauge({ name, help, labelNames: names(labelNames), registers: [registry] });
      return {
        set: (value: number, labels?: Labels) => (labels ? g.set(labels, value) : g.set(value)),
        reset: () => g.reset(),
      };
    },
    histogram(name, help, labelNames, buckets) {
      const h = new Histogram({ name, help, labelNames: names(labelNames), registers: [registry], ...(buckets ? { buckets: [...buckets] } : {}) });
      return { observe: (value: number, labels?: Labels) => (labels ? h.observe(labels, value) : h.observe(value)) };
    },
    onCollect(fill) {
      hooks.push(fill);
    },
    contentType: registry.contentType,
    exposition() {
      // One collection at a time: scrapes that arrive meanwhile share it (a slow first fill,
      // e.g. a cold fold of a large repository, must not be started again by each scrape).
      inflight ??= (async () => {
        try {
          for (const fill of hooks) await fill();
          return await registry.metrics();
        } finally {
          inflight = undefined;
        }
      })();
      return inflight;
    },
  };
}
