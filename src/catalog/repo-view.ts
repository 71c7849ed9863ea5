import { loadCatalog, type LoadCatalogOptions } from "./load-catalog.js";
import { loadClusters, type ClusterEntry } from "./load-clusters.js";
import type { Catalog } from "./types.js";
import { formatProblem, type Problem } from "../errors/index.js";
import type { GitReader, TreeReader } from "../gitwriter/index.js";
import { progressReporter, type Logger } from "../log/index.js";
import {
  createInstanceSummaryCache,
  offboardingProblems,
  summarizeInstances,
  type InstanceSummaryCache,
} from "../repo/index.js";

/** The catalog and cluster registry as last loaded from the repository (hot-reloaded). */
export interface RepoView {
  catalog(): Catalog;
  clusters(): readonly ClusterEntry[];
  /**
   * Make catalog() and clusters() reflect this tree (an operation's draft): every operation
   * decides against the catalog and registry of the commit it builds on.
   */
  sync(tree: TreeReader): Promise<void>;
}

/** One line of /readyz. */
export interface ReadinessCheck {
  name: string;
  ok: boolean;
  message?: string;
  /** "warning": a failed check that is reported without making the broker unready. */
  severity?: "warning";
}

/**
 * Catalog and cluster registry, loaded from the last pushed tip and reloaded whenever the tip
 * moves. A load with problems is reported (logs, /readyz) and the last good catalog keeps being
 * served; on the very first load, whatever loaded cleanly is served. A registry (catalog) that
 * drops a cluster (plan) that still has live instances counts as a problem (offboarding
 * protection): the last good one stays.
 */
export interface LiveRepoView extends RepoView {
  /** Load from the writer's current snapshot. */
  reload(): Promise<void>;
  problems(): readonly Problem[];
  readiness(): Promise<ReadinessCheck[]>;
  close(): void;
}

const EMPTY_CATALOG: Catalog = { services: [], serviceById: () => undefined, planById: () => undefined };

/** Identity of what a view is loaded from: the oids of the catalog/ and registry/ trees. */
async function sourceKey(tree: TreeReader): Promise<string> {
  const root = (await tree.list("")) ?? [];
  const part = (name: string): string => {
    const entry = root.find((e) => e.name === name);
    // A directory edited in a draft has no oid yet: never equal to anything loaded.
    return entry ? (entry.oid ?? `edited-${++editedCounter}`) : "none";
  };
  return `${part("catalog")} ${part("registry")}`;
}
let editedCounter = 0;

export function createRepoView(
  writer: Pick<GitReader, "snapshot" | "onTip">,
  logger: Logger,
  summaries: InstanceSummaryCache = createInstanceSummaryCache(),
  catalogOptions: LoadCatalogOptions = {},
  /** Progress lines of a cold start (reading every instance record): at most one every `everyMs` by `now`. */
  progress: { everyMs?: number; now?: () => number } = {},
): LiveRepoView {
  let catalog: Catalog = EMPTY_CATALOG;
  let clusters: readonly ClusterEntry[] = [];
  let problems: readonly Problem[] = [];
  let loadedKey: string | undefined;
  let chain: Promise<void> = Promise.resolve();

  async function load(tree: TreeReader, key: string): Promise<void> {
    const report = progressReporter(logger, "cold start: reading the instance records", progress);
    const [c, r, summary] = await Promise.all([
      loadCatalog(tree, catalogOptions),
      loadClusters(tree),
      summarizeInstances(tree, summaries, (loaded, total) => report({ loaded, total })),
    ]);
    const stranded = offboardingProblems(summary, {
      clusterIds: new Set(r.clusters.map((x) => x.id)),
      planIds: new Set(c.catalog.services.flatMap((s) => s.plans.map((p) => p.id))),
    });
    const catalogOk = c.problems.length === 0 && !stranded.some((p) => p.file === "catalog/");
    const registryOk = r.problems.length === 0 && !stranded.some((p) => p.file !== "catalog/");
    const first = loadedKey === undefined;
    problems = [...c.problems, ...r.problems, ...stranded];
    for (const p of problems) logger.error({ file: p.file, path: p.path, commit: tree.commit }, formatProblem(p));
    if (first || catalogOk) catalog = c.catalog;
    else logger.warn({ commit: tree.commit }, "catalog has problems: keeping the last good catalog");
    if (first || registryOk) clusters = r.clusters;
    else logger.warn({ commit: tree.commit }, "cluster registry has problems: keeping the last good registry");
    loadedKey = key;
    logger.info(
      { commit: tree.commit, services: catalog.services.length, clusters: clusters.length, problems: problems.length },
      "repository view loaded",
    );
  }

  /** Make the view reflect `tree`'s catalog and registry (loads only when they changed). */
  function sync(tree: TreeReader): Promise<void> {
    const run = async () => {
      const key = await sourceKey(tree);
      if (key !== loadedKey) await load(tree, key);
    };
    chain = chain.then(run, run);
    return chain;
  }

  const unsubscribe = writer.onTip(() => {
    sync(writer.snapshot()).catch((e: unknown) => logger.error({ err: e }, "reloading the repository view failed"));
  });

  return {
    catalog: () => catalog,
    clusters: () => clusters,
    problems: () => problems,
    sync,
    reload: () => sync(writer.snapshot()),
    async readiness() {
      await chain.catch(() => undefined); // report on the latest load, including one under way
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
