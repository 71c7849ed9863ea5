/**
 * Metrics, injected like the logger. A component receives the few instruments it updates (its
 * `...Instruments` below), built in one place (`createInstruments`) from a `Metrics` factory that
 * the entry point passes in; by default a no-op. A prom-client implementation of `Metrics` (over a
 * Registry created in the entry point, never the global one) is all that exporting them takes.
 */

import type { Counter, Gauge, Histogram, Labels, Metrics } from "./types.js";

export type { Counter, Gauge, Histogram, Labels, Metrics } from "./types.js";

const NOOP_COUNTER: Counter = { inc: () => undefined };
const NOOP_GAUGE: Gauge = { set: () => undefined, reset: () => undefined };
const NOOP_HISTOGRAM: Histogram = { observe: () => undefined };

/** Metrics that record nothing: the default of every component. */
export const noopMetrics: Metrics = {
  counter: () => NOOP_COUNTER,
  gauge: () => NOOP_GAUGE,
  histogram: () => NOOP_HISTOGRAM,
  onCollect: () => undefined,
};

/** The OSB HTTP surface (createApp). */
export interface BrokerInstruments {
  /** Requests answered, by method, route pattern and status code. */
  requests: Counter;
  /** Time to answer, by method and route pattern. */
  requestSeconds: Histogram;
  /** OSB writes answered, by kind (provision, update, deprovision, bind, unbind) and outcome (acknowledged, rejected, failed). */
  operations: Counter;
  /** Time from an OSB write's arrival to its acknowledgement (its commit on the remote), by kind. */
  ackSeconds: Histogram;
  /** last_operation answers, by resource (instance, binding) and state (succeeded, failed, in progress, missing: 404 or 410 for what does not exist). */
  lastOperations: Counter;
}

/**
 * The git writers: one set of instruments shared by every writer (one per store), each update
 * labelled with the writer's `store` (the control repository's is "control").
 */
export interface GitWriterInstruments {
  /** Pushes, by store and result (accepted, rejected, unreachable, hook). */
  pushes: Counter;
  /** Time of one push, by store. */
  pushSeconds: Histogram;
  /** Operations per pushed batch, by store. */
  batchOperations: Histogram;
  /** Operations waiting in the queue, by store. */
  queuedOperations: Gauge;
  /** Commits a history rewrite erased from the branch that are not on it again (0: none), by store. */
  lostCommits: Gauge;
  /** The last successful fetch of (or push to) the remote, by store; exported as its age at scrape time. */
  fetched: Age;
  /**
   * Time an acknowledged operation waited for its store's push window (git.minPushIntervalSeconds),
   * by store; observed once per pushed operation, and only by a writer that paces its pushes.
   */
  pushWindowWaitSeconds: Histogram;
  /**
   * 1 when the last contact with the store's remote succeeded, 0 when it failed (a store that has
   * not answered since the broker started included: its requests are answered 503), by store.
   */
  remoteUp: Gauge;
}

/** A moment whose age is exported (seconds), one per label set: a series appears with its first mark. */
export interface Age {
  mark(labels?: Labels): void;
}

/** The status watcher. */
export interface StatusWatcherInstruments {
  /** Watch streams (re)started after an error or a 410, by cluster. */
  watchRestarts: Counter;
  /** Full re-lists after the first list (periodic, or after a 410), by cluster. */
  relists: Counter;
  /** Live-mode clusters: 1 while their watches are listed, 0 after a failed list or watch, by cluster. */
  clusterUp: Gauge;
}

/** What the repository holds (filled at scrape time from the repo view). */
export interface RepoInstruments {
  /** Live instances, by cluster and plan. */
  instances: Gauge;
  /** Live bindings of live instances, by the instance's cluster and plan. */
  bindings: Gauge;
  /** Clusters in the registry, by cluster and schedulable (true/false). */
  clusters: Gauge;
  /** 1 when the catalog and registry loaded without problems, else 0. */
  catalogLoaded: Gauge;
  /** Problems of the last catalog / registry load. */
  catalogProblems: Gauge;
  /** Services and plans served. */
  catalogPlans: Gauge;
  /** 1 for where the catalog served comes from (tip, last-good, partial), 0 for the others, by state. */
  catalogState: Gauge;
  /** The same for the cluster registry. */
  registryState: Gauge;
}

