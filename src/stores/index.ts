/**
 * Stores (ADR 0027): besides the control repository (`git.remote`: catalog, registry, overrides,
 * quotas), Git repositories declared in the broker configuration (`stores.<name>`) that hold the
 * instance records and `clusters/<id>/` manifests of the clusters whose registry entry names them
 * (`spec.store`), in the same layout. One operation is one commit in one repository, decided
 * before it runs (ADR 0036): what writes goes through a RoutedWriter.
 */
export { createStoreSet, type Placement, type StoreHealth, type StoreSet, type StoreSetOptions } from "./store-set.js";
export { routedWriter, type RoutedWriter } from "./routed-writer.js";
export type { PlacementScope } from "./composite-draft.js";
export { compositeTree } from "./composite-tree.js";
export { CONTROL, type CompositeParts, type CompositeTree, type StoreName } from "./types.js";
export { clusterStores, openWriters, type OpenWritersOptions } from "./open.js";
export { finishMove, moveCluster, planMove, type MoveClusterOptions, type MovePlan, type MoveStep } from "./move-cluster.js";
export { storeForNewInstance } from "./store-choice.js";
