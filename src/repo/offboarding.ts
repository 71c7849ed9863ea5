import type { Problem } from "../errors/index.js";
import type { InstanceSummary } from "./instance-summary.js";
import { clusterRegistryPath } from "./layout.js";

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
