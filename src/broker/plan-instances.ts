import type { TreeReader } from "../gitwriter/index.js";
import { INSTANCES_DIR, readRecordAt, type InstanceRecord } from "../repo/index.js";

/**
 * Live instance ids per plan, folded bottom-up over `instances/<ab>/<cd>/<key>/` and memoized by
 * tree oid (like the scheduler's instance summary): listing the instances of a plan after a
 * commit re-reads only the buckets that commit changed.
 */
type PlanIds = ReadonlyMap<string, readonly string[]>;

export interface PlanInstancesCache {
  get(treeOid: string): PlanIds | undefined;
  set(treeOid: string, ids: PlanIds): void;
}

const EMPTY: PlanIds = new Map();

export function createPlanInstancesCache(limit = 100_000): PlanInstancesCache {
  const memo = new Map<string, PlanIds>();
  return {
    get: (oid) => memo.get(oid),
    set(oid, ids) {
      if (memo.size >= limit) memo.delete(memo.keys().next().value as string);
      memo.set(oid, ids);
    },
  };
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

/** Levels: 0 = `instances`, 1 = `<ab>`, 2 = `<cd>`, 3 = `<key>` (holds instance.yaml). */
async function fold(tree: TreeReader, path: string, level: number, oid: string | undefined, cache: PlanInstancesCache): Promise<PlanIds> {
  const hit = oid === undefined ? undefined : cache.get(oid);
  if (hit) return hit;
  if (level === 3) {
    const record = await readRecordAt<InstanceRecord>(tree, `${path}/instance.yaml`);
    return record && !record.status.deleted ? new Map([[record.spec.planId, [record.spec.instanceId]]]) : EMPTY;
  }
  const parts: PlanIds[] = [];
  for (const e of (await tree.list(path)) ?? []) {
    if (e.type === "tree") parts.push(await fold(tree, `${path}/${e.name}`, level + 1, e.oid, cache));
  }
  const ids = merge(parts);
  if (oid !== undefined) cache.set(oid, ids);
  return ids;
}

/** Ids of the live (not deleted) instances of `planId` in `tree`. */
export async function liveInstancesOfPlan(tree: TreeReader, planId: string, cache: PlanInstancesCache): Promise<string[]> {
  const entry = (await tree.list(""))?.find((e) => e.name === INSTANCES_DIR && e.type === "tree");
  if (!entry) return [];
  return [...((await fold(tree, INSTANCES_DIR, 0, entry.oid, cache)).get(planId) ?? [])];
}
