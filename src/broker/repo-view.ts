import { loadCatalog, loadClusters, type Catalog, type ClusterEntry } from "../catalog/index.js";
import { formatProblem, type Problem } from "../errors/index.js";
import type { GitWriter } from "../gitwriter/index.js";
import type { Logger } from "../log/index.js";
import type { ReadinessCheck, RepoView } from "./context.js";

/**
 * Catalog and cluster registry, loaded from the last pushed tip and reloaded whenever the tip
 * moves. A load with problems is reported (logs, /readyz) and the last good catalog keeps being
 * served; on the very first load, whatever loaded cleanly is served.
 */
export interface LiveRepoView extends RepoView {
  /** Load from the writer's current snapshot. */
  reload(): Promise<void>;
  problems(): readonly Problem[];
  readiness(): Promise<ReadinessCheck[]>;
  close(): void;
}

const EMPTY_CATALOG: Catalog = { services: [], serviceById: () => undefined, planById: () => undefined };

export function createRepoView(writer: GitWriter, logger: Logger): LiveRepoView {
  let catalog: Catalog = EMPTY_CATALOG;
  let clusters: readonly ClusterEntry[] = [];
  let problems: readonly Problem[] = [];
  let loadedOnce = false;
  let chain: Promise<void> = Promise.resolve();

  async function load(): Promise<void> {
    const tree = writer.snapshot();
    const [c, r] = await Promise.all([loadCatalog(tree), loadClusters(tree)]);
    problems = [...c.problems, ...r.problems];
    for (const p of problems) logger.error({ file: p.file, path: p.path, commit: tree.commit }, formatProblem(p));
    if (!loadedOnce || c.problems.length === 0) catalog = c.catalog;
    else logger.warn({ commit: tree.commit }, "catalog has problems: keeping the last good catalog");
    if (!loadedOnce || r.problems.length === 0) clusters = r.clusters;
    else logger.warn({ commit: tree.commit }, "cluster registry has problems: keeping the last good registry");
    loadedOnce = true;
    logger.info(
      { commit: tree.commit, services: catalog.services.length, clusters: clusters.length, problems: problems.length },
      "repository view loaded",
    );
  }

  function reload(): Promise<void> {
    chain = chain.then(load, load);
    return chain;
  }

  const unsubscribe = writer.onTip(() => {
    reload().catch((e: unknown) => logger.error({ err: e }, "reloading the repository view failed"));
  });

  return {
    catalog: () => catalog,
    clusters: () => clusters,
    problems: () => problems,
    reload,
    async readiness() {
      return [
        {
          name: "repository",
          ok: problems.length === 0,
          ...(problems.length ? { message: problems.map(formatProblem).join("; ") } : {}),
        },
      ];
    },
    close: unsubscribe,
  };
}
