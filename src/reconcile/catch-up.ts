import { autoUpdatesInstances, catalogHistory, CATALOG_HISTORY_DEPTH, type Catalog, type CatalogVersion } from "../catalog/index.js";
import type { GitReader, TreeReader } from "../gitwriter/index.js";
import type { Logger } from "../log/index.js";
import { instanceManifestDir, OVERRIDES_DIR, readInstance } from "../repo/index.js";
import { liveInstancesOfPlan, type PlanInstancesCache } from "./plan-instances.js";
import { fingerprint } from "./tip-changes.js";

/**
 * Catching up after a start (ADR 0012): a plan with `autoUpdateInstances: true` that
 * changed while no broker was running (or while one crashed with re-renders queued) left
 * instances rendered from its old version. Service Fabrik kept a plan hash per instance; here
 * Git says the same without any field of our own (ADR 0012): the commit that brought the plan's
 * current version in is found in the branch's first-parent history, and an instance whose own
 * objects are the same blobs at that commit and at the tip has not been rendered since: it is
 * re-rendered, through the reconciler's queue like any plan change. Overrides (`overrides/<key>/`)
 * merged meanwhile are caught up the same way, from the commit that last changed them.
 */

export interface StaleInstance {
  /** The instance id, or its key for an override. */
  instance: string;
  reason: "plan-changed" | "override-changed";
  /** The commit that brought the plan's current version (the override) in: Plan-Commit / Override-Commit. */
  cause: string;
}

/** For each plan of `plans`, the commit its current version came in with; undefined when not found within the walk. */
async function introductions(
  reader: Pick<GitReader, "log" | "readerAt">,
  tip: string,
  plans: readonly { id: string; fingerprint: string }[],
  depth: number | undefined,
): Promise<{ found: Map<string, CatalogVersion>; bounded: boolean; unresolved: string[] }> {
  const history = await catalogHistory(reader, tip, depth === undefined ? {} : { depth });
  const found = new Map<string, CatalogVersion>();
  /** The oldest version seen so far, going back, with the plan as it is now. */
  const since = new Map<string, CatalogVersion>();
  const pending = new Set(plans.map((p) => p.id));
  const want = new Map(plans.map((p) => [p.id, p.fingerprint]));
  for await (const version of history.versions) {
    for (const id of [...pending]) {
      const plan = version.catalog.planById(id);
      // Absent or failing to load here: a broker running then kept an older catalog; look further back.
      if (!plan) continue;
      if (fingerprint(plan) === want.get(id)) {
        since.set(id, version);
        continue;
      }
      const intro = since.get(id);
      // A version newer than the one in force (the tip's catalog has problems, ADR 0012) tells nothing yet.
      if (!intro) continue;
      found.set(id, intro);
      pending.delete(id);
    }
    if (pending.size === 0) break;
  }
  return { found, bounded: history.bounded, unresolved: [...pending] };
}

/** The instance's own manifest files (not its bindings' or sensitive/ subdirectories), as name=oid. */
async function ownFiles(tree: TreeReader, dir: string): Promise<string> {
  const entries = (await tree.list(dir)) ?? [];
  return entries
    .filter((e) => e.type === "blob")
    .map((e) => `${e.name}=${e.oid ?? ""}`)
    .join("\n");
}

/**
 * Live instances of the `autoUpdateInstances` plans of `catalog` (the one re-renders will use)
 * whose objects predate their plan's current version.
 */
