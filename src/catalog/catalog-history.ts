import type { Problem } from "../errors/index.js";
import type { GitReader, TreeReader } from "../gitwriter/index.js";
import { CATALOG_DIR } from "../repo/index.js";
import { loadCatalog, type LoadCatalogOptions } from "./load-catalog.js";
import type { Catalog } from "./types.js";

/**
 * The catalog as it was, change by change, back along the branch's first-parent history (the
 * merges into the branch, not the commits of the branches merged). Git is the only store
 * (ADR 0001): a restarted broker finds its last good catalog, and the commit a plan's current
 * version came in with, here rather than in any state of its own.
 */

/**
 * How many catalog changes (first-parent commits that changed `catalog/`) a walk looks back at
 * most. Commits that change only records or manifests do not count, so 50 reaches back over
 * months of catalog pull requests however many OSB operations came between them.
 */
export const CATALOG_HISTORY_DEPTH = 50;

export interface CatalogVersion {
  /** The commit that made `catalog/` what it is in this version. */
  commit: string;
  subject: string;
  /** 0: the change that gave the tip its catalog; 1: the one before it, ... */
  back: number;
  tree: TreeReader;
  catalog: Catalog;
  problems: Problem[];
}

export interface CatalogHistory {
  /** The versions, newest first, loaded one at a time as the caller iterates. */
  versions: AsyncIterable<CatalogVersion>;
  /** True when the walk stops at the depth bound while history goes on (older versions were not looked at). */
  bounded: boolean;
}

export async function catalogHistory(
  reader: Pick<GitReader, "log" | "readerAt">,
  tip: string,
  options: { depth?: number; catalogOptions?: LoadCatalogOptions } = {},
): Promise<CatalogHistory> {
  const depth = options.depth ?? CATALOG_HISTORY_DEPTH;
  // One more than the bound: whether there is anything beyond it.
  const commits = await reader.log(tip, [CATALOG_DIR], { firstParent: true, max: depth + 1 });
  const walked = commits.slice(0, depth);
  async function* versions(): AsyncGenerator<CatalogVersion> {
    for (const [back, info] of walked.entries()) {
      const tree = await reader.readerAt(info.commit);
      if (!tree) return; // history shallower than the log says: nothing older can be read either
      const { catalog, problems } = await loadCatalog(tree, options.catalogOptions ?? {});
      yield { commit: info.commit, subject: info.subject, back, tree, catalog, problems };
    }
  }
  return { versions: versions(), bounded: commits.length > depth };
}
