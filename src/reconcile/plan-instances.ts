import type { TreeReader } from "../gitwriter/index.js";
import { createFoldCache, foldInstances, type FoldCache, type FoldSpec } from "../repo/index.js";

/**
 * Live instance ids per plan: the same fold over the records as the scheduler's instance summary
 * (src/repo/instance-fold.ts), so listing the instances of a plan after a commit re-reads only
 * the buckets that commit changed, and the first listing reads the records in bulk.
 */
type PlanIds = ReadonlyMap<string, readonly string[]>;

export type PlanInstancesCache = FoldCache<PlanIds>;

const EMPTY: PlanIds = new Map();

export function createPlanInstancesCache(limit = 100_000): PlanInstancesCache {
  return createFoldCache(limit);
}

function merge(parts: PlanIds[]): PlanIds {
  const nonEmpty = parts.filter((p) => p.size > 0);
  if (nonEmpty.length <= 1) return nonEmpty[0] ?? EMPTY;
  const out = new Map<string, string[]>();
  for (const part of nonEmpty) {
    for (const [plan, ids] of part) {
      const list = out.get(plan);
      if (list) list.push(...ids);
      else out.set(plan, [...ids]);
    }
  }
  return out;
}

const PLAN_IDS: FoldSpec<PlanIds> = {
  empty: EMPTY,
  ofRecord: (record) => (record.deleted ? EMPTY : new Map([[record.planId, [record.instanceId]]])),
  merge,
};

/** Ids of the live (not deleted) instances of `planId` in `tree`. */
export async function liveInstancesOfPlan(tree: TreeReader, planId: string, cache: PlanInstancesCache): Promise<string[]> {
  return [...((await foldInstances(tree, PLAN_IDS, cache)).get(planId) ?? [])];
}
