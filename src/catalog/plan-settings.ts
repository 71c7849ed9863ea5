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

/** OSB `binding_rotatable` (2.17): whether a bind may name a `predecessor_binding_id` of this plan's instance. */
export function bindingRotatable(plan: Pick<Plan, "bindingRotatable">): boolean {
  return plan.bindingRotatable === true;
}

/**
 * A new binding's OSB `expires_at` and `renew_before` (RFC 3339, UTC): its bind time plus the
 * plan's `manager.settings.binding_expires_after_seconds` / `binding_renew_after_seconds`, when
 * the plan sets them.
 */
export function bindingLifetime(plan: Pick<Plan, "bindingExpiresAfterSeconds" | "bindingRenewAfterSeconds">, boundAt: string): { expiresAt?: string; renewBefore?: string } {
  const after = (seconds: number | undefined) => (seconds === undefined ? undefined : new Date(Date.parse(boundAt) + seconds * 1000).toISOString());
  const expiresAt = after(plan.bindingExpiresAfterSeconds);
  const renewBefore = after(plan.bindingRenewAfterSeconds);
  return { ...(expiresAt ? { expiresAt } : {}), ...(renewBefore ? { renewBefore } : {}) };
}
