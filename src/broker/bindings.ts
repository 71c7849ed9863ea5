import {
  AsyncRequiredError,
  BadRequestError,
  ConflictError,
  GoneError,
  NotFoundError,
  ServiceUnavailableError,
  UnprocessableEntityError,
} from "../errors/index.js";
import type { Draft, OperationOutcome, TreeReader } from "../gitwriter/index.js";
import {
  LABEL_BINDING,
  LABEL_INSTANCE,
  LABEL_MANAGED_BY,
  MANAGED_BY,
  bindingManifestDir,
  instanceNamespace,
  keyOf,
  latestOperation,
  newBindingRecord,
  readBinding,
  readInstance,
  readLiveBindings,
  writeBinding,
  type BindingRecord,
  type InstanceRecord,
} from "../repo/index.js";
import { bindingLifetime, withoutSensitiveParameters, type ApiVersion, type Plan, type Service } from "../catalog/index.js";
import type { BindingResult } from "../status-watcher/index.js";
import {
  appliedOverrides,
  commitSpec,
  operationEntry,
  planBindable,
  runOperation,
  type Ctx,
  type OperationIds,
  type OsbResponse,
} from "./context.js";
import { readConfirmed, settleLatest, settled } from "./current-view.js";
import type { OsbRequestInfo } from "./headers.js";
import { checkParameters, operationResponse, pickOperation, pollingMissing } from "./instances.js";
import {
  lookupPlan,
  recordedCluster,
  recordedPlan,
  removeBindingManifests,
  refuseIfBusy,
  sealSensitiveValues,
  sensitiveKeys,
  sensitiveValues,
  bindInto,
  writeInstanceManifests,
} from "../materialize/index.js";
import { acceptedPlanIds, checkPlatformIds, type PlatformIds } from "./platform-ids.js";
import { bindingMetadata, predecessorOf, successorRequest } from "./rotation.js";
import { sameJson, type BindBody } from "./request-body.js";

function liveInstance(record: InstanceRecord | null, instanceId: string): InstanceRecord {
  if (!record || record.status.deleted) throw new NotFoundError(`instance ${instanceId} does not exist`);
  return record;
}

function liveBinding(record: BindingRecord | null): record is BindingRecord {
  return record !== null && !record.status.deleted;
}

function placed(ctx: Ctx, instance: InstanceRecord) {
  const { service, plan } = recordedPlan(ctx.deps.view, instance);
  const cluster = recordedCluster(ctx.deps.view, instance);
  return { service, plan, namespace: instanceNamespace(instance, cluster), capabilities: cluster.capabilities };
}

/** A bind's 200 / 201 body and GET binding's: OSB metadata (expiry, ADR 0033), credentials, endpoints. */
function bindingBody(result: BindingResult, binding: BindingRecord, apiVersion: ApiVersion): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const metadata = bindingMetadata(binding, apiVersion);
  if (metadata) body.metadata = metadata;
  if (result.credentials) body.credentials = result.credentials;
  if (result.endpoints) body.endpoints = result.endpoints;
  return body;
}

function bindingResponse(ctx: Ctx, instance: InstanceRecord, binding: BindingRecord, status: number, apiVersion: ApiVersion): OsbResponse {
  return { status, body: bindingBody(ctx.deps.status.bindingResult(instance, binding), binding, apiVersion) };
}

// ---------------------------------------------------------------------------
// Bind
// ---------------------------------------------------------------------------

/** What the queued bind operation decided: a new binding (committed) or the existing one. */
interface BindDecision {
  instance: InstanceRecord;
  binding: BindingRecord;
  created: boolean;
}

