import type { Plan } from "../catalog/index.js";
import type { OperationEntry } from "../repo/index.js";
import type { OperationStatus } from "./types.js";

/**
 * The plan's maximum_polling_duration (OSB 2.15) in live mode: when it ends for an operation, and
 * what an operation still in progress then answers.
 */

/**
 * When the plan's maximum_polling_duration ends for `operation` (epoch ms; undefined without one):
 * counted from its acknowledgement (the 202 the platform counts from), known when this process gave
 * it; otherwise from the receipt plus the longest a request waits for its push, so never before the
 * platform's deadline.
 */
export function deadlineOf(plan: Plan, operation: OperationEntry, acknowledgedAt: number | undefined, boundMs: number): number | undefined {
  const seconds = plan.maximumPollingDuration;
  const at = Date.parse(operation.at);
  if (seconds === undefined || !Number.isFinite(at)) return undefined;
  return Math.max(at, acknowledgedAt ?? at + boundMs) + seconds * 1000;
}

/**
 * `status` at `now` (epoch ms): failed when it is still in progress, not provisionally, at or past
 * the deadline; else as it is.
 */
export function pastDeadline(status: OperationStatus, plan: Plan, operation: OperationEntry, deadline: number | undefined, now: number): OperationStatus {
  if (status.state !== "in progress" || status.provisional || deadline === undefined || now < deadline) return status;
  return {
    state: "failed",
    description: `${operation.action} did not finish within the plan's maximum_polling_duration (${plan.maximumPollingDuration} s): ${status.description}`,
  };
}
