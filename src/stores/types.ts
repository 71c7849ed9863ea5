import type { TreeReader } from "../gitwriter/index.js";
import { CONTROL_STORE } from "../repo/index.js";

/** A store's name (broker configuration `stores.<name>`); CONTROL is the control repository. */
export type StoreName = string;

/** The control repository (`git.remote`): catalog, registry, overrides, quotas, and the instances of clusters without a store. */
export const CONTROL: StoreName = CONTROL_STORE;

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

