import { catalogHistory, CATALOG_HISTORY_DEPTH, newestGoodVersion, registryHistory } from "./catalog-history.js";
import { loadCatalog, type LoadCatalogOptions } from "./load-catalog.js";
import { loadClusters, type ClusterEntry } from "./load-clusters.js";
import type { Catalog } from "./types.js";
import { formatProblem, type Problem } from "../errors/index.js";
import type { GitReader, TreeReader } from "../gitwriter/index.js";
import { progressReporter, type Logger } from "../log/index.js";
import {
  createInstanceSummaryCache,
  mergeSummaries,
  offboardingProblems,
  readMoveFences,
  storeProblems,
  summarizeStores,
  type InstanceSummary,
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
 * Where the catalog served comes from. `tip`: the last load, which had no problems.
 * `last-good`: the last load had problems, so an earlier catalog without any is served: the one
 * loaded before, or after a restart the newest one in the branch's history (ADR 0012).
 * `partial`: no good catalog is known (none within the history bound): the last load's, without
 * the files that failed.
 */
export interface CatalogSource {
  state: "tip" | "last-good" | "partial";
  /** The commit the catalog served was loaded from (null: an empty repository). */
  commit: string | null;
  /** A last good catalog found in history at start: how many catalog changes back it is. */
  back?: number;
}

/**
 * Catalog and cluster registry, loaded from the last pushed tip and reloaded whenever the tip
 * moves. A load with problems is reported (logs, a /readyz warning, metrics) and the last good
 * catalog and registry keep being served. On the very first load (a start), the last good catalog
 * and the last good registry are looked for in the branch's first-parent history, at most
 * CATALOG_HISTORY_DEPTH changes of each back; only when there is none is whatever loaded cleanly
 * served. A registry (catalog) that drops a cluster (plan) that still has live instances counts
 * as a problem (offboarding protection): the last good one stays.
 */
export interface LiveRepoView extends RepoView {
  catalogSource(): CatalogSource;
  /** Where the cluster registry served comes from, as catalogSource() says of the catalog. */
  registrySource(): CatalogSource;
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
  writer: Pick<GitReader, "snapshot" | "onTip" | "log" | "readerAt">,
  logger: Logger,
  summaries: InstanceSummaryCache = createInstanceSummaryCache(),
  catalogOptions: LoadCatalogOptions = {},
  options: {
    /** How many catalog changes back a start looks for the last good catalog. */
    historyDepth?: number;
    /** Progress lines of a cold start (reading every instance record): at most one every `everyMs` by `now`. */
    progress?: { everyMs?: number; now?: () => number };
    /** The stores this broker has, the control repository's name included (ADR 0027); undefined: no stores. */
    stores?: ReadonlySet<string>;
  } = {},
): LiveRepoView {
  const { historyDepth = CATALOG_HISTORY_DEPTH, progress = {}, stores } = options;
  const history: HistorySearch = { writer, logger, catalogOptions, historyDepth };
  /** Registry problems of stores: a cluster naming an unknown store, or not the store its instances are in. */
  let fenced: ReadonlyMap<string, ReadonlySet<string>> = new Map();
  const misplaced = (parts: ReadonlyMap<string, InstanceSummary>, registry: readonly ClusterEntry[]): Problem[] =>
    stores ? storeProblems(parts, registry, stores, fenced) : [];
  let catalog: Catalog = EMPTY_CATALOG;
  let clusters: readonly ClusterEntry[] = [];
  let problems: readonly Problem[] = [];
  let source: CatalogSource = { state: "partial", commit: null };
  let registrySource: CatalogSource = { state: "partial", commit: null };
  let loadedKey: string | undefined;
  let chain: Promise<void> = Promise.resolve();

  async function load(tree: TreeReader, key: string): Promise<void> {
    const report = progressReporter(logger, "cold start: reading the instance records", progress);
    const [c, r, parts] = await Promise.all([
      loadCatalog(tree, catalogOptions),
      loadClusters(tree),
      summarizeStores(tree, summaries, (loaded, total) => report({ loaded, total })),
    ]);
    const summary = mergeSummaries(parts.values());
    fenced = stores ? await readFences(tree) : new Map();
    const stranded = [
      ...offboardingProblems(summary, {
        clusterIds: new Set(r.clusters.map((x) => x.id)),
        planIds: new Set(c.catalog.services.flatMap((s) => s.plans.map((p) => p.id))),
      }),
      ...misplaced(parts, r.clusters),
    ];
    const catalogOk = c.problems.length === 0 && !stranded.some((p) => p.file === "catalog/");
    const registryOk = r.problems.length === 0 && !stranded.some((p) => p.file !== "catalog/");
    const first = loadedKey === undefined;
    problems = [...c.problems, ...r.problems, ...stranded];
    for (const p of problems) logger.error({ file: p.file, path: p.path, commit: tree.commit }, formatProblem(p));
    if (catalogOk) {
      catalog = c.catalog;
      source = { state: "tip", commit: tree.commit };
    } else if (first) {
      ({ catalog, source } = await lastGoodCatalog(history, tree, c.catalog, summary, new Set(r.clusters.map((x) => x.id))));
    } else {
      logger.warn({ commit: tree.commit, catalogCommit: source.commit }, "catalog has problems: keeping the last good catalog");
      if (source.state === "tip") source = { ...source, state: "last-good" };
    }
    if (registryOk) {
      clusters = r.clusters;
      registrySource = { state: "tip", commit: tree.commit };
    } else if (first) {
      ({ clusters, source: registrySource } = await lastGoodRegistry(history, tree, r.clusters, (registry) =>
        !offboardingProblems(summary, { clusterIds: new Set(registry.map((x) => x.id)), planIds: new Set<string>() }).some((p) => p.file !== "catalog/") &&
        misplaced(parts, registry).length === 0,
      ));
    } else {
      logger.warn({ commit: tree.commit }, "cluster registry has problems: keeping the last good registry");
      if (registrySource.state === "tip") registrySource = { ...registrySource, state: "last-good" };
    }
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
    catalogSource: () => source,
    registrySource: () => registrySource,
    clusters: () => clusters,
    problems: () => problems,
    sync,
    reload: () => sync(writer.snapshot()),
    async readiness() {
      await chain.catch(() => undefined); // report on the latest load, including one under way
      // A warning, not unreadiness: the broker answers from its last good catalog and registry,
      // and every replica reads the same branch, so a 503 here would take them all out of
      // service at once for a file an operator fixes in Git (ADR 0021).
      const checks: ReadinessCheck[] = [
        {
          name: "repository",
          ok: problems.length === 0,
          ...(problems.length ? { severity: "warning" as const, message: problems.map(formatProblem).join("; ") } : {}),
        },
      ];
      if (source.state !== "tip") checks.push({ name: "catalog-source", ok: false, severity: "warning", message: describeSource(source) });
      if (registrySource.state !== "tip") {
        checks.push({ name: "registry-source", ok: false, severity: "warning", message: describeSource(registrySource, "cluster registry") });
      }
      return checks;
    },
    close: unsubscribe,
  };
}

/** The clusters each store of a tree of several has a move fence for (a move under way, ADR 0027). */
async function readFences(tree: TreeReader): Promise<ReadonlyMap<string, ReadonlySet<string>>> {
  if (!tree.parts) return new Map();
  const each = await Promise.all([...tree.parts].map(async ([name, part]) => [name, new Set((await readMoveFences(part)).keys())] as const));
  return new Map(each);
}

/** What a start searches the branch's history with for the last good catalog and registry. */
interface HistorySearch {
  writer: Pick<GitReader, "log" | "readerAt">;
  logger: Logger;
  catalogOptions: LoadCatalogOptions;
  historyDepth: number;
}

/**
 * A start on a catalog with problems: the newest catalog of the branch's first-parent history
 * that loads without problems and strands no live instance of `tree`, as a broker that had been
 * running would have kept it; failing that, what loaded cleanly at `tree`.
 */
async function lastGoodCatalog(
  { writer, logger, catalogOptions, historyDepth }: HistorySearch,
  tree: TreeReader,
  partial: Catalog,
  summary: InstanceSummary,
  clusterIds: Set<string>,
): Promise<{ catalog: Catalog; source: CatalogSource }> {
  const tip = tree.commit;
  const found =
    tip === null
      ? { bounded: false }
      : await newestGoodVersion(
          () => catalogHistory(writer, tip, { catalogOptions, depth: historyDepth }),
          (version) => {
            const planIds = new Set(version.catalog.services.flatMap((s) => s.plans.map((p) => p.id)));
            return !offboardingProblems(summary, { clusterIds, planIds }).some((p) => p.file === "catalog/");
          },
        );
  // Reading history failed (a git error): the start goes on with what the tip offers.
  if ("error" in found) logger.error({ err: found.error, commit: tip }, "looking for the last good catalog in the branch's history failed");
  const { version, bounded } = found;
  if (version) {
    logger.error(
      { commit: tip, catalogCommit: version.commit, subject: version.subject, back: version.back },
      `catalog has problems: serving the last good catalog, of commit ${version.commit.slice(0, 12)} (${version.back} catalog change(s) back: ${JSON.stringify(version.subject)}) until the problems are fixed`,
    );
    return { catalog: version.catalog, source: { state: "last-good", commit: version.commit, back: version.back } };
  }
  logger.error(
    { commit: tip, depth: historyDepth, bounded },
    bounded
      ? `catalog has problems and none of the last ${historyDepth} catalog changes loads without any: serving only what loads (the plans that fail are missing)`
      : "catalog has problems and no earlier catalog loads without any: serving only what loads (the plans that fail are missing)",
  );
  return { catalog: partial, source: { state: "partial", commit: tip } };
}

/**
 * A start on a registry with problems (a file that does not load, a cluster with live instances
 * dropped or in another store): the newest registry of the branch's first-parent history that
 * loads without problems and that `good` accepts, as a broker that had been running would have
 * kept it; failing that, the clusters that loaded at `tree`.
 */
async function lastGoodRegistry(
  { writer, logger, historyDepth }: HistorySearch,
  tree: TreeReader,
  partial: ClusterEntry[],
  good: (clusters: readonly ClusterEntry[]) => boolean,
): Promise<{ clusters: readonly ClusterEntry[]; source: CatalogSource }> {
  const tip = tree.commit;
  const found = tip === null ? { bounded: false } : await newestGoodVersion(() => registryHistory(writer, tip, { depth: historyDepth }), (version) => good(version.clusters));
  if ("error" in found) logger.error({ err: found.error, commit: tip }, "looking for the last good cluster registry in the branch's history failed");
  const { version } = found;
  if (version) {
    logger.error(
      { commit: tip, registryCommit: version.commit, subject: version.subject, back: version.back },
      `cluster registry has problems: serving the last good registry, of commit ${version.commit.slice(0, 12)} (${version.back} registry change(s) back: ${JSON.stringify(version.subject)}) until the problems are fixed`,
    );
    return { clusters: version.clusters, source: { state: "last-good", commit: version.commit, back: version.back } };
  }
  logger.error({ commit: tip, depth: historyDepth }, "cluster registry has problems and no earlier registry loads without any: serving the clusters that load");
  return { clusters: partial, source: { state: "partial", commit: tip } };
}

/** The /readyz line of a catalog (or registry) that is not the tip's. */
export function describeSource(source: CatalogSource, what: "catalog" | "cluster registry" = "catalog"): string {
  const change = what === "catalog" ? "catalog" : "registry";
  if (source.state === "partial") return `serving the ${what} of ${source.commit ?? "the empty repository"} without the files that have problems (no earlier ${what} without problems is known)`;
  const where = source.back === undefined ? "" : `, found ${source.back} ${change} change(s) back in the branch's history at start`;
  return `serving the last good ${what}, of commit ${source.commit ?? "?"}${where}: the tip's has problems`;
}
