import { BaseError, ServiceUnavailableError } from "../errors/index.js";
import type { TreeReader } from "../gitwriter/index.js";
import { CONTROL_STORE, storeLabel } from "../repo/index.js";

/** A store's name (broker configuration `stores.<name>`); CONTROL is the control repository. */
export type StoreName = string;

/** The control repository (`git.remote`): catalog, registry, overrides, quotas, and the instances of clusters without a store. */
export const CONTROL: StoreName = CONTROL_STORE;

/**
 * An assertion (ADR 0036): an operation queued on one repository edited a path that belongs to
 * another (a cluster of another store, an instance recorded there, or the control repository).
 * StoreSet.route decides the repository before the operation runs by the rules the edits are
 * checked with, so this is a defect (of the route, or of an operation writing where its placement
 * does not say): its edits are dropped, nothing is committed, the request gets a 500 and the log
 * names both repositories. Never retried elsewhere.
 */
export class StoreMismatchError extends BaseError {
  static override readonly code = "StoreMismatch";
  readonly path: string;
  readonly store: StoreName;
  readonly owner: StoreName;

  constructor(path: string, store: StoreName, owner: StoreName) {
    super(`an operation on ${storeLabel(store)} edited ${path}, which belongs to ${storeLabel(owner)}: the route and the edit disagree (a defect); nothing was committed`);
    this.path = path;
    this.store = store;
    this.owner = owner;
  }
}

/** An operation on a cluster whose records are being copied to another store (503, worth retrying shortly). */
export class ClusterMovingError extends ServiceUnavailableError {
  static override readonly code = "ClusterMoving";
  constructor(clusterId: string, to: StoreName) {
    super(`cluster ${clusterId} is moving to ${storeLabel(to)}; try again in a few seconds`, { retryAfter: 5 });
  }
}

/**
 * An operation on a cluster that a move (gitops-broker move-cluster) took out of the store it ran
 * in while it was queued: the store's fence says `moved`, so nothing was written there (503, worth
 * retrying at once: the retry is routed to the cluster's new store).
 */
export class ClusterMovedError extends ServiceUnavailableError {
  static override readonly code = "ClusterMoved";
  constructor(clusterId: string, from: StoreName, to: StoreName) {
    super(`cluster ${clusterId} moved from ${storeLabel(from)} to ${storeLabel(to)} while the request waited; nothing was changed: try again`, { retryAfter: 1 });
  }
}

/**
 * A store that has not answered since the broker started (see startStores): every request for
 * its clusters, read or write, is answered 503 (worth retrying) until it answers; nothing was
 * changed, and nothing is known to be missing.
 */
export class StoreUnavailableError extends ServiceUnavailableError {
  static override readonly code = "StoreUnavailable";
  readonly store: StoreName;
  constructor(store: StoreName, trouble: string) {
    super(
      `${storeLabel(store)} has not answered since the broker started (${trouble}); its clusters' requests are answered 503 until it does, nothing was changed: retry later`,
      { retryAfter: 10 },
    );
    this.store = store;
  }
}

/**
 * What decides the repository of an operation before it runs (see StoreSet.route):
 * - `{ instance }`: an operation on an instance (an OSB request, a re-render, a binding's
 *   cleanup), with `provision` for a provision of an id that may be new;
 * - `{ cluster }`: an operation a human aimed at a cluster (an import onto it, moving an instance
 *   there: then `instance` is the instance moved).
 */
export type Placement = { instance: string; provision?: boolean; cluster?: undefined } | { cluster: string; instance?: string };

export interface CompositeParts {
  /** The control repository's tree (its draft when `home` is the control repository). */
  control: TreeReader;
  /** Every store's tree, the control repository's included under CONTROL (the same reader as `control`). */
  stores: ReadonlyMap<StoreName, TreeReader>;
  /**
   * The store the registry names for a cluster (CONTROL: none of its own); undefined for a cluster
   * the registry does not name (its directory is read from the control repository, and an edit
   * of it is not checked: no repository claims it).
   */
  storeOf: (clusterId: string) => StoreName | undefined;
  /** A composite id of the part commits (see compositeCommit). */
  commit: string | null;
}

/** A TreeReader over several stores; `parts` lets folds over every instance fold each store alone. */
export interface CompositeTree extends TreeReader {
  readonly parts: ReadonlyMap<StoreName, TreeReader>;
  /** The store an instance record directory `instances/<ab>/<cd>/<key>` belongs to (see Routing.storeOfInstance); undefined: none holds it. */
  storeOfInstance: (dir: string) => Promise<StoreName | undefined>;
  /** The store a cluster's directory belongs to: the registry's, or where a finished move fence sends it; undefined: the registry does not name it. */
  storeOfCluster: (clusterId: string) => Promise<StoreName | undefined>;
}

