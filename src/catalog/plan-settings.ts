import type { Plan } from "./types.js";

/**
 * Service Fabrik's `spec.autoUpdateInstances`: the broker re-renders the plan's instances when the
 * plan changes (the reconciler, its catch-up at start, and validate's drift check ask).
 */
export function autoUpdatesInstances(plan: Pick<Plan, "raw">): boolean {
  const spec = plan.raw.spec;
  return typeof spec === "object" && spec !== null && (spec as Record<string, unknown>).autoUpdateInstances === true;
}
