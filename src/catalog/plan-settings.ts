import type { Plan } from "./types.js";

/**
 * Service Fabrik's `spec.autoUpdateInstances`: the broker re-renders the plan's instances when the
 * plan changes (the reconciler, its catch-up at start, and validate's drift check ask).
 */
export function autoUpdatesInstances(plan: Pick<Plan, "raw">): boolean {
  const spec = plan.raw.spec;
  return typeof spec === "object" && spec !== null && (spec as Record<string, unknown>).autoUpdateInstances === true;
}

/** Service Fabrik's `metadata.state: deprecated`: no new instance of the plan (403 at provision). */
export function planDeprecated(plan: Pick<Plan, "metadata">): boolean {
  return plan.metadata?.state === "deprecated";
}

/**
 * Service Fabrik's `manager.settings.update_predecessors`: whether an instance of plan `from` may
 * move to plan `to` (its isUpdatePossible; see Plan.updatePredecessors for a plan without the list).
 */
export function updatePossible(from: Pick<Plan, "id">, to: Pick<Plan, "id" | "updatePredecessors">): boolean {
  return from.id === to.id || to.updatePredecessors === undefined || to.updatePredecessors.includes(from.id);
}