/** The reconciler. */
export interface ReconcileInstruments {
  /** Re-renders, by reason and result (rendered, busy, gone, unchanged, failed). */
  rerenders: Counter;
  /** Re-render requests waiting for the feeder. */
  queued: Gauge;
}

/** Records GC of deprovisioned instances (ADR 0018). */
export interface RecordsInstruments {
  /** Records removed from the tip. */
  collected: Counter;
  /** Records of deprovisioned instances on the tip, by cluster, as of the last GC pass. */
  deleted: Gauge;
}

/** Leader election (src/leader): who does the background work. */
export interface LeaderInstruments {
  /** 1 while this replica holds the Lease (always, without election), 0 otherwise; by identity. */
  leader: Gauge;
  /** This replica gained (acquired) or lost (lost) the Lease. */
  transitions: Counter;
}

/** The nudge of Argo CD / Flux after a push. */
export interface NudgeInstruments {
  /** Nudges, by cluster, way (annotation, webhook) and result (sent, failed, folded into the next). */
  nudges: Counter;
}

export interface Instruments {
  broker: BrokerInstruments;
  gitwriter: GitWriterInstruments;
  statusWatcher: StatusWatcherInstruments;
  reconcile: ReconcileInstruments;
  records: RecordsInstruments;
  nudge: NudgeInstruments;
  repo: RepoInstruments;
  leader: LeaderInstruments;
}

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const BATCH = [1, 2, 5, 10, 20, 50, 100, 200];
/** Waits for a push window: git.minPushIntervalSeconds is at most 3600. */
const WINDOW_SECONDS = [0.1, 0.5, 1, 2.5, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600];

/** A gauge of ages, one per label set (e.g. one per store), each the time since its last mark. */
function age(metrics: Metrics, name: string, help: string, labelNames: readonly string[], now: () => number): Age {
  const gauge = metrics.gauge(name, help, labelNames);
  const marks = new Map<string, { labels: Labels; at: number }>();
  metrics.onCollect(() => {
    for (const { labels, at } of marks.values()) gauge.set(Math.max(0, (now() - at) / 1000), labels);
  });
  return {
    mark: (labels = {}) => {
      const key = JSON.stringify(labelNames.map((n) => labels[n] ?? ""));
      marks.set(key, { labels, at: now() });
    },
  };
}