export async function bind(
  ctx: Ctx,
  instanceId: string,
  bindingId: string,
  body: BindBody,
  accepts: boolean,
  osb: OsbRequestInfo,
): Promise<OsbResponse> {
  const { service, plan } = lookupPlan(ctx.deps.view.catalog(), body.serviceId, body.planId);
  if (!planBindable(service, plan)) throw new BadRequestError(`plan ${plan.name} of service ${service.name} is not bindable`);
  if (plan.asyncBinding && !accepts) {
    throw new AsyncRequiredError("This service plan requires client support for asynchronous binding operations.");
  }
  checkParameters(plan, "service_binding.create", body.parameters);

  await settleLatest(ctx, instanceId, bindingId);
  const result = await runOperation<BindDecision>(ctx, async (draft: Draft, ids) => {
    const instance = liveInstance(await readInstance(draft, instanceId), instanceId);
    if (instance.spec.serviceId !== service.id || instance.spec.planId !== plan.id) {
      throw new BadRequestError(
        `service_id/plan_id do not match instance ${instanceId} (service ${instance.spec.serviceId}, plan ${instance.spec.planId})`,
      );
    }
    const existing = await readBinding(draft, instanceId, bindingId);
    if (liveBinding(existing)) {
      checkRepeatedBind(existing, plan, body);
      return { commit: null, result: { instance, binding: existing, created: false } };
    }

    refuseIfBusy(ctx.deps.status, instance);
    const predecessorId = body.predecessorBindingId;
    const predecessor = predecessorId === undefined ? undefined : await predecessorOf(ctx, draft, { instance, plan, bindingId, predecessorId, at: ids.at });
    const request = predecessor ? successorRequest(plan, body, predecessor) : body;
    return newBinding(ctx, draft, { instance, service, plan, bindingId, request, osb, ids });
  }, { instance: instanceId }, { signal: osb.abandoned, what: `bind of binding ${bindingId} of instance ${instanceId}` });
  return answerBind(ctx, result, service, accepts, osb.apiVersion);
}

/**
 * The commit of a new binding: its sealed sensitive values, its record (with its OSB expiry
 * from the plan), the instance's objects rendered again with it and its own objects.
 */
async function newBinding(
  ctx: Ctx,
  draft: Draft,
  args: { instance: InstanceRecord; service: Service; plan: Plan; bindingId: string; request: BindBody; osb: OsbRequestInfo; ids: OperationIds },
): Promise<OperationOutcome<BindDecision>> {
  const { instance, service, plan, bindingId, request, osb } = args;
  const { operationId, at } = args.ids;
  const instanceId = instance.spec.instanceId;
  const op = operationEntry("bind", operationId, at, osb);
  const place = placed(ctx, instance);
  // Sensitive values never enter the record (ADR 0007); they are sealed in the binding's directory.
  const parameters = request.parameters && withoutSensitiveParameters(plan, ["service_binding.create"], request.parameters);
  const sensitive = sensitiveValues(ctx.deps.view.clusters(), plan, "service_binding.create", request.parameters, instance.spec.clusterId);
  const refs = await sealSensitiveValues(
    draft,
    {
      dir: bindingManifestDir(instance.spec.clusterId, instanceId, bindingId),
      namespace: place.namespace,
      labels: { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_INSTANCE]: keyOf(instanceId), [LABEL_BINDING]: keyOf(bindingId) },
      instanceId,
      operationId,
      at,
    },
    sensitive,
  );
  const binding = newBindingRecord(
    {
      bindingId,
      instanceId,
      serviceId: service.id,
      planId: plan.id,
      namespace: place.namespace,
      predecessorBindingId: request.predecessorBindingId,
      context: request.context,
      parameters,
      bindResource: request.bindResource,
      appGuid: request.appGuid,
      originatingIdentity: osb.originatingIdentity,
      sensitiveParameters: refs,
      ...bindingLifetime(plan, at),
    },
    op,
  );
  const others = (await readLiveBindings(draft, instanceId)).filter((b) => b.spec.bindingId !== bindingId);
  // The instance's objects may depend on its bindings (one database user per binding: rendered
  // from `bindings`, or added by the bind template to the instance's object, ADR 0017).
  const bound = await bindInto(draft, { ...place, service, plan, instance, bindings: others }, binding);
  writeBinding(draft, bound.binding);
  return {
    commit: commitSpec(ctx, {
      action: "bind",
      service,
      plan,
      instanceId,
      bindingId,
      predecessorBindingId: request.predecessorBindingId,
      operationId,
      osb,
      overrides: appliedOverrides(ctx, instanceId, ...bound.rendered),
    }),
    result: { instance, binding: bound.binding, created: true },
  };
}

/**
 * Sensitive values cannot be compared (the broker cannot decrypt them): the same keys count as
 * identical. A rotation's fields it leaves out came from its predecessor: only those it sends are
 * compared.
 */
