import type { TreeReader } from "../gitwriter/index.js";
import type { RepoInstruments } from "../metrics/index.js";
import { summarizeBindings, summarizeInstances, type BindingSummaryCache, type InstanceSummaryCache } from "../repo/index.js";
import type { LiveRepoView } from "./repo-view.js";

/**
 * Fill the repository gauges from the view and the last pushed tree: run at each scrape (the
 * instance summary is memoized per commit, so a scrape between two commits re-reads nothing).
 */
export async function fillRepoInstruments(
  view: LiveRepoView,
  tree: TreeReader,
  summaries: InstanceSummaryCache,
  bindingSummaries: BindingSummaryCache,
  m: RepoInstruments,
): Promise<void> {
  const summary = await summarizeInstances(tree, summaries);
  m.instances.reset();
  for (const [cluster, plans] of summary.live) for (const [plan, n] of plans) m.instances.set(n, { cluster, plan });
  const bindings = await summarizeBindings(tree, bindingSummaries);
  m.bindings.reset();
  for (const [cluster, plans] of bindings) for (const [plan, n] of plans) m.bindings.set(n, { cluster, plan });
  m.clusters.reset();
  for (const c of view.clusters()) m.clusters.set(1, { cluster: c.id, schedulable: String(c.schedulable) });
  const problems = view.problems().length;
  m.catalogProblems.set(problems);
  m.catalogLoaded.set(problems === 0 && view.catalog().services.length > 0 ? 1 : 0);
  m.catalogPlans.set(view.catalog().services.reduce((n, s) => n + s.plans.length, 0));
  const catalog = view.catalogSource().state;
  const registry = view.registrySource().state;
  for (const s of ["tip", "last-good", "partial"] as const) {
    m.catalogState.set(s === catalog ? 1 : 0, { state: s });
    m.registryState.set(s === registry ? 1 : 0, { state: s });
  }
}
