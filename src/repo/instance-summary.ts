import { parse } from "yaml";
import type { TreeReader } from "../gitwriter/index.js";
import { INSTANCES_DIR } from "./layout.js";
import type { InstanceRecord } from "./records.js";

/**
 * What schedulers and offboarding checks need to know about all instances, derived from the tree
 * under `instances/`: live instances per cluster and plan, and the newest provision.
 *
 * Computed bottom-up and memoized by tree oid (a Merkle fold): a commit that changes one instance
 * changes only the trees on its path, so the summary of the next commit re-reads one bucket and
 * re-merges two 256-entry levels, whatever the number of instances. A Draft's edited directories
 * have no oid yet and are folded afresh.
 */
export interface InstanceSummary {
  /** Live (not deleted) instances per cluster id, per plan id. */
  readonly live: ReadonlyMap<string, ReadonlyMap<string, number>>;
  /** The newest provision (live or since deleted), by operation time. */
  readonly latestProvision: { at: string; clusterId: string } | undefined;
}

export interface InstanceSummaryCache {
  get(treeOid: string): InstanceSummary | undefined;
  set(treeOid: string, summary: InstanceSummary): void;
}

const EMPTY: InstanceSummary = { live: new Map(), latestProvision: undefined };

/** A bounded memo (the fan-out has 65,536 buckets; whole levels above them stay in). */
export function createInstanceSummaryCache(limit = 150_000): InstanceSummaryCache {
  const memo = new Map<string, InstanceSummary>();
  return {
    get: (oid) => memo.get(oid),
    set(oid, summary) {
      if (memo.size >= limit) memo.delete(memo.keys().next().value as string);
      memo.set(oid, summary);
    },
  };
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
    for (const [cluster, plans] of part.live) {
      let target = live.get(cluster);
      if (!target) live.set(cluster, (target = new Map()));
      for (const [plan, n] of plans) target.set(plan, (target.get(plan) ?? 0) + n);
    }
    const l = part.latestProvision;
    if (l && (!latest || l.at > latest.at)) latest = l;
  }
  return { live, latestProvision: latest };
}

function ofRecord(record: InstanceRecord | null): InstanceSummary {
  if (!record) return EMPTY;
  const provision = [...record.status.operations].reverse().find((o) => o.action === "provision");
  const latestProvision = provision ? { at: provision.at, clusterId: record.spec.clusterId } : undefined;
  const live = record.status.deleted
    ? new Map<string, Map<string, number>>()
    : new Map([[record.spec.clusterId, new Map([[record.spec.planId, 1]])]]);
  return { live, latestProvision };
}

/**
 * Levels: 0 = `instances`, 1 = `<ab>`, 2 = `<cd>`, 3 = `<key>` (holds instance.yaml). Levels 0-2 are
 * memoized by tree oid; an instance directory is folded from its record (read only when its bucket
 * is not memoized).
 */
async function foldDir(
  tree: TreeReader,
  path: string,
  level: number,
  oid: string | undefined,
  cache: InstanceSummaryCache,
): Promise<InstanceSummary> {
  const hit = oid === undefined ? undefined : cache.get(oid);
  if (hit) return hit;
  let summary: InstanceSummary;
  if (level === 3) {
    // Parsed here without the shared record cache: a cold fold reads every record once, and
    // copying each into (and out of) that cache would only evict the records operations use.
    const text = await tree.readText(`${path}/instance.yaml`);
    summary = ofRecord(text === null ? null : (parse(text) as InstanceRecord));
  } else {
    const parts: InstanceSummary[] = [];
    for (const e of (await tree.list(path)) ?? []) {
      if (e.type === "tree") parts.push(await foldDir(tree, `${path}/${e.name}`, level + 1, e.oid, cache));
    }
    summary = merge(parts);
    if (oid !== undefined) cache.set(oid, summary);
  }
  return summary;
}

export async function summarizeInstances(tree: TreeReader, cache: InstanceSummaryCache): Promise<InstanceSummary> {
  const entry = (await tree.list(""))?.find((e) => e.name === INSTANCES_DIR && e.type === "tree");
  return entry ? foldDir(tree, INSTANCES_DIR, 0, entry.oid, cache) : EMPTY;
}
