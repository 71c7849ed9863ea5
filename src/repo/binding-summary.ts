import { parse } from "yaml";
import type { TreeReader } from "../gitwriter/index.js";
import { addCounts, copyCounts, type ClusterPlanCounts } from "./cluster-plan-counts.js";
import { createFoldCache, foldInstances, type DirFold, type FoldCache, type FoldSpec } from "./instance-fold.js";
import type { BindingRecord } from "./records.js";
import type { ScannedInstance } from "./record-scan.js";

/**
 * Live bindings per cluster and plan (of their instance), for the bindings gauge: a fold over the
 * instance records and the binding records below them (instance-fold.ts), memoized per tree oid
 * like the instance summary, so a scrape between two commits re-reads nothing and one after a
 * commit re-reads the bucket it changed.
 */
export type BindingCounts = ClusterPlanCounts;
export type BindingSummaryCache = FoldCache<BindingCounts>;

const EMPTY: BindingCounts = new Map();

export function createBindingSummaryCache(limit = 150_000): BindingSummaryCache {
  return createFoldCache(limit);
}

/** A binding record that is not marked deleted. Most are live and never say `deleted`: no parse for those. */
function isLive(text: string): boolean {
  if (!text.includes("deleted") && !text.includes("\\")) return true;
  const record = parse(text) as Partial<BindingRecord> | null;
  return record !== null && typeof record === "object" && record.status?.deleted !== true;
}

function ofRecord(record: ScannedInstance, bindings: readonly string[] = []): BindingCounts {
  if (record.deleted) return EMPTY;
  const live = bindings.filter(isLive).length;
  return live === 0 ? EMPTY : new Map([[record.clusterId, new Map([[record.planId, live]])]]);
}

function merge(parts: BindingCounts[]): BindingCounts {
  const nonEmpty = parts.filter((p) => p.size > 0);
  if (nonEmpty.length <= 1) return nonEmpty[0] ?? EMPTY;
  const out = new Map<string, Map<string, number>>();
  for (const part of nonEmpty) addCounts(out, part, 1);
  return out;
}

function replace(before: DirFold<BindingCounts>, parts: ReadonlyMap<string, BindingCounts>, names: string[]): BindingCounts {
  const out = copyCounts(before.value);
  for (const name of names) {
    addCounts(out, before.parts.get(name) ?? EMPTY, -1);
    addCounts(out, parts.get(name) ?? EMPTY, 1);
  }
  return out.size === 0 ? EMPTY : out;
}

const SPEC: FoldSpec<BindingCounts> = { empty: EMPTY, ofRecord, merge, replace, readsBindings: true };

/** Live bindings of live instances, by the instance's cluster id and plan id. */
export function summarizeBindings(tree: TreeReader, cache: BindingSummaryCache): Promise<BindingCounts> {
  return foldInstances(tree, SPEC, cache);
}
