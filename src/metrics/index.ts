/**
 * Metrics, injected like the logger. A component receives the few instruments it updates (its
 * `...Instruments` below), built in one place (`createInstruments`) from a `Metrics` factory that
 * the entry point passes in; by default a no-op. A prom-client implementation of `Metrics` (over a
 * Registry created in the entry point, never the global one) is all that exporting them takes.
 */

export type Labels = Readonly<Record<string, string>>;

export interface Counter {
  inc(labels?: Labels, value?: number): void;
}

export interface Gauge {
  set(value: number, labels?: Labels): void;
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
}

const NOOP_COUNTER: Counter = { inc: () => undefined };
const NOOP_GAUGE: Gauge = { set: () => undefined };
const NOOP_HISTOGRAM: Histogram = { observe: () => undefined };

/** Metrics that record nothing: the default of every component. */
export const noopMetrics: Metrics = {
  counter: () => NOOP_COUNTER,
  gauge: () => NOOP_GAUGE,
  histogram: () => NOOP_HISTOGRAM,
};

/** The OSB HTTP surface (createApp). */
export interface BrokerInstruments {
  /** Requests answered, by method, route pattern and status code. */
  requests: Counter;
  /** Time to answer, by method and route pattern. */
  requestSeconds: Histogram;
}

/** The git writer. */
export interface GitWriterInstruments {
  /** Pushes, by result (accepted, rejected, unreachable). */
  pushes: Counter;
  /** Time of one push. */
  pushSeconds: Histogram;
  /** Operations per pushed batch. */
  batchOperations: Histogram;
  /** Operations waiting in the queue. */
  queuedOperations: Gauge;
  /** Commits a history rewrite erased from the branch that are not on it again (0: none). */
  lostCommits: Gauge;
}

/** The status watcher. */
export interface StatusWatcherInstruments {
  /** Watch streams (re)started after an error or a 410, by cluster. */
  watchRestarts: Counter;
}

/** The reconciler. */
export interface ReconcileInstruments {
  /** Re-renders, by reason and result (rendered, busy, gone, unchanged, failed). */
  rerenders: Counter;
  /** Re-render requests waiting for the feeder. */
  queued: Gauge;
}

export interface Instruments {
  broker: BrokerInstruments;
  gitwriter: GitWriterInstruments;
  statusWatcher: StatusWatcherInstruments;
  reconcile: ReconcileInstruments;
}

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const BATCH = [1, 2, 5, 10, 20, 50, 100, 200];

/** Every instrument of the broker, registered in this one place. */
export function createInstruments(metrics: Metrics = noopMetrics): Instruments {
  return {
    broker: {
      requests: metrics.counter("gitops_broker_http_requests_total", "HTTP requests answered", ["method", "route", "status"]),
      requestSeconds: metrics.histogram("gitops_broker_http_request_duration_seconds", "Time to answer an HTTP request", ["method", "route"], SECONDS),
    },
    gitwriter: {
      pushes: metrics.counter("gitops_broker_git_pushes_total", "Pushes to the Git remote", ["result"]),
      pushSeconds: metrics.histogram("gitops_broker_git_push_duration_seconds", "Time of one push", [], SECONDS),
      batchOperations: metrics.histogram("gitops_broker_git_batch_operations", "Operations per pushed batch", [], BATCH),
      queuedOperations: metrics.gauge("gitops_broker_git_queued_operations", "Operations waiting in the write queue"),
      lostCommits: metrics.gauge(
        "gitops_broker_git_history_lost_commits",
        "Commits a force-push erased from the branch that are not on it again (0: none)",
      ),
    },
    statusWatcher: {
      watchRestarts: metrics.counter("gitops_broker_watch_restarts_total", "Kubernetes watch streams restarted", ["cluster"]),
    },
    reconcile: {
      rerenders: metrics.counter("gitops_broker_rerenders_total", "Re-renders of instances", ["reason", "result"]),
      queued: metrics.gauge("gitops_broker_rerenders_queued", "Re-render requests waiting"),
    },
  };
}

/** Instruments that record nothing, for a component built without any. */
export const noopInstruments: Instruments = createInstruments(noopMetrics);
