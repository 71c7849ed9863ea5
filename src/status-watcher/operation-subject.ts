import type { BindingRecord, InstanceRecord, OperationEntry } from "../repo/index.js";
import type { LiveCluster } from "./live-cluster.js";
import type { Subject } from "./live-status.js";
import type { OperationStatus, StatusMode, StatusView } from "./types.js";

/**
 * Where the status of an operation comes from (watcher.ts): the commit-mode watcher, an answer at
 * once, or the live cluster of its instance, with the key the watcher memoizes its answers under.
 */

export type Resolved = { commit: true } | { status: OperationStatus } | { subject: Subject; key: string };

/** The memo key of an operation: the instance's, or the binding's. */
export const subjectKey = (instance: InstanceRecord, binding: BindingRecord | undefined, operation: OperationEntry): string =>
  binding ? `b ${instance.spec.instanceId} ${binding.spec.bindingId} ${operation.id}` : `i ${instance.spec.instanceId} ${operation.id}`;

/**
 * Commit mode for a cluster in that mode, or not watched live (yet); "in progress" while the
 * cluster is not in the registry (in live mode: it may be on its way) or the plan not in the
 * catalog; else the live subject. `liveOf` is the cluster watched live, if it is.
 */
export function resolveSubject(
  view: StatusView,
  defaultMode: StatusMode,
  liveOf: (clusterId: string) => LiveCluster | undefined,
  instance: InstanceRecord,
  binding: BindingRecord | undefined,
  operation: OperationEntry,
): Resolved {
  const clusterId = instance.spec.clusterId;
  const entry = view.clusters().find((c) => c.id === clusterId);
  if (!entry) {
    if (defaultMode === "commit") return { commit: true };
    return { status: { state: "in progress", description: `instance ${instance.spec.instanceId} is placed on cluster ${clusterId}, which is not in the cluster registry` } };
  }
  const cluster = liveOf(clusterId);
  if ((entry.statusMode ?? defaultMode) === "commit" || !cluster) return { commit: true };
  const service = view.catalog().serviceById(instance.spec.serviceId);
  const plan = service?.plans.find((p) => p.id === instance.spec.planId);
  if (!service || !plan) {
    return { status: { state: "in progress", description: `plan ${instance.spec.planId} of instance ${instance.spec.instanceId} is not in the catalog` } };
  }
  return { subject: { instance, operation, service, plan, cluster, ...(binding ? { binding } : {}) }, key: subjectKey(instance, binding, operation) };
}
