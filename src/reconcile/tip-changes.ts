import { autoUpdatesInstances, loadCatalog, type Plan } from "../catalog/index.js";
import type { TreeEntryInfo, TreeReader } from "../gitwriter/index.js";
import { CATALOG_DIR, OVERRIDES_DIR } from "../repo/index.js";

/**
 * What changed between two tips that calls for re-rendering instances. Unchanged subtrees are
 * recognised by their oid and never read: a tip that only adds records costs two root listings.
 */
export interface TipChanges {
  /** Plans with `autoUpdateInstances: true` whose document or templates changed. */
  plans: Plan[];
  /** Instance keys whose `overrides/<key>/` changed (added, edited or removed). */
  overrideKeys: string[];
}

function entries(list: TreeEntryInfo[] | null): Map<string, string | undefined> {
  return new Map((list ?? []).filter((e) => e.type === "tree").map((e) => [e.name, e.oid]));
}

/** What a render of the plan depends on: its document and its templates (inline or by path). */
export function fingerprint(plan: Plan): string {
  return JSON.stringify([plan.raw, plan.templates.map((t) => [t.action, t.type, t.content])]);
}

async function changedPlans(old: TreeReader, next: TreeReader): Promise<Plan[]> {
  const [before, after] = await Promise.all([loadCatalog(old), loadCatalog(next)]);
  const changed: Plan[] = [];
  for (const plan of after.catalog.services.flatMap((s) => s.plans)) {
    const previous = before.catalog.planById(plan.id);
    // A new plan has no instances yet; a plan that failed to load is not in `after`.
    if (previous && autoUpdatesInstances(plan) && fingerprint(previous) !== fingerprint(plan)) changed.push(plan);
  }
  return changed;
}

async function changedOverrides(old: TreeReader, next: TreeReader): Promise<string[]> {
  const [before, after] = await Promise.all([old.list(OVERRIDES_DIR), next.list(OVERRIDES_DIR)]);
  const a = entries(before);
  const b = entries(after);
  const keys = new Set([...a.keys(), ...b.keys()]);
  // Both are commits' trees, so every entry has an oid: a missing one reads as undefined.
  return [...keys].filter((k) => a.get(k) !== b.get(k)).sort();
}

export async function tipChanges(old: TreeReader, next: TreeReader): Promise<TipChanges> {
  const [a, b] = await Promise.all([old.list(""), next.list("")]);
  const rootA = new Map((a ?? []).map((e) => [e.name, e.oid]));
  const rootB = new Map((b ?? []).map((e) => [e.name, e.oid]));
  const differs = (name: string) => rootA.get(name) !== rootB.get(name);
  return {
    plans: differs(CATALOG_DIR) ? await changedPlans(old, next) : [],
    overrideKeys: differs(OVERRIDES_DIR) ? await changedOverrides(old, next) : [],
  };
}
