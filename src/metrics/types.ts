/** The metric instruments components update, and the factory that creates them (see index.ts). */

export type Labels = Readonly<Record<string, string>>;

export interface Counter {
  inc(labels?: Labels, value?: number): void;
}

export interface Gauge {
  set(value: number, labels?: Labels): void;
  /** Forget every label set (a gauge refilled at each scrape drops the series that went away). */
  reset(): void;
}

export interface Histogram {
  /** Seconds for durations (Prometheus base units). */
  observe(value: number, labels?: Labels): void;
}

/** Creates named instruments; names follow Prometheus conventions (`gitops_broker_..._total`). */
export interface Metrics {
  counter(name: string, help: string, labelNames?: readonly string[]): Counter;
  gauge(name: string, help: string, labelNames?: readonly string[]): Gauge;
  histogram(name: string, help: string, labelNames?: readonly string[], buckets?: readonly number[]): Histogram;
  /** Run `fill` before each scrape (gauges of derived state: instances per cluster, catalog, ages). */
  onCollect(fill: () => void | Promise<void>): void;
}
