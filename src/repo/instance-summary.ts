import type { TreeReader } from "../gitwriter/index.js";
import { addCounts, copyCounts, type ClusterPlanCounts } from "./cluster-plan-counts.js";
import { createFoldCache, foldInstances, type DirFold, type FoldCache, type FoldProgress, type FoldSpec } from "./instance-fold.js";
import type { ScannedInstance } from "./record-scan.js";

/**
 * What schedulers and offboarding checks need to know about all instances, derived from the tree
 * under `instances/`: live instances per cluster and plan, and the newest provision. A fold over
 * the records (instance-fold.ts): one bucket re-read per commit, whatever the number of instances.
 */
export interface InstanceSummary {
  /** Live (not deleted) instances per cluster id, per plan id. */
  readonly live: ClusterPlanCounts;
  /** The newest provision (live or since deleted), by operation time. */
  readonly latestProvision: { at: string; clusterId: string } | undefined;
}

export type InstanceSummaryCache = FoldCache<InstanceSummary>;

const EMPTY: InstanceSummary = { live: new Map(), latestProvision: undefined };

export function createInstanceSummaryCache(limit = 150_000): InstanceSummaryCache {
  return createFoldCache(limit);
}

/** Live instances of one cluster (all plans). */
export function liveOnCluster(summary: InstanceSummary, clusterId: string): number {
  let n = 0;
  for (const count of summary.live.get(clusterId)?.values() ?? []) n += count;
  return n;
}

/** Live instances of one plan (all clusters). */
export function liveOfPlan(summary: InstanceSummary, planId: string): number {
  let n = 0;
  for (const plans of summary.live.values()) n += plans.get(planId) ?? 0;
  return n;
}

export function instanceCounts(summary: InstanceSummary): Map<string, number> {
  return new Map([...summary.live.keys()].map((id) => [id, liveOnCluster(summary, id)]));
}

function merge(parts: InstanceSummary[]): InstanceSummary {
  const nonEmpty = parts.filter((p) => p !== EMPTY);
  if (nonEmpty.length === 0) return EMPTY;
  if (nonEmpty.length === 1) return nonEmpty[0]!;
  const live = new Map<string, Map<string, number>>();
  let latest: InstanceSummary["latestProvision"];
  for (const part of nonEmpty) {
    addCounts(live, part.live, 1);
    const l = part.latestProvision;
    if (l && (!latest || l.at > latest.at)) latest = l;
  }
  return { live, latestProvision: latest };
}

function ofRecord(record: ScannedInstance): InstanceSummary {
  const provision = [...record.operations].reverse().find((o) => o.action === "provision");
  const latestProvision = provision ? { at: provision.at, clusterId: record.clusterId } : undefined;
  const live = record.deleted ? new Map<string, Map<string, number>>() : new Map([[record.clusterId, new Map([[record.planId, 1]])]]);
  return { live, latestProvision };
}

/** `before.value` with the parts `names` replaced by theirs in `parts` (absent: removed). */
function replace(before: DirFold<InstanceSummary>, parts: ReadonlyMap<string, InstanceSummary>, names: string[]): InstanceSummary {
  const live = copyCounts(before.value.live);
  for (const name of names) {
    addCounts(live, before.parts.get(name)?.live ?? EMPTY.live, -1);
    addCounts(live, parts.get(name)?.live ?? EMPTY.live, 1);
  }
  // The newest provision is not subtractable; the maximum over the parts is cheap to take again.
  let latest: InstanceSummary["latestProvision"];
  for (const part of parts.values()) {
    const l = part.latestProvision;
    if (l && (!latest || l.at > latest.at)) latest = l;
  }
  return live.size === 0 && latest === undefined ? EMPTY : { live, latestProvision: latest };
}

const SUMMARY: FoldSpec<InstanceSummary> = { empty: EMPTY, ofRecord, merge, replace };

export function summarizeInstances(tree: TreeReader, cache: InstanceSummaryCache, progress?: FoldProgress): Promise<InstanceSummary> {
  return foldInstances(tree, SUMMARY, cache, progress);
}
