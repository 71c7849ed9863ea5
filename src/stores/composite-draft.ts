import { ClusterMovedError, ClusterMovingError, StoreMismatchError } from "../errors/index.js";
import type { Draft, TreeEntryInfo, TreeReader } from "../gitwriter/index.js";
import { CLUSTERS_DIR, readInstance, scanInstanceRecord, storeLabel } from "../repo/index.js";
import { composite } from "./composite-tree.js";
import { instanceDirOf, segments, type Routing } from "./routing.js";
import { CONTROL, type CompositeParts, type CompositeTree, type StoreName } from "./types.js";

/** The clusters a provision may place a new instance on (see CompositeDraft.placeable). */
export interface PlacementScope<C> {
  clusters: C[];
  /**
   * When `clusters` is not every cluster given: why, in a sentence an OSB description can end
   * with (the store the operation writes, its clusters, what an operator can do).
   */
  narrowed?: string;
}

/**
 * The draft of an operation queued on one store (`home`, ADR 0036): it reads every repository as
 * one tree (compositeTree) and writes into home's draft only. StoreSet.route chose home before the
 * operation ran, by the rules `settle()` checks its edits with (routing.ts): a cluster's directory
 * belongs to the cluster's store, an instance's record to the store of its cluster (or, without a
 * record here, to whichever store holds it), anything else to the control repository. So a
 * mismatch is a defect, thrown as StoreMismatchError (never retried elsewhere); the one legitimate
 * disagreement is a cluster that a move fenced in home since the route (`moving`: 503 until the
 * copy is done; `moved`: 503, the retry goes to its new store).
 */
export class CompositeDraft implements Draft, CompositeTree {
  readonly home: StoreName;
  readonly #tree: CompositeTree;
  readonly #routing: Routing;
  readonly #draft: Draft;
  /** Clusters whose directory was edited, with the first path edited. */
  readonly #clusters = new Map<string, string>();
  /** Instance record directories edited, with the first path edited. */
  readonly #instances = new Map<string, string>();

  constructor(parts: CompositeParts, home: { name: StoreName; draft: Draft }) {
    const { tree, routing } = composite(parts, home);
    this.home = home.name;
    this.#tree = tree;
    this.#routing = routing;
    this.#draft = home.draft;
  }

  get commit(): string | null {
    return this.#tree.commit;
  }
  get parts(): ReadonlyMap<StoreName, TreeReader> {
    return this.#tree.parts;
  }
  get changed(): boolean {
    return this.#draft.changed;
  }
  readFile(path: string): Promise<Uint8Array | null> {
    return this.#tree.readFile(path);
  }
  readText(path: string): Promise<string | null> {
    return this.#tree.readText(path);
  }
  list(dir: string): Promise<TreeEntryInfo[] | null> {
    return this.#tree.list(dir);
  }
  oid(path: string): Promise<string | null> {
    return this.#tree.oid(path);
  }
  storeOfInstance(dir: string): Promise<StoreName | undefined> {
    return this.#routing.storeOfInstance(dir);
  }
  storeOfCluster(clusterId: string): Promise<StoreName | undefined> {
    return this.#routing.storeOf(clusterId);
  }

  write(path: string, content: string | Uint8Array): void {
    this.#claim(path);
    this.#draft.write(path, content);
  }

  remove(path: string): void {
    this.#claim(path);
    this.#draft.remove(path);
  }

  /** Notes what an edit must be checked against; a path of the control repository from a store's operation is refused at once. */
  #claim(path: string): void {
    const p = segments(path);
    if (p[0] === CLUSTERS_DIR && p.length >= 2) {
      if (!this.#clusters.has(p[1]!)) this.#clusters.set(p[1]!, path);
      return;
    }
    const dir = instanceDirOf(p);
    if (dir !== undefined) {
      if (!this.#instances.has(dir)) this.#instances.set(dir, path);
      return;
    }
    if (this.home !== CONTROL) throw mismatch(path, this.home, CONTROL);
  }

  /**
   * Checks every edit against the repository it belongs to, once the operation has made them
   * (the store set calls it before taking the operation's outcome): throws ClusterMovingError,
   * ClusterMovedError or StoreMismatchError (see the class), and the edits are dropped.
   */
  async settle(): Promise<void> {
    for (const [clusterId, path] of this.#clusters) await this.#checkCluster(clusterId, path);
    for (const [dir, path] of this.#instances) await this.#checkInstance(dir, path);
  }

  async #checkCluster(clusterId: string, path: string): Promise<void> {
    const fence = (await this.#routing.fences()).get(this.home)?.get(clusterId);
    if (fence?.state === "moving") {
      throw new ClusterMovingError(`cluster ${clusterId} is moving to ${storeLabel(fence.to)}; try again in a few seconds`, { clusterId, to: fence.to });
    }
    const owner = await this.#routing.storeOf(clusterId);
    if (owner === undefined || owner === this.home) return;
    if (fence?.state === "moved") {
      throw new ClusterMovedError(
        `cluster ${clusterId} moved from ${storeLabel(this.home)} to ${storeLabel(owner)} while the request waited; nothing was changed: try again`,
        { clusterId, from: this.home, to: owner },
      );
    }
    throw mismatch(path, this.home, owner);
  }

  /** The record here goes where its cluster is; without one, an edit goes where a live record is. */
  async #checkInstance(dir: string, path: string): Promise<void> {
    const text = await this.#draft.readText(`${dir}/instance.yaml`);
    if (text !== null) {
      const clusterId = scanInstanceRecord(text)?.clusterId ?? (await readInstance(this.#draft, dir.split("/").pop()!))?.spec.clusterId;
      if (clusterId) await this.#checkCluster(clusterId, path);
      return;
    }
    const owner = await this.#routing.storeOfInstance(dir);
    if (owner === undefined || owner === this.home) return;
    const there = await this.#tree.parts.get(owner)?.readText(`${dir}/instance.yaml`);
    // A deleted record elsewhere does not own the id: a re-provision starts a new one here.
    if (there != null && scanInstanceRecord(there)?.deleted === true) return;
    throw mismatch(path, this.home, owner);
  }

  /**
   * The clusters among `clusters` whose directory is in home: where a provision routed here may
   * place its instance (a new id's store is a function of the id, ADR 0027; the operation never
   * places it in another store's cluster, ADR 0036).
   */
  async placeable<C extends { id: string }>(clusters: readonly C[]): Promise<PlacementScope<C>> {
    const owners = await Promise.all(clusters.map(async (c) => (await this.#routing.storeOf(c.id)) ?? CONTROL));
    const own = clusters.filter((_, i) => owners[i] === this.home);
    if (own.length === clusters.length) return { clusters: own };
    const which = own.length === 0 ? "it has none" : own.map((c) => c.id).join(", ");
    return {
      clusters: own,
      narrowed:
        `a new instance is placed only among the clusters of ${storeLabel(this.home)} (${which}), the repository its id belongs to, never in another store's ` +
        `(every replica must send one id to one repository): add a cluster or capacity there, or mark its full clusters unschedulable (spec.schedulable: false) so that new ids go to the other stores`,
    };
  }
}

/** The assertion of a CompositeDraft (see StoreMismatchError). */
function mismatch(path: string, store: StoreName, owner: StoreName): StoreMismatchError {
  return new StoreMismatchError(
    `an operation on ${storeLabel(store)} edited ${path}, which belongs to ${storeLabel(owner)}: the route and the edit disagree (a defect); nothing was committed`,
    { path, store, owner },
  );
}
