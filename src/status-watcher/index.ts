import type { BindingRecord, InstanceRecord, OperationEntry } from "../repo/index.js";

/**
 * The status watcher answers "how far is this operation?" for last_operation, GET instance and
 * GET binding. It never writes to Git.
 *
 * `commit` mode (this module today): an operation is `succeeded` as soon as its commit is on the
 * remote, which is always the case for an operation the broker has recorded, because the broker
 * acknowledges only after the push. The `live` mode (reading the clusters and the Argo CD / Flux
 * sync state) plugs in behind the same interface.
 */

export type OperationState = "in progress" | "succeeded" | "failed";

export interface OperationStatus {
  state: OperationState;
  description?: string;
  instanceUsable?: boolean;
  updateRepeatable?: boolean;
}

export interface BindingResult {
  /** Credentials as read from the live cluster (never from Git). Undefined when the mode cannot read them. */
  credentials?: Record<string, unknown>;
  endpoints?: unknown[];
}

export interface StatusWatcher {
  readonly mode: "commit";
  instanceStatus(instance: InstanceRecord, operation: OperationEntry): OperationStatus;
  bindingStatus(instance: InstanceRecord, binding: BindingRecord, operation: OperationEntry): OperationStatus;
  bindingResult(instance: InstanceRecord, binding: BindingRecord): BindingResult;
}

const COMMIT_MODE_NOTE = "committed and pushed to the GitOps repository (status.mode commit: the cluster is not observed)";

export function createCommitStatusWatcher(): StatusWatcher {
  return {
    mode: "commit",
    instanceStatus(_instance, operation) {
      return { state: "succeeded", description: `${operation.action} ${COMMIT_MODE_NOTE}` };
    },
    bindingStatus(_instance, _binding, operation) {
      return { state: "succeeded", description: `${operation.action} ${COMMIT_MODE_NOTE}` };
    },
    bindingResult() {
      return {};
    },
  };
}

export { createWatchCache } from "./kube-cache.js";
export type { WatchCache, WatchCacheEvent, WatchCacheEventType, WatchCacheOptions, WatchCacheState } from "./kube-cache.js";
