/**
 * The status watcher: how far an operation is, for last_operation, GET instance and GET binding,
 * and the binding credentials, read from memory. `commit` mode trusts the push; `live` mode
 * (per cluster) watches the cluster's objects and its Argo CD / Flux sync state (ADR 0006).
 * It never writes to Git.
 */
export { createCommitStatusWatcher } from "./commit-mode.js";
export { createStatusWatcher } from "./watcher.js";
export type {
  BindingOutcome,
  BindingResult,
  OperationState,
  OperationStatus,
  StatusMode,
  StatusView,
  StatusWatcher,
  StatusWatcherOptions,
  StatusWriter,
} from "./types.js";

export { createWatchCache } from "./kube-cache.js";
export type { WatchCache, WatchCacheEvent, WatchCacheEventType, WatchCacheOptions, WatchCacheState } from "./kube-cache.js";
