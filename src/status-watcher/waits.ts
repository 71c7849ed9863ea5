import type { OperationEntry } from "../repo/index.js";
import type { LiveCluster } from "./live-cluster.js";
import type { BindingOutcome, BindingResult, OperationStatus } from "./types.js";

/**
 * The waits of the status watcher (watcher.ts): a synchronous bind for its credentials, a
 * synchronous operation for its end, a provisional answer for the view to be complete. One
 * polling loop, driven by the changes of the operation's cluster.
 */

/** A wait also looks again this often (a cluster can fail silently). */
export const RECHECK_MS = 500;

/**
 * A synchronous bind's wait, one step: done once the bind succeeded (with its credentials, from
 * `result`) or failed; else in progress, saying why.
 */
export function bindStep(status: OperationStatus, operation: OperationEntry, result: () => BindingResult): { done: BindingOutcome } | { pending: BindingOutcome } {
  if (status.state === "succeeded") return { done: { state: "succeeded", result: result() } };
  const description = status.description ?? `${operation.action} ${status.state}`;
  return status.state === "failed" ? { done: { state: "failed", description } } : { pending: { state: "in progress", description } };
}

/** Resolves on the cluster's next change, or after `ms`. */
export function nextChange(live: LiveCluster, ms: number): Promise<void> {
  return new Promise((done) => {
    const timer = setTimeout(finish, ms);
    const off = live.onChange(finish);
    function finish(): void {
      clearTimeout(timer);
      off();
      done();
    }
  });
}

/**
 * The one polling loop of the waits (a synchronous bind, a synchronous operation, settling a
 * provisional answer): `step` on every change of the cluster (and every RECHECK_MS), until
 * it is done, `timeoutMs` passed or the cluster is no longer watched live (`liveOf`: gone, or the
 * watcher closed); then what it last said while pending.
 */
export async function poll<R>(liveOf: () => LiveCluster | undefined, timeoutMs: number, step: () => { done: R } | { pending: R }): Promise<R> {
  const started = performance.now();
  for (;;) {
    const outcome = step();
    if ("done" in outcome) return outcome.done;
    const left = timeoutMs - (performance.now() - started);
    const live = liveOf();
    if (left <= 0 || !live) return outcome.pending;
    await nextChange(live, Math.min(left, RECHECK_MS));
  }
}