function checkRepeatedBind(existing: BindingRecord, plan: Plan, body: BindBody): void {
  const s = existing.spec;
  const rotation = body.predecessorBindingId !== undefined;
  const compared = (field: unknown) => !rotation || field !== undefined;
  const plain = body.parameters && withoutSensitiveParameters(plan, ["service_binding.create"], body.parameters);
  const identical =
    s.serviceId === body.serviceId &&
    s.planId === body.planId &&
    (s.predecessorBindingId ?? null) === (body.predecessorBindingId ?? null) &&
    (!compared(body.parameters) ||
      (sameJson(s.parameters ?? {}, plain ?? {}) &&
        sameJson(Object.keys(s.sensitiveParameters ?? {}).sort(), sensitiveKeys(plan, "service_binding.create", body.parameters)))) &&
    (!compared(body.bindResource) || sameJson(s.bindResource ?? {}, body.bindResource ?? {})) &&
    (!compared(body.appGuid) || (s.appGuid ?? null) === (body.appGuid ?? null));
  if (!identical) throw new ConflictError(`binding ${s.bindingId} already exists with different attributes`);
}

/**
 * The answer to a bind, once its commit is on the remote. Asynchronous plans answer 202 (or the
 * finished binding). Synchronous ones wait, within the status watcher's bound, for the
 * credentials to be readable from the live cluster (at once in commit mode). If they are not:
 * 202 when the platform accepts an asynchronous binding and can fetch it (bindings_retrievable),
 * else 503, so that the platform unbinds what was committed (OSB orphan mitigation) rather than
 * keeping a binding without credentials. ADR 0006.
 */
async function answerBind(ctx: Ctx, decision: BindDecision, service: Service, accepts: boolean, apiVersion: ApiVersion): Promise<OsbResponse> {
  const { instance, binding, created } = decision;
  const { plan } = lookupPlan(ctx.deps.view.catalog(), binding.spec.serviceId, binding.spec.planId);
  const op = latestOperation(binding.status.operations);
  if (!op) throw new UnprocessableEntityError(`binding ${binding.spec.bindingId} has no operation`);
  const accepted = { status: 202, body: { operation: op.id } };
  if (plan.asyncBinding) {
    if (created || ctx.deps.status.bindingStatus(instance, binding, op).state === "in progress") return accepted;
    return bindingResponse(ctx, instance, binding, 200, apiVersion);
  }
  const outcome = await ctx.deps.status.awaitBinding(instance, binding, op);
  if (outcome.state === "succeeded") return { status: created ? 201 : 200, body: bindingBody(outcome.result, binding, apiVersion) };
  if (outcome.state === "in progress" && accepts && service.bindingsRetrievable) return accepted;
  const what = outcome.state === "failed" ? "failed on the cluster" : "has no readable credentials yet";
  throw new ServiceUnavailableError(
    `binding ${binding.spec.bindingId} is committed but ${what} (${outcome.description}); ` +
      "unbind it and bind again, or bind with accepts_incomplete=true to wait for it",
  );
}

// ---------------------------------------------------------------------------
// Unbind
// ---------------------------------------------------------------------------

export async function unbind(
  ctx: Ctx,
  instanceId: string,
  bindingId: string,
  ids: { serviceId: string; planId: string },
  accepts: boolean,
  osb: OsbRequestInfo,
): Promise<OsbResponse> {
  await settleLatest(ctx, instanceId, bindingId);
  return runOperation(ctx, async (draft: Draft, { operationId, at }) => {
    const instanceRecord = await readInstance(draft, instanceId);
    const existing = await readBinding(draft, instanceId, bindingId);
    const resent = instanceRecord && existing && resentUnbind(ctx, instanceRecord, existing, ids, accepts);
    if (resent) return { commit: null, result: resent };
    if (!instanceRecord || instanceRecord.status.deleted || !liveBinding(existing)) {
      throw new GoneError(`binding ${bindingId} of instance ${instanceId} does not exist`);
    }
    // After a plan change the platform sends the instance's current plan (ADR 0033).
    checkPlatformIds(ctx, ids, instanceRecord, existing);
    const place = placed(ctx, instanceRecord);
    const { service, plan } = place;
    if (plan.asyncBinding && !accepts) {
      throw new AsyncRequiredError("This service plan requires client support for asynchronous binding operations.");
    }
    refuseIfBusy(ctx.deps.status, instanceRecord, "provision");

    const op = operationEntry("unbind", operationId, at, osb);

    const bindings = (await readLiveBindings(draft, instanceId)).filter((b) => b.spec.bindingId !== bindingId);
    const rendered = await writeInstanceManifests(draft, { ...place, instance: instanceRecord, bindings }, "update");
    removeBindingManifests(draft, instanceRecord, bindingId);
    writeBinding(draft, { ...existing, status: { deleted: true, operations: [...existing.status.operations, op] } });
    return {
      commit: commitSpec(ctx, {
        action: "unbind",
        service,
        plan,
        instanceId,
        bindingId,
        operationId,
        osb,
        overrides: appliedOverrides(ctx, instanceId, rendered),
      }),
      result: plan.asyncBinding ? { status: 202, body: { operation: operationId } } : { status: 200, body: {} },
    };
  }, { instance: instanceId });
}

