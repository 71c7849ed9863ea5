/** What a scheduler needs to know of a registered cluster (a subset of the catalog's ClusterEntry). */
export interface ClusterCandidate {
  id: string;
  /** False: drained, never chosen for a new instance. */
  schedulable: boolean;
  labels: Record<string, string>;
  /** `resources`: Kubernetes quantities, e.g. `{ cpu: "16", memory: "64Gi" }`. */
  capacity?: { maxInstances?: number; resources?: Record<string, string | number> };
}

/** The repository view a scheduler decides from. */
export interface SchedulingInput {
  clusters: readonly ClusterCandidate[];
  instanceId: string;
  planId: string;
  /** Live instances per cluster id, counted from the repo (records not deleted). Missing = 0. */
  instanceCounts: ReadonlyMap<string, number>;
  /** Resource requests already placed per cluster (sum of the plans' `context.requests` of live instances), e.g. `{ cpu: "3", memory: "6Gi" }`. Missing = nothing. */
  resourceUsage?: ReadonlyMap<string, Record<string, string>>;
  /** The plan's `context.requests` (Service Fabrik style, e.g. `{ cpu: 1, memory: "512Mi" }`), if any. */
  requests?: Record<string, string | number>;
  /** Cluster of the most recent provision in the repo (round-robin continuity across restarts). */
  lastScheduledCluster?: string;
  /** Output of the plan's clusterSelector template, rendered by the caller, e.g. `plan=small,tier!=dev`. */
  clusterSelector?: string;
}

export interface Scheduler {
  readonly type: SchedulerConfig["type"];
  /** The chosen cluster id; throws SchedulingError naming why no cluster fits. */
  schedule(input: SchedulingInput): string;
}

export type SchedulerConfig = { type: "single" | "round-robin" | "least-utilized" | "label-selector" };