export async function staleInstances(deps: {
  reader: Pick<GitReader, "log" | "readerAt">;
  tip: TreeReader;
  catalog: Catalog;
  planIds: PlanInstancesCache;
  logger: Logger;
  depth?: number;
}): Promise<StaleInstance[]> {
  const { tip, logger } = deps;
  if (tip.commit === null) return [];
  const plans = deps.catalog.services.flatMap((s) => s.plans).filter(autoUpdatesInstances);
  if (plans.length === 0) return [];
  const { found, bounded, unresolved } = await introductions(
    deps.reader,
    tip.commit,
    plans.map((p) => ({ id: p.id, fingerprint: fingerprint(p) })),
    deps.depth,
  );
  if (bounded && unresolved.length > 0) {
    logger.info({ plans: unresolved }, "catching up: plans unchanged within the catalog history walked; their instances are left as they are");
  }
  const stale: StaleInstance[] = [];
  for (const plan of plans) {
    const intro = found.get(plan.id);
    if (!intro) continue;
    const ids = await liveInstancesOfPlan(tip, plan.id, deps.planIds);
    let count = 0;
    for (const id of ids) {
      const record = await readInstance(tip, id);
      if (!record) continue;
      const dir = instanceManifestDir(record.spec.clusterId, id);
      const before = await ownFiles(intro.tree, dir);
      // Not there at the change: provisioned (or moved) since, so rendered from the current version.
      if (before === "" || before !== (await ownFiles(tip, dir))) continue;
      stale.push({ instance: id, reason: "plan-changed", cause: intro.commit });
      count++;
    }
    logger.info(
      { plan: plan.name, planId: plan.id, planCommit: intro.commit, instances: ids.length, stale: count },
      count > 0 ? "catching up: re-rendering the instances not rendered since the plan changed" : "catching up: every instance of the plan is rendered from its current version",
    );
  }
  return stale;
}

/** `overrides/` of a commit: key -> tree oid. */
async function overrideKeys(reader: Pick<GitReader, "readerAt">, commit: string): Promise<Map<string, string | undefined>> {
  const tree = await reader.readerAt(commit);
  const entries = (await tree?.list(OVERRIDES_DIR)) ?? [];
  return new Map(entries.filter((e) => e.type === "tree").map((e) => [e.name, e.oid]));
}

/**
 * Live instances whose `overrides/<key>/` changed (added, edited, removed) after their objects
 * were last rendered. Consecutive commits of `git log --first-parent -- overrides/` are
 * consecutive states of the directory, so each one's changed keys are a diff with the next older.
 */
export async function staleByOverrides(deps: {
  reader: Pick<GitReader, "log" | "readerAt">;
  tip: TreeReader;
  logger: Logger;
  depth?: number;
}): Promise<StaleInstance[]> {
  const { tip, reader } = deps;
  if (tip.commit === null) return [];
  const depth = deps.depth ?? CATALOG_HISTORY_DEPTH;
  const commits = await reader.log(tip.commit, [OVERRIDES_DIR], { firstParent: true, max: depth + 1 });
  /** Key -> the newest commit that changed it. */
  const changed = new Map<string, string>();
  let newer = commits[0] ? await overrideKeys(reader, commits[0].commit) : new Map<string, string | undefined>();
  for (const [i, info] of commits.slice(0, depth).entries()) {
    const next = commits[i + 1];
    const older = next ? await overrideKeys(reader, next.commit) : new Map<string, string | undefined>();
    for (const key of new Set([...newer.keys(), ...older.keys()])) {
      if (newer.get(key) !== older.get(key) && !changed.has(key)) changed.set(key, info.commit);
    }
    newer = older;
  }
  const stale: StaleInstance[] = [];
  for (const [key, commit] of changed) {
    const record = await readInstance(tip, key);
    if (!record || record.status.deleted) continue;
    const at = await reader.readerAt(commit);
    if (!at) continue;
    const dir = instanceManifestDir(record.spec.clusterId, record.spec.instanceId);
    const before = await ownFiles(at, dir);
    if (before === "" || before !== (await ownFiles(tip, dir))) continue;
    stale.push({ instance: key, reason: "override-changed", cause: commit });
  }
  if (stale.length > 0) deps.logger.info({ instances: stale.length }, "catching up: re-rendering the instances not rendered since their overrides changed");
  return stale;
}
