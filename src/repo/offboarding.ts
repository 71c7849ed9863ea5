import type { Problem } from "../errors/index.js";
import type { InstanceSummary } from "./instance-summary.js";
import { CONTROL_STORE, clusterRegistryPath, storeLabel } from "./layout.js";

/**
 * Offboarding protection: a cluster or a plan that still has live instances cannot leave the
 * registry or the catalog. Returns one problem per cluster / plan that would strand instances.
 */
export function offboardingProblems(
  summary: InstanceSummary,
  known: { clusterIds: ReadonlySet<string>; planIds: ReadonlySet<string> },
): Problem[] {
  const problems: Problem[] = [];
  const perPlan = new Map<string, number>();
  for (const [clusterId, plans] of summary.live) {
    let onCluster = 0;
    for (const [planId, n] of plans) {
      onCluster += n;
      perPlan.set(planId, (perPlan.get(planId) ?? 0) + n);
    }
    if (onCluster > 0 && !known.clusterIds.has(clusterId)) {
      problems.push({
        file: clusterRegistryPath(clusterId),
        path: "",
        message: `cluster ${clusterId} is missing from the registry but holds ${onCluster} live instance(s): move or deprovision them first`,
      });
    }
  }
  for (const [planId, n] of perPlan) {
    if (n > 0 && !known.planIds.has(planId)) {
      problems.push({
        file: "catalog/",
        path: "",
        message: `plan ${planId} is missing from the catalog but ${n} live instance(s) use it: update or deprovision them first`,
      });
    }
  }
  return problems;
}

/**
 * Stores (ADR 0027): a cluster's instances are in the store its registry entry names (`spec.store`,
 * else the control repository). A registry naming a store this broker does not have, or moving a
 * cluster to another store while its live instances are still in the old one, counts as a
 * problem, so the last good registry stays (a move is `gitops-broker move-cluster`).
 */
export function storeProblems(
  parts: ReadonlyMap<string, InstanceSummary>,
  clusters: readonly { id: string; store?: string | undefined }[],
  stores: ReadonlySet<string>,
  /** Clusters each store has a move fence for (moved/<id>.yaml): their instances there are a move's, not stranded. */
  fenced: ReadonlyMap<string, ReadonlySet<string>> = new Map(),
): Problem[] {
  const problems: Problem[] = [];
  const storeOf = new Map(clusters.map((c) => [c.id, c.store ?? CONTROL_STORE]));
  for (const c of clusters) {
    if (c.store !== undefined && !stores.has(c.store)) {
      problems.push({ file: clusterRegistryPath(c.id), path: "spec.store", message: `names store ${c.store}, which this broker's configuration does not declare (stores: ${[...stores].sort().join(", ")})` });
    }
  }
  for (const [part, summary] of parts) {
    for (const [clusterId, plans] of summary.live) {
      const named = storeOf.get(clusterId);
      // A move under way (a fence in the store it leaves) has the cluster's instances in two stores.
      if (named === undefined || named === part || !stores.has(named) || fenced.get(part)?.has(clusterId) || fenced.get(named)?.has(clusterId)) continue;
      let n = 0;
      for (const count of plans.values()) n += count;
      if (n === 0) continue;
      problems.push({
        file: clusterRegistryPath(clusterId),
        path: "spec.store",
        message: `names ${storeLabel(named)}, but ${n} live instance(s) of cluster ${clusterId} are in ${storeLabel(part)}: move a cluster with gitops-broker move-cluster`,
      });
    }
  }
  return problems;
}
