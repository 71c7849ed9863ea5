import type { TreeReader } from "../gitwriter/index.js";
import { addCounts, copyCounts, type ClusterPlanCounts } from "./cluster-plan-counts.js";
import { createFoldCache, foldInstances, foldParts, type DirFold, type FoldCache, type FoldProgress, type FoldSpec } from "./instance-fold.js";
import type { ScannedInstance } from "./record-scan.js";

/**
 * What schedulers, quotas and offboarding checks need to know about all instances, derived from
 * the tree under `instances/`: live instances per cluster and plan, per tenant scope and plan, and
 * the newest provision. A fold over
 * the records (instance-fold.ts): one bucket re-read per commit, whatever the number of instances.
 */
export interface InstanceSummary {
  /** Live (not deleted) instances per cluster id, per plan id. */
  readonly live: ClusterPlanCounts;
  /** The newest provision (live or since deleted), by operation time. */
  readonly latestProvision: { at: string; clusterId: string } | undefined;
  /**
   * Live instances per plan and tenant scope (an organization, space or subaccount): what quotas
   * count, kept current by the same fold. Keyed `<plan id> NUL <scopeKey>`, one flat map per
   * bucket (a map per scope cost about twice as much for 65,536 buckets at 100k instances).
   */
  readonly tenants: ReadonlyMap<string, number>;
}

export type TenantScope = "organization" | "space" | "subaccount";

/** The key of one organization, space or subaccount in `InstanceSummary.tenants`. */
export function scopeKey(scope: TenantScope, id: string): string {
  return `${scope}/${id}`;
}

function tenantKey(planId: string, scope: string): string {
  return `${planId}\u0000${scope}`;
}

/**
 * One string per tenant key for the fold's maps: every bucket and level holding the same key
 * shares it (at 100k instances the tenant counts cost ~60 MB with a string per map entry, ~22 MB
 * shared). Bounded: past the limit it starts afresh, which only costs sharing.
 */
const interned = new Map<string, string>();
const INTERN_LIMIT = 500_000;

function internedKey(planId: string, scope: string): string {
  const key = tenantKey(planId, scope);
  let same = interned.get(key);
  if (same === undefined) {
    if (interned.size >= INTERN_LIMIT) interned.clear();
    interned.set(key, (same = key));
  }
  return same;
}

/** Live instances of the scope `key` (scopeKey) whose plan is one of `planIds`. */
export function liveInScope(summary: InstanceSummary, key: string, planIds: ReadonlySet<string>): number {
  let n = 0;
  for (const planId of planIds) n += summary.tenants.get(tenantKey(planId, key)) ?? 0;
  return n;
}

/** Adds `part` to `target` (`sign` -1: takes it out); counts that reach 0 go. */
function addTenants(target: Map<string, number>, part: ReadonlyMap<string, number>, sign: 1 | -1): void {
  for (const [key, n] of part) {
    const count = (target.get(key) ?? 0) + sign * n;
    if (count === 0) target.delete(key);
    else target.set(key, count);
  }
}

export type InstanceSummaryCache = FoldCache<InstanceSummary>;

const EMPTY: InstanceSummary = { live: new Map(), latestProvision: undefined, tenants: new Map() };

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
  const tenants = new Map<string, number>();
  let latest: InstanceSummary["latestProvision"];
  for (const part of nonEmpty) {
    addCounts(live, part.live, 1);
    addTenants(tenants, part.tenants, 1);
    const l = part.latestProvision;
    if (l && (!latest || l.at > latest.at)) latest = l;
  }
  return { live, latestProvision: latest, tenants };
}

function ofRecord(record: ScannedInstance): InstanceSummary {
  const provision = [...record.operations].reverse().find((o) => o.action === "provision");
  const latestProvision = provision ? { at: provision.at, clusterId: record.clusterId } : undefined;
  if (record.deleted) return { live: EMPTY.live, latestProvision, tenants: EMPTY.tenants };
  const live = new Map([[record.clusterId, new Map([[record.planId, 1]])]]);
  const tenants = new Map<string, number>();
  const { organizationGuid, spaceGuid, subaccountId, planId } = record;
  if (organizationGuid !== undefined) tenants.set(internedKey(planId, scopeKey("organization", organizationGuid)), 1);
  if (spaceGuid !== undefined) tenants.set(internedKey(planId, scopeKey("space", spaceGuid)), 1);
  if (subaccountId !== undefined) tenants.set(internedKey(planId, scopeKey("subaccount", subaccountId)), 1);
  return { live, latestProvision, tenants };
}

/** `before.value` with the parts `names` replaced by theirs in `parts` (absent: removed). */
function replace(before: DirFold<InstanceSummary>, parts: ReadonlyMap<string, InstanceSummary>, names: string[]): InstanceSummary {
  const live = copyCounts(before.value.live);
  const tenants = new Map(before.value.tenants);
  for (const name of names) {
    addCounts(live, before.parts.get(name)?.live ?? EMPTY.live, -1);
    addCounts(live, parts.get(name)?.live ?? EMPTY.live, 1);
    addTenants(tenants, before.parts.get(name)?.tenants ?? EMPTY.tenants, -1);
    addTenants(tenants, parts.get(name)?.tenants ?? EMPTY.tenants, 1);
  }
  // The newest provision is not subtractable; the maximum over the parts is cheap to take again.
  let latest: InstanceSummary["latestProvision"];
  for (const part of parts.values()) {
    const l = part.latestProvision;
    if (l && (!latest || l.at > latest.at)) latest = l;
  }
  return live.size === 0 && tenants.size === 0 && latest === undefined ? EMPTY : { live, latestProvision: latest, tenants };
}

const SUMMARY: FoldSpec<InstanceSummary> = { empty: EMPTY, ofRecord, merge, replace };

export function summarizeInstances(tree: TreeReader, cache: InstanceSummaryCache, progress?: FoldProgress): Promise<InstanceSummary> {
  return foldInstances(tree, SUMMARY, cache, progress);
}

/** The summary of each store of a tree of several (ADR 0027), by store name; one repository: one part, "". */
export function summarizeStores(tree: TreeReader, cache: InstanceSummaryCache, progress?: FoldProgress): Promise<Map<string, InstanceSummary>> {
  return foldParts(tree, SUMMARY, cache, progress);
}

/** The summary of all stores from theirs (see summarizeStores). */
export function mergeSummaries(parts: Iterable<InstanceSummary>): InstanceSummary {
  return merge([...parts]);
}
