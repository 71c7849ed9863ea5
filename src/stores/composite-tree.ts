import type { Draft, TreeEntryInfo, TreeReader } from "../gitwriter/index.js";
import { CLUSTERS_DIR, INSTANCES_DIR } from "../repo/index.js";
import { createRouting, instanceDirOf, segments, type Routing } from "./routing.js";
import { CONTROL, type CompositeParts, type CompositeTree, type StoreName } from "./types.js";

export type { CompositeParts, CompositeTree };

/**
 * One tree over the control repository and every store (ADR 0027): what an operation, a fold or
 * a read of the broker sees is the same layout as with one repository, so the code that reads
 * and renders does not know about stores.
 *
 *   catalog/, registry/, overrides/, quota/, anything else    the control repository
 *   clusters/<id>/...                                         the store of cluster <id>
 *   instances/...                                             every store (a record lives in one)
 *
 * An operation writes through a CompositeDraft (composite-draft.ts): one store's draft, the
 * others read as they are. So one operation is one commit in one repository.
 */

/** `stores:<name>=<commit>,...` in name order; a part without a commit is `<name>=`. */
export function compositeCommit(commits: ReadonlyMap<StoreName, string | null>): string {
  return `stores:${[...commits].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, commit]) => `${name}=${commit ?? ""}`).join(",")}`;
}

/** The part commits of a compositeCommit id; null when `id` is not one. */
export function parseCompositeCommit(id: string): Map<StoreName, string | null> | null {
  if (!id.startsWith("stores:")) return null;
  const parts = new Map<StoreName, string | null>();
  for (const item of id.slice("stores:".length).split(",")) {
    const eq = item.indexOf("=");
    if (eq <= 0) return null;
    const commit = item.slice(eq + 1);
    if (commit !== "" && !/^[0-9a-f]{40}$/.test(commit)) return null;
    parts.set(item.slice(0, eq), commit === "" ? null : commit);
  }
  return parts;
}

function byName(a: TreeEntryInfo, b: TreeEntryInfo): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** Entries of several listings by name; a name found in more than one has no oid (no single tree). */
function union(listings: (TreeEntryInfo[] | null)[]): TreeEntryInfo[] | null {
  if (listings.every((l) => l === null)) return null;
  const merged = new Map<string, TreeEntryInfo>();
  for (const listing of listings) {
    for (const entry of listing ?? []) {
      const seen = merged.get(entry.name);
      if (!seen) merged.set(entry.name, entry);
      else if (seen.oid !== entry.oid) merged.set(entry.name, { name: entry.name, type: seen.type });
    }
  }
  return [...merged.values()].sort(byName);
}

/** A composite tree over `parts` (snapshots, or a reader at a composite commit). */
export function compositeTree(parts: CompositeParts): CompositeTree {
  return composite(parts).tree;
}

/**
 * The tree and its routing; with `home`, that store's part is its draft (reads see the
 * operation's own edits) and its routing looks there first (see createRouting).
 */
export function composite(parts: CompositeParts, home?: { name: StoreName; draft: Draft }): { tree: CompositeTree; routing: Routing } {
  const readers = new Map(parts.stores);
  if (home) readers.set(home.name, home.draft);
  const controlReader = home?.name === CONTROL ? home.draft : parts.control;
  readers.set(CONTROL, controlReader);
  const routing = createRouting(readers, parts.storeOf, home?.name);

  /** The reader of a path; undefined: a union over the stores (a directory of several). */
  async function readerOf(path: string): Promise<TreeReader | undefined> {
    const p = segments(path);
    if (p[0] === CLUSTERS_DIR && p.length >= 2) return readers.get((await routing.storeOf(p[1]!)) ?? CONTROL) ?? emptyTree;
    if (p[0] === INSTANCES_DIR) {
      const dir = instanceDirOf(p);
      if (dir === undefined) return undefined;
      const name = await routing.storeOfInstance(dir);
      return name === undefined ? (home?.draft ?? controlReader) : readers.get(name)!;
    }
    if (p.length === 0 || p[0] === CLUSTERS_DIR) return undefined;
    return controlReader;
  }

  async function list(dir: string): Promise<TreeEntryInfo[] | null> {
    const reader = await readerOf(dir);
    if (reader) return reader.list(dir);
    const p = segments(dir);
    if (p.length === 0) return rootListing(readers, controlReader);
    if (p[0] === CLUSTERS_DIR) {
      // Each cluster's directory from the store it belongs to.
      const listings = await Promise.all(
        [...readers].map(async ([name, r]) => {
          const entries = (await r.list(CLUSTERS_DIR)) ?? [];
          const owners = await Promise.all(entries.map(async (e) => (await routing.storeOf(e.name)) ?? CONTROL));
          return entries.filter((_, i) => owners[i] === name);
        }),
      );
      return union(listings);
    }
    return union(await Promise.all([...readers.values()].map((r) => r.list(dir))));
  }

  const tree: CompositeTree = {
    get commit() {
      return parts.commit;
    },
    parts: readers,
    storeOfInstance: routing.storeOfInstance,
    storeOfCluster: routing.storeOf,
    async readFile(path) {
      return (await readerOf(path))?.readFile(path) ?? null;
    },
    async readText(path) {
      return (await readerOf(path))?.readText(path) ?? null;
    },
    list,
    async oid(path) {
      const reader = await readerOf(path);
      if (reader) return reader.oid(path);
      const entries = await list(path.split("/").slice(0, -1).join("/"));
      return entries?.find((e) => e.name === path.split("/").pop())?.oid ?? null;
    },
  };
  return { tree, routing };
}

/** The root: the control repository's entries, with `instances` and `clusters` merged from every store. */
async function rootListing(readers: ReadonlyMap<StoreName, TreeReader>, control: TreeReader): Promise<TreeEntryInfo[]> {
  const root = ((await control.list("")) ?? []).filter((e) => e.name !== INSTANCES_DIR && e.name !== CLUSTERS_DIR);
  const extra: TreeEntryInfo[] = [];
  for (const name of [INSTANCES_DIR, CLUSTERS_DIR]) {
    const entries = await Promise.all([...readers.values()].map(async (r) => ((await r.list("")) ?? []).find((e) => e.name === name) ?? null));
    const merged = union(entries.map((e) => (e ? [e] : null)));
    if (merged) extra.push(...merged);
  }
  return [...root, ...extra].sort(byName);
}

/** The tree of a repository without commits. */
export const emptyTree: TreeReader = {
  commit: null,
  readFile: () => Promise.resolve(null),
  readText: () => Promise.resolve(null),
  list: () => Promise.resolve(null),
  oid: () => Promise.resolve(null),
};
