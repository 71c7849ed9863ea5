import type { Draft, TreeReader } from "../gitwriter/index.js";
import { CLUSTERS_DIR, INSTANCES_DIR, scanInstanceRecord } from "../repo/index.js";
import { instanceDirOf, segments, type Routing } from "./routing.js";
import { ClusterMovingError, CONTROL, StoreMismatchError, type CompositeTree, type StoreName } from "./types.js";

/**
 * A composite tree that writes into `home.draft`, checking where each edit belongs: a cluster's
 * directory to its store (a fence `moving` in home refuses it, see MoveFence), an instance's
 * record to the store holding it (a new one: home), the rest to the control repository. The
 * Draft's writes are synchronous and the checks read trees, so they run beside the operation and
 * `settle()` (settleWrites) throws the first mismatch before the operation's outcome is taken.
 */
export function draftChecks(
  tree: CompositeTree,
  home: { name: StoreName; draft: Draft },
  routing: Routing,
  readers: ReadonlyMap<StoreName, TreeReader>,
): CompositeTree & Draft {
  async function checkOwner(p: string[], path: string): Promise<void> {
    let owner: StoreName;
    if (p[0] === CLUSTERS_DIR && p.length >= 2) {
      owner = await routing.storeOf(p[1]!);
      const fence = (await routing.fences()).get(home.name)?.get(p[1]!);
      if (owner === home.name && fence?.state === "moving") throw new ClusterMovingError(p[1]!, fence.to);
    } else if (p[0] === INSTANCES_DIR && instanceDirOf(p) !== undefined) {
      const dir = instanceDirOf(p)!;
      owner = (await routing.storeOfInstance(dir)) ?? home.name;
      if (owner !== home.name) {
        // A deleted record elsewhere does not own the id: a re-provision starts a new one here.
        const text = await readers.get(owner)!.readText(`${dir}/instance.yaml`);
        if (text !== null && scanInstanceRecord(text)?.deleted === true) return;
      }
    } else {
      owner = CONTROL;
    }
    if (owner !== home.name) throw new StoreMismatchError(path, home.name, owner);
  }

  const { draft } = home;
  const pending: Promise<void>[] = [];
  let mismatch: unknown;
  const checked = (path: string, edit: () => void): void => {
    const p = segments(path);
    if (p[0] !== CLUSTERS_DIR && p[0] !== INSTANCES_DIR && home.name !== CONTROL) throw new StoreMismatchError(path, home.name, CONTROL);
    pending.push(checkOwner(p, path).catch((e: unknown) => void (mismatch ??= e)));
    edit();
  };
  return Object.assign(tree, {
    write: (path: string, content: string | Uint8Array) => checked(path, () => draft.write(path, content)),
    remove: (path: string) => checked(path, () => draft.remove(path)),
    get changed() {
      return draft.changed;
    },
    async settle() {
      await Promise.all(pending.splice(0));
      if (mismatch !== undefined) throw mismatch as Error;
    },
  });
}
