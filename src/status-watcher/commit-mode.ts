import type { StatusWatcher } from "./types.js";

const COMMIT_MODE_NOTE = "committed and pushed to the GitOps repository (status.mode commit: the cluster is not observed)";

/**
 * `commit` mode: an operation is `succeeded` as soon as its commit is on the remote, which is
 * always the case for an operation the broker has recorded, because the broker acknowledges
 * only after the push (ADR 0003). Bindings get no credentials: they are never in Git.
 */
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
    async awaitBinding() {
      return { state: "succeeded", result: {} };
    },
    async close() {},
  };
}
