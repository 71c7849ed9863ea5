import { bindingRotatable, type ApiVersion, type Plan } from "../catalog/index.js";
import { BadRequestError, ConcurrencyError } from "../errors/index.js";
import type { TreeReader } from "../gitwriter/index.js";
import { latestOperation, readBinding, type BindingRecord, type InstanceRecord } from "../repo/index.js";
import type { Ctx } from "./context.js";
import { checkParameters } from "./instances.js";
import type { BindBody } from "./request-body.js";

/**
 * OSB 2.17 binding rotation (ADR 0033): a bind naming `predecessor_binding_id` creates a successor
 * of a binding of the same instance. The successor is a binding of its own (its own credentials:
 * the sample plan's database user is named after the binding), made from the predecessor's
 * request where the platform does not repeat it (OSB: platforms need not keep a binding's
 * parameters to rotate it); the predecessor stays valid until it is unbound.
 */

/**
 * The binding `predecessorId` names, checked as the spec asks: the plan allows rotation, it is a
 * binding of this instance (not the new one), it exists, is not unbound or being unbound, its
 * bind finished and did not fail, and it has not expired. 400 (422 ConcurrencyError while its
 * bind is still in progress) otherwise, each naming the reason.
 */
export async function predecessorOf(
  ctx: Ctx,
  tree: TreeReader,
  args: { instance: InstanceRecord; plan: Plan; bindingId: string; predecessorId: string; at: string },
): Promise<BindingRecord> {
  const { instance, plan, bindingId, predecessorId, at } = args;
  const instanceId = instance.spec.instanceId;
  const named = `predecessor_binding_id ${predecessorId}`;
  if (!bindingRotatable(plan)) {
    throw new BadRequestError(`${named}: bindings of plan ${plan.name} cannot be rotated (its binding_rotatable is not true)`);
  }
  if (predecessorId === bindingId) throw new BadRequestError(`${named} is the binding being created: a successor has a binding id of its own`);
  const predecessor = await readBinding(tree, instanceId, predecessorId);
  if (predecessor === null) throw new BadRequestError(`${named}: instance ${instanceId} has no binding ${predecessorId}`);
  if (predecessor.status.deleted) throw new BadRequestError(`${named}: binding ${predecessorId} of instance ${instanceId} is unbound or being unbound`);
  const op = latestOperation(predecessor.status.operations);
  const state = op && ctx.deps.status.bindingStatus(instance, predecessor, op).state;
  if (state === "in progress") throw new ConcurrencyError(`${named}: binding ${predecessorId} of instance ${instanceId} is still being created`);
  if (state === "failed") throw new BadRequestError(`${named}: the bind of binding ${predecessorId} of instance ${instanceId} failed`);
  const expiresAt = predecessor.spec.expiresAt;
  if (expiresAt !== undefined && Date.parse(expiresAt) <= Date.parse(at)) {
    throw new BadRequestError(`${named}: binding ${predecessorId} of instance ${instanceId} expired at ${expiresAt}`);
  }
  return predecessor;
}

/**
 * The request a successor is made from: what the rotation sends, the predecessor's parameters,
 * bind_resource, app_guid and context where it sends none. Sensitive parameters cannot be carried
 * over (the broker cannot decrypt what it sealed, ADR 0007): a predecessor that has some needs
 * them sent again (400).
 */
export function successorRequest(plan: Plan, body: BindBody, predecessor: BindingRecord): BindBody {
  const p = predecessor.spec;
  if (body.parameters === undefined) {
    const sealed = Object.keys(p.sensitiveParameters ?? {});
    if (sealed.length > 0) {
      throw new BadRequestError(
        `predecessor_binding_id ${p.bindingId}: its sensitive parameters (${sealed.sort().join(", ")}) are kept encrypted and cannot be carried over: ` +
          "send the parameters with the rotation",
      );
    }
    // Validated against the plan the predecessor was bound with; the successor is bound with the instance's.
    if (p.parameters !== undefined) checkParameters(plan, "service_binding.create", p.parameters);
  }
  return {
    ...body,
    parameters: body.parameters ?? p.parameters,
    bindResource: body.bindResource ?? p.bindResource,
    appGuid: body.appGuid ?? p.appGuid,
    context: body.context ?? p.context,
  };
}

/**
 * OSB BindingMetadata of a bind answer and GET binding: `expires_at` from 2.16, `renew_before`
 * from 2.17, as the binding's record holds them; undefined when there is nothing to say.
 */
export function bindingMetadata(binding: BindingRecord, apiVersion: ApiVersion): Record<string, string> | undefined {
  const since = (minor: number) => apiVersion.major > 2 || apiVersion.minor >= minor;
  const metadata: Record<string, string> = {};
  if (binding.spec.expiresAt !== undefined && since(16)) metadata.expires_at = binding.spec.expiresAt;
  if (binding.spec.renewBefore !== undefined && since(17)) metadata.renew_before = binding.spec.renewBefore;
  return Object.keys(metadata).length > 0 ? metadata : undefined;
}
