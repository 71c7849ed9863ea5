import type { Plan, Service } from "../catalog/index.js";
import { ForbiddenError } from "../errors/index.js";
import { limitPlanIds, liveInScope, scopeKey, type InstanceSummary, type Quota, type TenantScope } from "../repo/index.js";

/**
 * Quotas from the repository (`quota/*.yaml`), enforced inside the queued operation on the tree it
 * builds on: the counts come from the instance summary of that tree, so two provisions (or two
 * replicas) cannot both take the last slot (the loser runs again on the winner's tip, ADR 0008),
 * and a refusal is a 4xx that the writer confirms on a current view first (ADR 0012).
 *
 * Service Fabrik's words and code (its checkQuota middleware and BaseQuotaManager): 403 Forbidden,
 * "Not entitled to create service instance" for a limit of 0, "Quota is not sufficient for this
 * request" when the limit is reached; -1 is unlimited; a plan change within the plans one limit
 * counts together (its "same SKU") is not checked, nor a plan with `metadata.skip_quota_check`.
 */

/** The organization, space and subaccount an instance belongs to. */
export interface Tenancy {
  organizationGuid?: string | undefined;
  spaceGuid?: string | undefined;
  subaccountId?: string | undefined;
}

const SCOPE_FIELD: Record<TenantScope, keyof Tenancy> = {
  organization: "organizationGuid",
  space: "spaceGuid",
  subaccount: "subaccountId",
};

/** The tenancy of an instance (or a provision): its organization and space, and the context's subaccount_id (SAP Service Manager). */
export function tenancyOf(organizationGuid: string | undefined, spaceGuid: string | undefined, context: Record<string, unknown> | undefined): Tenancy {
  const subaccountId = context?.subaccount_id;
  return { organizationGuid, spaceGuid, ...(typeof subaccountId === "string" ? { subaccountId } : {}) };
}

function describeLimit(quota: Quota, index: number, service: Service, plans: ReadonlySet<string>): string {
  const names = service.plans.filter((p) => plans.has(p.id)).map((p) => p.name);
  const which = names.length === service.plans.length ? `service ${service.name}` : `service ${service.name} plan(s) ${names.join(", ")}`;
  return `${quota.scope} ${JSON.stringify(quota.id)}, ${which} (${quota.file} ${quota.at}limits[${index}])`;
}

/**
 * Throws Service Fabrik's 403 when a new live instance of `plan` (a provision, or a plan change
 * from `from`) would exceed a quota of its organization, space or subaccount.
 */
export function checkQuota(args: {
  quotas: readonly Quota[];
  summary: InstanceSummary;
  service: Service;
  plan: Plan;
  tenancy: Tenancy;
  /** A plan change: the instance's current plan (it is counted already). */
  from?: Plan;
}): void {
  const { quotas, summary, service, plan, tenancy, from } = args;
  // Service Fabrik's plan metadata `skip_quota_check: true` exempts the plan.
  if (plan.metadata?.skip_quota_check === true) return;
  for (const quota of quotas) {
    if (tenancy[SCOPE_FIELD[quota.scope]] !== quota.id) continue;
    for (const [index, limit] of quota.limits.entries()) {
      const plans = limitPlanIds(limit, service);
      if (!plans?.has(plan.id) || (from && plans.has(from.id)) || limit.instances === -1) continue;
      if (limit.instances === 0) {
        throw new ForbiddenError(`Not entitled to create service instance: ${describeLimit(quota, index, service, plans)} allows none`);
      }
      const live = liveInScope(summary, scopeKey(quota.scope, quota.id), plans);
      if (live >= limit.instances) {
        throw new ForbiddenError(
          `Quota is not sufficient for this request: ${describeLimit(quota, index, service, plans)} allows ${limit.instances} instance(s), ${live} live`,
        );
      }
    }
  }
}
