import type { Draft, TreeEntryInfo, TreeReader } from "../gitwriter/index.js";
import { CLUSTERS_DIR, INSTANCES_DIR } from "../repo/index.js";
import { draftChecks } from "./composite-draft.js";
import { createRouting, instanceDirOf, segments } from "./routing.js";
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
 * A composite Draft writes into the one store it was made for (`home`): an edit of another
 * store's cluster or instance throws StoreMismatchError naming the store it belongs to (the
 * store set re-runs the operation there), an edit of the control repository from a store's
 * operation throws too. So one operation is one commit in one repository.
 */
/** The store an operation's draft writes into, when it is a store set's composite draft. */
export function draftStore(tree: TreeReader): StoreName | undefined {
  return isCompositeTree(tree) ? tree.home : undefined;
}

export function isCompositeTree(tree: TreeReader): tree is CompositeTree {
  return (tree as Partial<CompositeTree>).parts instanceof Map;
}

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

export function compositeTree(parts: CompositeParts): CompositeTree;
export function compositeTree(parts: CompositeParts, home: { name: StoreName; draft: Draft }): CompositeTree & Draft;
export function compositeTree(parts: CompositeParts, home?: { name: StoreName; draft: Draft }): CompositeTree {
  const readers = new Map(parts.stores);
  if (home) readers.set(home.name, home.draft);
  const controlReader = home?.name === CONTROL ? home.draft : parts.control;
  readers.set(CONTROL, controlReader);
  const routing = createRouting(readers, parts.storeOf, home?.name);

  /** The reader of a path; undefined: a union over the stores (a directory of several). */
  async function readerOf(path: string): Promise<TreeReader | undefined> {
    const p = segments(path);
    if (p[0] === CLUSTERS_DIR && p.length >= 2) return readers.get(await routing.storeOf(p[1]!)) ?? emptyTree;
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
          const owners = await Promise.all(entries.map((e) => routing.storeOf(e.name)));
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
    ...(home ? { home: home.name } : {}),
    storeOfInstance: routing.storeOfInstance,
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
  return home ? draftChecks(tree, home, routing, readers) : tree;
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

/** Waits for the owner checks of a composite draft's writes (see composite-draft.ts); throws the first mismatch. */
export async function settleWrites(draft: Draft): Promise<void> {
  await (draft as Draft & { settle?: () => Promise<void> }).settle?.();
}

/** The tree of a repository without commits. */
export const emptyTree: TreeReader = {
  commit: null,
  readFile: () => Promise.resolve(null),
  readText: () => Promise.resolve(null),
  list: () => Promise.resolve(null),
  oid: () => Promise.resolve(null),
};
