import type { Problem } from "../errors/index.js";
import type { GitReader, TreeReader } from "../gitwriter/index.js";
import { CATALOG_DIR, CLUSTER_REGISTRY_DIR } from "../repo/index.js";
import { loadCatalog, type LoadCatalogOptions } from "./load-catalog.js";
import { loadClusters, type ClusterEntry } from "./load-clusters.js";
import type { Catalog } from "./types.js";

/**
 * The catalog (and the cluster registry) as it was, change by change, back along the branch's
 * first-parent history (the merges into the branch, not the commits of the branches merged). Git
 * is the only store (ADR 0001): a restarted broker finds its last good catalog and registry, and
 * the commit a plan's current version came in with, here rather than in any state of its own.
 */

/**
 * How many catalog changes (first-parent commits that changed `catalog/`) a walk looks back at
 * most. Commits that change only records or manifests do not count, so 50 reaches back over
 * months of catalog pull requests however many OSB operations came between them. The same bound
 * holds for registry changes.
 */
export const CATALOG_HISTORY_DEPTH = 50;

/** One version of a directory in the walk. */
interface Version {
  /** The commit that made the directory what it is in this version. */
  commit: string;
  subject: string;
  /** 0: the change that gave the tip its version; 1: the one before it, ... */
  back: number;
  tree: TreeReader;
  problems: Problem[];
}

export interface CatalogVersion extends Version {
  catalog: Catalog;
}

export interface RegistryVersion extends Version {
  clusters: ClusterEntry[];
}

export interface History<V> {
  /** The versions, newest first, loaded one at a time as the caller iterates. */
  versions: AsyncIterable<V>;
  /** True when the walk stops at the depth bound while history goes on (older versions were not looked at). */
  bounded: boolean;
}

export type CatalogHistory = History<CatalogVersion>;

type HistoryReader = Pick<GitReader, "log" | "readerAt">;

export function catalogHistory(
  reader: HistoryReader,
  tip: string,
  options: { depth?: number; catalogOptions?: LoadCatalogOptions } = {},
): Promise<CatalogHistory> {
  return historyOf(reader, tip, CATALOG_DIR, options.depth, (tree) => loadCatalog(tree, options.catalogOptions ?? {}));
}

/** The cluster registry's versions (`registry/clusters/`), as catalogHistory walks the catalog's. */
export function registryHistory(reader: HistoryReader, tip: string, options: { depth?: number } = {}): Promise<History<RegistryVersion>> {
  return historyOf(reader, tip, CLUSTER_REGISTRY_DIR, options.depth, loadClusters);
}

async function historyOf<T extends { problems: Problem[] }>(
  reader: HistoryReader,
  tip: string,
  dir: string,
  depth: number = CATALOG_HISTORY_DEPTH,
  load: (tree: TreeReader) => Promise<T>,
): Promise<History<Version & T>> {
  // One more than the bound: whether there is anything beyond it.
  const commits = await reader.log(tip, [dir], { firstParent: true, max: depth + 1 });
  const walked = commits.slice(0, depth);
  async function* versions(): AsyncGenerator<Version & T> {
    for (const [back, info] of walked.entries()) {
      const tree = await reader.readerAt(info.commit);
      if (!tree) return; // history shallower than the log says: nothing older can be read either
      yield { commit: info.commit, subject: info.subject, back, tree, ...(await load(tree)) };
    }
  }
  return { versions: versions(), bounded: commits.length > depth };
}

/**
 * The newest version of a walk that loads without problems and that `keeps` accepts (it strands
 * no live instance): what a broker that had kept running would still serve. None within the
 * bound: no `version`. History that cannot be read (a git error) ends the walk with `error`.
 */
export async function newestGoodVersion<V extends Version>(
  walk: () => Promise<History<V>>,
  keeps: (version: V) => boolean,
): Promise<{ version?: V; bounded: boolean; error?: unknown }> {
  let bounded = false;
  try {
    const history = await walk();
    bounded = history.bounded;
    for await (const version of history.versions) if (version.problems.length === 0 && keeps(version)) return { version, bounded };
  } catch (error) {
    return { bounded, error };
  }
  return { bounded };
}
