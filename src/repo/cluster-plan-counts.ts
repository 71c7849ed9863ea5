/**
 * Counts per cluster id, per plan id: what the instance summary (live instances) and the binding
 * summary (live bindings) fold, adding parts up and taking a replaced part back out.
 */
export type ClusterPlanCounts = ReadonlyMap<string, ReadonlyMap<string, number>>;

/** A copy of `counts` that `addCounts` may change. */
export function copyCounts(counts: ClusterPlanCounts): Map<string, Map<string, number>> {
  return new Map([...counts].map(([cluster, plans]) => [cluster, new Map(plans)]));
}

/** Adds `part` to `target` (`sign` -1: takes it out); counts that reach 0 and empty clusters go. */
export function addCounts(target: Map<string, Map<string, number>>, part: ClusterPlanCounts, sign: 1 | -1): void {
  for (const [cluster, plans] of part) {
    let counts = target.get(cluster);
    if (!counts) target.set(cluster, (counts = new Map<string, number>()));
    for (const [plan, n] of plans) {
      const count = (counts.get(plan) ?? 0) + sign * n;
      if (count === 0) counts.delete(plan);
      else counts.set(plan, count);
    }
    if (counts.size === 0) target.delete(cluster);
  }
}