/**
 * OSB: a re-sent DELETE whose unbinding has not completed MUST answer 202 with its operation (a
 * plan with asynchronous bindings; a synchronous unbind answered 200 and is complete for the
 * platform). Without accepts_incomplete such a plan still answers 422 AsyncRequired.
 */
function resentUnbind(
  ctx: Ctx,
  instance: InstanceRecord,
  binding: BindingRecord,
  ids: { serviceId: string; planId: string },
  accepts: boolean,
): OsbResponse | undefined {
  if (!binding.status.deleted) return undefined;
  const latest = latestOperation(binding.status.operations);
  if (latest?.action !== "unbind" || binding.spec.serviceId !== ids.serviceId) return undefined;
  if (!acceptedPlanIds(ctx.deps.status, instance, binding).includes(ids.planId)) return undefined;
  // Whether bindings are asynchronous is the instance's plan's to say, as unbind asks it.
  const plan = ctx.deps.view.catalog().planById(instance.spec.planId);
  if (!plan?.asyncBinding || ctx.deps.status.bindingStatus(instance, binding, latest).state !== "in progress") return undefined;
  if (!accepts) throw new AsyncRequiredError("This service plan requires client support for asynchronous binding operations.");
  return { status: 202, body: { operation: latest.id } };
}

// ---------------------------------------------------------------------------
// Reads
// ---------------------------------------------------------------------------

async function readPair(tree: TreeReader, instanceId: string, bindingId: string) {
  return { instance: await readInstance(tree, instanceId), binding: await readBinding(tree, instanceId, bindingId) };
}

export async function bindingLastOperation(
  ctx: Ctx,
  instanceId: string,
  bindingId: string,
  operation: string | undefined,
  apiVersion: ApiVersion,
): Promise<OsbResponse> {
  const { instance, binding } = await readConfirmed(ctx, (tree) => readPair(tree, instanceId, bindingId), (p) => !p.instance || !p.binding);
  const op = binding ? pickOperation(binding.status.operations, operation) : undefined;
  if (!instance || !binding || !op) {
    ctx.deps.metrics.lastOperations.inc({ resource: "binding", state: "missing" });
    throw pollingMissing(apiVersion, `binding ${bindingId} of instance ${instanceId} does not exist`);
  }
  await settled(ctx, instance, binding, op);
  const status = ctx.deps.status.bindingStatus(instance, binding, op);
  ctx.deps.metrics.lastOperations.inc({ resource: "binding", state: status.state });
  return operationResponse(status);
}

export async function fetchBinding(ctx: Ctx, instanceId: string, bindingId: string, apiVersion: ApiVersion, hints: PlatformIds = {}): Promise<OsbResponse> {
  const { instance, binding } = await readConfirmed(
    ctx,
    (tree) => readPair(tree, instanceId, bindingId),
    (p) => !p.instance || p.instance.status.deleted === true || !liveBinding(p.binding),
  );
  if (!instance || instance.status.deleted || !liveBinding(binding)) {
    throw new NotFoundError(`binding ${bindingId} of instance ${instanceId} does not exist`);
  }
  checkPlatformIds(ctx, hints, instance, binding);
  // The plan it was bound with (its parameters' schema), or the instance's when the catalog dropped that one.
  const catalog = ctx.deps.view.catalog();
  const { service, plan } = catalog.planById(binding.spec.planId)
    ? lookupPlan(catalog, binding.spec.serviceId, binding.spec.planId)
    : recordedPlan(ctx.deps.view, instance);
  if (!service.bindingsRetrievable) {
    throw new BadRequestError(`service ${service.name} does not support fetching bindings (bindings_retrievable is false)`);
  }
  const op = latestOperation(binding.status.operations);
  await settled(ctx, instance, binding, op);
  if (op && ctx.deps.status.bindingStatus(instance, binding, op).state === "in progress") {
    throw new NotFoundError(`binding ${bindingId} is still being created`);
  }
  const response = bindingResponse(ctx, instance, binding, 200, apiVersion);
  response.body.parameters = withoutSensitiveParameters(plan, ["service_binding.create"], binding.spec.parameters ?? {});
  return response;
}