/** Every instrument of the broker, registered in this one place. `now` (ms) is the clock of ages. */
export function createInstruments(metrics: Metrics = noopMetrics, now: () => number = Date.now): Instruments {
  return {
    broker: {
      requests: metrics.counter("gitops_broker_http_requests_total", "HTTP requests answered", ["method", "route", "status"]),
      requestSeconds: metrics.histogram("gitops_broker_http_request_duration_seconds", "Time to answer an HTTP request", ["method", "route"], SECONDS),
      operations: metrics.counter("gitops_broker_operations_total", "OSB writes answered, by kind and outcome", ["kind", "outcome"]),
      ackSeconds: metrics.histogram(
        "gitops_broker_operation_ack_duration_seconds",
        "Time from an OSB write's arrival to its acknowledgement (commit on the remote)",
        ["kind"],
        SECONDS,
      ),
      lastOperations: metrics.counter("gitops_broker_last_operation_answers_total", "last_operation answers, by resource and state", ["resource", "state"]),
    },
    gitwriter: {
      pushes: metrics.counter("gitops_broker_git_pushes_total", "Pushes to the Git remote, by store and result", ["store", "result"]),
      pushSeconds: metrics.histogram("gitops_broker_git_push_duration_seconds", "Time of one push", ["store"], SECONDS),
      batchOperations: metrics.histogram("gitops_broker_git_batch_operations", "Operations per pushed batch", ["store"], BATCH),
      queuedOperations: metrics.gauge("gitops_broker_git_queued_operations", "Operations waiting in the write queue", ["store"]),
      fetched: age(metrics, "gitops_broker_git_last_fetch_age_seconds", "Seconds since the last successful fetch of (or push to) the remote", ["store"], now),
      lostCommits: metrics.gauge(
        "gitops_broker_git_history_lost_commits",
        "Commits a force-push erased from the branch that are not on it again (0: none)",
        ["store"],
      ),
      pushWindowWaitSeconds: metrics.histogram(
        "gitops_broker_git_push_window_wait_seconds",
        "Time a pushed operation waited for its store's push window (git.minPushIntervalSeconds)",
        ["store"],
        WINDOW_SECONDS,
      ),
      remoteUp: metrics.gauge("gitops_broker_git_remote_up", "1 when the last contact with the store's Git remote succeeded, 0 when it failed or the store has not answered since start", ["store"]),
    },
    statusWatcher: {
      watchRestarts: metrics.counter("gitops_broker_watch_restarts_total", "Kubernetes watch streams restarted", ["cluster"]),
      relists: metrics.counter("gitops_broker_watch_relists_total", "Kubernetes watch caches re-listed", ["cluster"]),
      clusterUp: metrics.gauge("gitops_broker_cluster_up", "Live-mode cluster whose watches are listed (1) or failing (0)", ["cluster"]),
    },
    reconcile: {
      rerenders: metrics.counter("gitops_broker_rerenders_total", "Re-renders of instances", ["reason", "result"]),
      queued: metrics.gauge("gitops_broker_rerenders_queued", "Re-render requests waiting"),
    },
    records: {
      collected: metrics.counter("gitops_broker_records_collected_total", "Records of deprovisioned instances removed by records GC"),
      deleted: metrics.gauge("gitops_broker_deleted_records", "Records of deprovisioned instances on the tip, as of the last GC pass", ["cluster"]),
    },
    leader: {
      leader: metrics.gauge("gitops_broker_leader", "1 while this replica holds the Lease and does the background work (always 1 without leader election)", ["identity"]),
      transitions: metrics.counter("gitops_broker_leader_transitions_total", "Times this replica acquired or lost the Lease", ["change"]),
    },
    nudge: {
      nudges: metrics.counter("gitops_broker_nudges_total", "Nudges of a cluster's Argo CD / Flux after a push", ["cluster", "via", "result"]),
    },
    repo: {
      instances: metrics.gauge("gitops_broker_service_instances", "Live service instances, by cluster and plan", ["cluster", "plan"]),
      bindings: metrics.gauge("gitops_broker_service_bindings", "Live service bindings, by their instance's cluster and plan", ["cluster", "plan"]),
      clusters: metrics.gauge("gitops_broker_clusters", "Clusters in the registry", ["cluster", "schedulable"]),
      catalogLoaded: metrics.gauge("gitops_broker_catalog_loaded", "1 when the catalog and cluster registry loaded without problems"),
      catalogProblems: metrics.gauge("gitops_broker_catalog_problems", "Problems of the last catalog and registry load"),
      catalogPlans: metrics.gauge("gitops_broker_catalog_plans", "Plans served in the catalog"),
      catalogState: metrics.gauge(
        "gitops_broker_catalog_state",
        "1 for where the catalog served comes from: tip, last-good (the tip's has problems) or partial (the tip's without its bad files)",
        ["state"],
      ),
      registryState: metrics.gauge(
        "gitops_broker_registry_state",
        "1 for where the cluster registry served comes from: tip, last-good (the tip's has problems) or partial (the tip's without its bad files)",
        ["state"],
      ),
    },
  };
}

/** Instruments that record nothing, for a component built without any. */
export const noopInstruments: Instruments = createInstruments(noopMetrics);

export { createPrometheusMetrics } from "./prometheus.js";
export type { PrometheusMetrics } from "./prometheus.js";
