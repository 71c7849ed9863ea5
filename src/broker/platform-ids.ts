import { BadRequestError } from "../errors/index.js";
import type { ApiVersion } from "../catalog/index.js";
import type { BindingRecord, InstanceRecord } from "../repo/index.js";
import type { StatusWatcher } from "../status-watcher/index.js";
import type { Ctx } from "./context.js";

/**
 * The `service_id` / `plan_id` a platform sends on deprovision, unbind and (as hints, OSB 2.16)
 * GET of an instance or binding: what it believes the instance's plan is. After a plan change
 * that is the new plan (Cloud Foundry and Service Manager send the instance's current plan, also
 * to unbind a binding made before the change); while the change is in progress or after it
 * failed, the platform still holds the plan before it (an update that did not succeed leaves the
 * instance on its plan, for the platform). A plan that is none of those is a malformed request.
 */

/** The ids a request names; undefined: not sent (GET's hints are optional). */
export interface PlatformIds {
  serviceId?: string | undefined;
  planId?: string | undefined;
}

/**
 * The plan an instance had before its latest operation, when that operation is a plan change that
 * has not succeeded (in progress or failed); undefined otherwise.
 */
function planBeforeUnfinishedChange(status: Pick<StatusWatcher, "instanceStatus">, record: InstanceRecord): string | undefined {
  const ops = record.status.operations;
  const latest = ops.at(-1);
  if (latest?.action !== "update" || latest.planId === undefined) return undefined;
  const before = ops
    .slice(0, -1)
    .reverse()
    .find((o) => o.planId !== undefined)?.planId;
  if (before === undefined || before === latest.planId) return undefined;
  return status.instanceStatus(record, latest).state === "succeeded" ? undefined : before;
}

/** The plan ids a platform may name for `instance` (and `binding`), the instance's current one first. */
export function acceptedPlanIds(status: Pick<StatusWatcher, "instanceStatus">, instance: InstanceRecord, binding?: BindingRecord): string[] {
  const ids = [instance.spec.planId, planBeforeUnfinishedChange(status, instance), binding?.spec.planId];
  return [...new Set(ids.filter((id): id is string => id !== undefined))];
}

function planLabel(ctx: Ctx, planId: string): string {
  const plan = ctx.deps.view.catalog().planById(planId);
  return plan ? `${plan.name} (${planId})` : planId;
}

/**
 * 400 unless `ids` name the instance's service and one of the plans the platform may hold for it
 * (acceptedPlanIds). Ids that are not given are not checked.
 */
export function checkPlatformIds(ctx: Ctx, ids: PlatformIds, instance: InstanceRecord, binding?: BindingRecord): void {
  const what = binding ? `binding ${binding.spec.bindingId} of instance ${instance.spec.instanceId}` : `instance ${instance.spec.instanceId}`;
  if (ids.serviceId !== undefined && ids.serviceId !== instance.spec.serviceId) {
    throw new BadRequestError(`service_id ${ids.serviceId} does not match the service of ${what} (${instance.spec.serviceId})`);
  }
  if (ids.planId === undefined) return;
  const accepted = acceptedPlanIds(ctx.deps.status, instance, binding);
  if (accepted.includes(ids.planId)) return;
  const why = (id: string): string =>
    id === instance.spec.planId ? "its plan" : id === binding?.spec.planId ? "the plan it was bound with" : "its plan before an unfinished plan change";
  const expected = accepted.map((id) => `${planLabel(ctx, id)}, ${why(id)}`).join(", or ");
  throw new BadRequestError(`plan_id ${ids.planId} does not match ${what}: expected ${expected}`);
}

/**
 * The `service_id` and `plan_id` hints of GET instance and GET binding (OSB 2.16): each, if
 * present, a non-empty string. Before 2.16 they do not exist: an older platform's are ignored.
 */
export function queryHints(query: Record<string, unknown>, where: string, apiVersion: ApiVersion): PlatformIds {
  if (apiVersion.major === 2 && apiVersion.minor < 16) return {};
  const get = (name: string): string | undefined => {
    const v = query[name];
    if (v === undefined) return undefined;
    if (typeof v !== "string" || v.length === 0) throw new BadRequestError(`${where}: query parameter ${name} must be a non-empty string`);
    return v;
  };
  return { serviceId: get("service_id"), planId: get("plan_id") };
}
