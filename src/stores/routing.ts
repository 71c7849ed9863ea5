import type { TreeReader } from "../gitwriter/index.js";
import { INSTANCES_DIR, readMoveFences, scanInstanceRecord, type MoveFence } from "../repo/index.js";
import type { StoreName } from "./types.js";

export const segments = (path: string): string[] => path.split("/").filter((s) => s !== "");

/** Directory `instances/<ab>/<cd>/<key>` of a path below it, else undefined. */
export function instanceDirOf(parts: string[]): string | undefined {
  return parts[0] === INSTANCES_DIR && parts.length >= 4 ? parts.slice(0, 4).join("/") : undefined;
}

/**
 * Where a composite tree finds a cluster's directory and an instance's record (ADR 0027), and so
 * where an operation belongs (ADR 0036): StoreSet.route and the checks of a composite draft ask
 * the same questions of it, so that what is routed to a store is what its edits belong to.
 */
export interface Routing {
  /** The store a cluster's directory is in: the registry's, or where a finished move fence sends it; undefined: the registry does not name it. */
  storeOf: (clusterId: string) => Promise<StoreName | undefined>;
  /** The move fences of every store, by store and cluster (read once per tree). */
  fences: () => Promise<ReadonlyMap<StoreName, ReadonlyMap<string, MoveFence>>>;
  /** The store holding `instances/<ab>/<cd>/<key>`; undefined: none. */
  storeOfInstance: (dir: string) => Promise<StoreName | undefined>;
}

/**
 * `registryStore` is the registry's answer; the fences are read from the trees themselves (a move
 * writes them with its own writers, never through a composite draft). `home`: the store a draft
 * writes into, looked at first; its answers are not memoized, since the draft's writes change them.
 */
export function createRouting(
  readers: ReadonlyMap<StoreName, TreeReader>,
  registryStore: (clusterId: string) => StoreName | undefined,
  home?: StoreName,
): Routing {
  let fenceLoad: Promise<Map<StoreName, Map<string, MoveFence>>> | undefined;
  const fences = () =>
    (fenceLoad ??= (async () => new Map(await Promise.all([...readers].map(async ([name, r]) => [name, await readMoveFences(r)] as const))))());

  async function storeOf(clusterId: string): Promise<StoreName | undefined> {
    const named = registryStore(clusterId);
    if (named === undefined) return undefined;
    let store: StoreName = named;
    const all = await fences();
    for (let hop = 0; hop < 3; hop++) {
      const fence: MoveFence | undefined = all.get(store)?.get(clusterId);
      if (fence?.state !== "moved" || !readers.has(fence.to)) break;
      store = fence.to;
    }
    return store;
  }

  /**
   * Normally one store holds a record. Two after a re-provision of an id whose deleted record is
   * in another store, or while its cluster moves (from the copy until the old store's files are
   * removed): then the copy in the store of its cluster wins (storeOf: the source until its fence
   * says moved, the target from then on), then a live record; ties go to home, then the others
   * in name order.
   */
  async function locate(dir: string): Promise<StoreName | undefined> {
    const order = [...(home !== undefined ? [home] : []), ...[...readers.keys()].filter((n) => n !== home).sort()];
    const holders: StoreName[] = [];
    for (const name of order) if (await readers.get(name)!.oid(`${dir}/instance.yaml`)) holders.push(name);
    if (holders.length <= 1) return holders[0];
    const ranked = await Promise.all(
      holders.map(async (name) => {
        const text = await readers.get(name)!.readText(`${dir}/instance.yaml`);
        const scanned = text === null ? undefined : scanInstanceRecord(text);
        const owner = scanned === undefined ? undefined : await storeOf(scanned.clusterId);
        return { name, rank: (owner === name ? 0 : 2) + (scanned?.deleted === false ? 0 : 1) };
      }),
    );
    return ranked.reduce((best, next) => (next.rank < best.rank ? next : best)).name;
  }

  const located = new Map<string, Promise<StoreName | undefined>>();
  return {
    storeOf,
    fences,
    storeOfInstance: (dir) => {
      if (home !== undefined) return locate(dir);
      let found = located.get(dir);
      if (!found) located.set(dir, (found = locate(dir)));
      return found;
    },
  };
}
