import {
  planDeprecated,
  updatePossible,
  validateParameters,
  withoutSensitiveParameters,
  type ApiVersion,
  type ClusterEntry,
  type Plan,
  type Service,
} from "../catalog/index.js";
import {
  AsyncRequiredError,
  BadRequestError,
  ConcurrencyError,
  ConflictError,
  ForbiddenError,
  GoneError,
  MaintenanceInfoConflictError,
  NotFoundError,
  ServiceUnavailableError,
  SchedulingError,
  UnprocessableEntityError,
  formatProblem,
} from "../errors/index.js";
import type { Draft } from "../gitwriter/index.js";
import {
  LABEL_INSTANCE,
  LABEL_MANAGED_BY,
  MANAGED_BY,
  instanceManifestDir,
  instanceNamespace,
  keyOf,
  latestOperation,
  newInstanceRecord,
  readInstance,
  readLiveBindings,
  summarizeInstances,
  writeBinding,
  writeInstance,
  type InstanceRecord,
  type InstanceSummary,
  type MaintenanceInfoRecord,
  type OperationEntry,
} from "../repo/index.js";
import type { OperationStatus } from "../status-watcher/index.js";
import { appliedOverrides, commitSpec, operationEntry, planUpdateable, runOperation, type Ctx, type OsbResponse } from "./context.js";
import { readConfirmed, settleLatest, settled } from "./current-view.js";
import type { OsbRequestInfo } from "./headers.js";
import { placeInstance } from "./placement.js";
import { acceptedPlanIds, checkPlatformIds, type PlatformIds } from "./platform-ids.js";
import { checkQuota, tenancyOf } from "./quota.js";
import {
  dashboardUrl,
  keptRefs,
  lookupPlan,
  recordedCluster,
  recordedPlan,
  refuseIfBusy,
  removeInstanceManifests,
  renderInstanceMetadata,
  runningOperation,
  sealSensitiveValues,
  sensitiveKeys,
  sensitiveValues,
  withInstanceMetadata,
  writeInstanceManifests,
} from "../materialize/index.js";
import { sameJson, type ProvisionBody, type UpdateBody } from "./request-body.js";

/** Seconds a platform should wait before polling an operation that is still in progress. */
export const POLL_RETRY_AFTER = 5;

export function checkParameters(plan: Plan, which: Parameters<typeof validateParameters>[1], parameters: unknown): void {
  const problems = validateParameters(plan, which, parameters ?? {});
  if (problems.length > 0) {
    throw new BadRequestError(
      `parameters do not match the ${which} schema of plan ${plan.name}: ${problems.map((p) => formatProblem(p).replace(/^[^:]*: /, "")).join("; ")}`,
    );
  }
}

function checkMaintenanceInfo(plan: Plan, requested: MaintenanceInfoRecord | undefined): void {
  if (!requested) return;
  if (!plan.maintenanceInfo) {
    throw new MaintenanceInfoConflictError(
      `maintenance_info.version ${requested.version} was given, but plan ${plan.name} declares no maintenance_info`,
    );
  }
  if (plan.maintenanceInfo.version !== requested.version) {
    throw new MaintenanceInfoConflictError(
      `maintenance_info.version ${requested.version} does not match version ${plan.maintenanceInfo.version} of plan ${plan.name} in the catalog; fetch the catalog again`,
    );
  }
}

function statusOf(ctx: Ctx, record: InstanceRecord, op: OperationEntry): OperationStatus {
  return ctx.deps.status.instanceStatus(record, op);
}

function live(record: InstanceRecord | null): record is InstanceRecord {
  return record !== null && !record.status.deleted;
}

// ---------------------------------------------------------------------------
// Provision
// ---------------------------------------------------------------------------

export async function provision(
  ctx: Ctx,
  instanceId: string,
  body: ProvisionBody,
  accepts: boolean,
  osb: OsbRequestInfo,
): Promise<OsbResponse> {
  const { service, plan } = lookupPlan(ctx.deps.view.catalog(), body.serviceId, body.planId);
  // Service Fabrik's words (its isPlanDeprecated), checked first as it did; existing instances keep the plan.
  if (planDeprecated(plan)) throw new ForbiddenError("Service instance with the requested plan cannot be created as it is deprecated.");
  if (plan.async && !accepts) throw new AsyncRequiredError();
  checkMaintenanceInfo(plan, body.maintenanceInfo);
  checkParameters(plan, "service_instance.create", body.parameters);

  await settleLatest(ctx, instanceId);
  let held: Held | undefined;
  const result = await runOperation(ctx, async (draft: Draft, { operationId, at }) => {
    held = undefined;
    const existing = await readInstance(draft, instanceId);
    if (live(existing)) return { commit: null, result: repeatedProvision(ctx, existing, plan, body, osb.apiVersion) };

    // Quotas count the instances of the tree this commit builds on, as placement does (ADR 0008).
    const summary = await summarizeInstances(draft, ctx.summaries);
    const tenancy = tenancyOf(body.organizationGuid, body.spaceGuid, body.context);
    checkQuota({ quotas: (await ctx.quotas(draft)).quotas, summary, service, plan, tenancy });

    const op = operationEntry("provision", operationId, at, osb, { planId: plan.id });
    const record = provisionRecord(instanceId, service, plan, body, osb, op);
    const cluster = await placeInStore(ctx, draft, { service, plan, instance: record, summary });
    record.spec.clusterId = cluster.id;
    record.metadata.namespace = cluster.namespace;
    // Rendered once the cluster is known, as Service Fabrik waited for clusterId; a bad URL is a 422.
    const dashboard = dashboardUrl(plan, record);
    const sensitive = sensitiveValues(ctx.deps.view.clusters(), plan, "service_instance.create", body.parameters, cluster.id);
    const refs = await sealSensitiveValues(draft, sealTarget(record, operationId, at), sensitive);
    if (refs) record.spec.sensitiveParameters = refs;
    // A re-provision of a deprovisioned id starts a new record; its old bindings stay deleted.
    const placed = { service, plan, instance: record, bindings: [], namespace: cluster.namespace, capabilities: cluster.capabilities };
    // Before the manifests: their templates see the record as it is written.
    Object.assign(record.status, await renderInstanceMetadata(placed));
    const overrides = appliedOverrides(ctx, instanceId, await writeInstanceManifests(draft, placed, "provision"));
    writeInstance(draft, record);
    held = { record, op };
    const answer = { ...withDashboard(dashboard), ...instanceMetadata(record, osb.apiVersion) };
    return {
      commit: commitSpec(ctx, { action: "provision", service, plan, instanceId, operationId, osb, overrides }),
      result: plan.async ? { status: 202, body: { ...answer, operation: operationId } } : { status: 201, body: answer },
    };
  }, { instance: instanceId, provision: true }, { signal: osb.abandoned, what: `provision of instance ${instanceId}` });
  return plan.async || !held ? result : answerSynchronous(ctx, held, result, accepts);
}

/** The record of a new instance, without a cluster yet. Sensitive values never enter it (ADR 0007): they are sealed once the cluster is known. */
function provisionRecord(instanceId: string, service: Service, plan: Plan, body: ProvisionBody, osb: OsbRequestInfo, op: OperationEntry<"provision">): InstanceRecord {
  return newInstanceRecord(
    {
      instanceId,
      serviceId: service.id,
      planId: plan.id,
      clusterId: "",
      namespace: "",
      region: osb.region,
      organizationGuid: body.organizationGuid,
      spaceGuid: body.spaceGuid,
      context: body.context,
      parameters: body.parameters && withoutSensitiveParameters(plan, ["service_instance.create"], body.parameters),
      maintenanceInfo: body.maintenanceInfo,
      originatingIdentity: osb.originatingIdentity,
    },
    op,
  );
}

/**
 * Placement inside the operation (ADR 0008), among the clusters of the repository the operation
 * writes (ctx.routed.placeable: with stores, the store StoreSet.route chose for the id before it
 * ran, whose capacity the operation sees exactly; ADR 0036). A new instance never goes to another
 * store's cluster: when none of its own fits, the scheduler's 422 says which store and why.
 */
async function placeInStore(
  ctx: Ctx,
  draft: Draft,
  args: { service: Service; plan: Plan; instance: InstanceRecord; summary: InstanceSummary },
): Promise<ClusterEntry> {
  const scope = await ctx.routed.placeable(draft, ctx.deps.view.clusters());
  const place = () =>
    placeInstance({ tree: draft, cache: ctx.summaries, scheduler: ctx.deps.scheduler, catalog: ctx.deps.view.catalog(), clusters: scope.clusters, ...args });
  if (scope.narrowed === undefined) return place();
  if (scope.clusters.length === 0) throw new SchedulingError(`no cluster can take instance ${args.instance.spec.instanceId}: ${scope.narrowed}`);
  try {
    return await place();
  } catch (error) {
    if (!(error instanceof SchedulingError)) throw error;
    throw new SchedulingError(`${error.message}; ${scope.narrowed}`, { cause: error });
  }
}

/** What a synchronous plan's answer waits for: the record and operation just committed. */
interface Held {
  record: InstanceRecord;
  op: OperationEntry;
}

/**
 * The answer of a synchronous plan, once its commit is on the remote: in live mode it waits,
 * within the watcher's bound, for the status template to say succeeded, as Service Fabrik held
 * synchronous requests (a 201 / 200 means done, ADR 0012). If it is not: 202 when the platform
 * accepts an asynchronous answer, else 503 so that the platform cleans up (OSB orphan mitigation)
 * rather than believe something done that is not.
 */
async function answerSynchronous(ctx: Ctx, held: Held, done: OsbResponse, accepts: boolean): Promise<OsbResponse> {
  const { status } = ctx.deps;
  if (!status.awaitInstance || !status.observing?.()) return done;
  const outcome = await status.awaitInstance(held.record, held.op);
  if (outcome.state === "succeeded") return done;
  if (outcome.state === "in progress" && accepts) return { status: 202, body: { operation: held.op.id } };
  const { action } = held.op;
  const what = outcome.state === "failed" ? "failed on the cluster" : "is not done on the cluster yet";
  throw new ServiceUnavailableError(
    `${action} of instance ${held.record.spec.instanceId} is committed but ${what} (${outcome.description ?? outcome.state}); ` +
      `poll last_operation, or send it with accepts_incomplete=true to wait for it`,
  );
}

/** Where an instance's encrypted Secrets go, and what they are labelled with. */
function sealTarget(record: InstanceRecord, operationId: string, at: string) {
  const { instanceId, clusterId } = record.spec;
  return {
    dir: instanceManifestDir(clusterId, instanceId),
    namespace: record.metadata.namespace,
    labels: { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_INSTANCE]: keyOf(instanceId) },
    instanceId,
    operationId,
    at,
  };
}

/**
 * A provision of an id that already exists: 200 / 202 when identical, else 409. Sensitive values
 * cannot be compared (the broker cannot decrypt them): the same keys count as identical.
 */
function repeatedProvision(ctx: Ctx, existing: InstanceRecord, plan: Plan, body: ProvisionBody, apiVersion: ApiVersion): OsbResponse {
  const s = existing.spec;
  const first = existing.status.operations.find((o) => o.action === "provision");
  const plain = body.parameters && withoutSensitiveParameters(plan, ["service_instance.create"], body.parameters);
  const identical =
    s.serviceId === body.serviceId &&
    s.planId === body.planId &&
    s.organizationGuid === body.organizationGuid &&
    s.spaceGuid === body.spaceGuid &&
    sameJson(s.parameters ?? {}, plain ?? {}) &&
    sameJson(Object.keys(s.sensitiveParameters ?? {}).sort(), sensitiveKeys(plan, "service_instance.create", body.parameters)) &&
    sameJson(s.context ?? {}, body.context ?? {}) &&
    (body.maintenanceInfo === undefined || s.maintenanceInfo?.version === body.maintenanceInfo.version);
  if (!identical) {
    throw new ConflictError(`instance ${s.instanceId} already exists with different attributes`);
  }
  const latest = latestOperation(existing.status.operations);
  if (latest && latest === first && statusOf(ctx, existing, latest).state === "in progress") {
    return { status: 202, body: { operation: latest.id } };
  }
  if (latest && latest !== first && statusOf(ctx, existing, latest).state === "in progress") {
    throw new ConcurrencyError(`instance ${s.instanceId} has operation ${latest.action} ${latest.id} in progress`);
  }
  return { status: 200, body: instanceMetadata(existing, apiVersion) };
}

// ---------------------------------------------------------------------------
// Update
// ---------------------------------------------------------------------------

export async function update(
  ctx: Ctx,
  instanceId: string,
  body: UpdateBody,
  accepts: boolean,
  osb: OsbRequestInfo,
): Promise<OsbResponse> {
  const catalog = ctx.deps.view.catalog();
  const service = catalog.serviceById(body.serviceId);
  if (!service) throw new BadRequestError(`service_id ${JSON.stringify(body.serviceId)} is not in the catalog`);
  if (body.planId !== undefined) lookupPlan(catalog, body.serviceId, body.planId);

  await settleLatest(ctx, instanceId);
  let held: Held | undefined;
  const result = await runOperation<OsbResponse>(ctx, async (draft: Draft, { operationId, at }) => {
    held = undefined;
    const record = await readInstance(draft, instanceId);
    if (!live(record)) throw new NotFoundError(`instance ${instanceId} does not exist`);
    if (record.spec.serviceId !== body.serviceId) {
      throw new BadRequestError(`service_id ${body.serviceId} does not match the service of instance ${instanceId}`);
    }
    const current = recordedPlan(ctx.deps.view, record);
    const target = body.planId === undefined ? current : lookupPlan(catalog, body.serviceId, body.planId);
    const planChange = target.plan.id !== current.plan.id;
    if (planChange && !planUpdateable(current.service, current.plan)) {
      throw new UnprocessableEntityError(
        `plan ${current.plan.name} is not updateable (plan_updateable is false): instance ${instanceId} cannot move to plan ${target.plan.name}`,
      );
    }
    // Service Fabrik's manager.settings.update_predecessors, with its words (isUpdatePossible).
    if (!updatePossible(current.plan, target.plan)) throw new BadRequestError(`Update to plan '${target.plan.name}' is not possible`);
    if ((current.plan.async || target.plan.async) && !accepts) throw new AsyncRequiredError();
    if (planChange) {
      // Service Fabrik checked the quota at a plan change too (BaseQuotaManager.checkQuota on PATCH).
      const context = body.context ?? record.spec.context;
      checkQuota({
        quotas: (await ctx.quotas(draft)).quotas,
        summary: await summarizeInstances(draft, ctx.summaries),
        service: target.service,
        plan: target.plan,
        tenancy: tenancyOf(record.spec.organizationGuid, record.spec.spaceGuid, context),
        from: current.plan,
      });
    }
    checkMaintenanceInfo(target.plan, body.maintenanceInfo);
    if (body.parameters !== undefined) checkParameters(target.plan, "service_instance.update", body.parameters);
    const sensitive = sensitiveValues(ctx.deps.view.clusters(), target.plan, "service_instance.update", body.parameters, record.spec.clusterId);

    // OSB: a re-sent PATCH whose update has not completed MUST answer 202 with its operation.
    const running = runningOperation(ctx.deps.status, record);
    if (running && resentUpdate(running, target.plan, body)) return { commit: null, result: { status: 202, body: { operation: running.id } } };
    refuseIfBusy(ctx.deps.status, record);

    // Parameters given in an update replace the recorded top-level ones (OSB leaves the
    // interpretation to the broker; platforms send only what the user changed). Sensitive values
    // go to an encrypted Secret; those under a replaced top-level key are dropped (ADR 0007).
    const replaced = Object.keys(body.parameters ?? {});
    const plain = body.parameters && withoutSensitiveParameters(target.plan, ["service_instance.update"], body.parameters);
    const parameters = plain === undefined ? record.spec.parameters : mergeTopLevel(record.spec.parameters, plain, replaced);
    const kept = keptRefs(record.spec.sensitiveParameters, replaced);
    const context = body.context ?? record.spec.context;
    const maintenanceInfo = body.maintenanceInfo ?? record.spec.maintenanceInfo;
    const unchanged =
      !planChange &&
      !sensitive &&
      sameJson(kept, record.spec.sensitiveParameters ?? {}) &&
      sameJson(parameters ?? {}, record.spec.parameters ?? {}) &&
      sameJson(context ?? {}, record.spec.context ?? {}) &&
      sameJson(maintenanceInfo ?? null, record.spec.maintenanceInfo ?? null);
    if (unchanged) return { commit: null, result: { status: 200, body: instanceMetadata(record, osb.apiVersion) } };

    const op = operationEntry("update", operationId, at, osb, {
      planId: target.plan.id,
      ...(plain ? { parameters: plain } : {}),
      ...(body.context ? { context: body.context } : {}),
      ...(body.maintenanceInfo ? { maintenanceInfo: body.maintenanceInfo } : {}),
    });

    const { sensitiveParameters: _previous, ...spec } = record.spec;
    const refs = await sealSensitiveValues(draft, sealTarget(record, operationId, at), sensitive, record.spec.sensitiveParameters, replaced);
    let next: InstanceRecord = {
      ...record,
      spec: {
        ...spec,
        planId: target.plan.id,
        ...(parameters ? { parameters } : {}),
        ...(context ? { context } : {}),
        ...(maintenanceInfo ? { maintenanceInfo } : {}),
        ...(refs ? { sensitiveParameters: refs } : {}),
      },
      status: { ...record.status, operations: [...record.status.operations, op] },
    };
    const cluster = recordedCluster(ctx.deps.view, record);
    const bindings = await readLiveBindings(draft, instanceId);
    next = withInstanceMetadata(next, await renderInstanceMetadata({ ...target, instance: next, bindings }));
    const placed = { ...target, instance: next, bindings, namespace: instanceNamespace(next, cluster), capabilities: cluster.capabilities };
    const overrides = appliedOverrides(ctx, instanceId, await writeInstanceManifests(draft, placed, "update"));
    writeInstance(draft, next);
    held = { record: next, op };
    const answer = instanceMetadata(next, osb.apiVersion);
    return {
      commit: commitSpec(ctx, { action: "update", ...target, instanceId, operationId, osb, overrides }),
      result: target.plan.async || current.plan.async ? { status: 202, body: { ...answer, operation: operationId } } : { status: 200, body: answer },
    };
  }, { instance: instanceId });
  return result.status === 202 || !held ? result : answerSynchronous(ctx, held, result, accepts);
}

/** Whether `body` repeats the request of the update `running` (sensitive values cannot be compared: their keys are). */
function resentUpdate(running: OperationEntry, plan: Plan, body: UpdateBody): boolean {
  if (running.action !== "update" || running.planId !== plan.id) return false;
  const plain = body.parameters && withoutSensitiveParameters(plan, ["service_instance.update"], body.parameters);
  return (
    sameJson(running.parameters ?? null, plain ?? null) &&
    sameJson(running.context ?? null, body.context ?? null) &&
    sameJson(running.maintenanceInfo?.version ?? null, body.maintenanceInfo?.version ?? null)
  );
}

/** `update` over `base`, and the keys of `replaced` the update left out (sensitive ones) removed. */
function mergeTopLevel(
  base: Record<string, unknown> | undefined,
  update: Record<string, unknown>,
  replaced: readonly string[],
): Record<string, unknown> {
  const merged = { ...(base ?? {}), ...update };
  for (const key of replaced) if (!Object.hasOwn(update, key)) delete merged[key];
  return merged;
}

// ---------------------------------------------------------------------------
// Deprovision
// ---------------------------------------------------------------------------

export async function deprovision(
  ctx: Ctx,
  instanceId: string,
  ids: { serviceId: string; planId: string },
  accepts: boolean,
  osb: OsbRequestInfo,
): Promise<OsbResponse> {
  await settleLatest(ctx, instanceId);
  let held: Held | undefined;
  const result = await runOperation(ctx, async (draft: Draft, { operationId, at }) => {
    held = undefined;
    const record = await readInstance(draft, instanceId);
    const resent = record && resentDeprovision(ctx, record, ids, accepts);
    if (resent) return { commit: null, result: resent };
    if (!live(record)) throw new GoneError(`instance ${instanceId} does not exist`);
    checkPlatformIds(ctx, ids, record);
    const { service, plan } = recordedPlan(ctx.deps.view, record);
    if (plan.async && !accepts) throw new AsyncRequiredError();
    // Deleting during provisioning is allowed (it halts the creation); during an update it is not.
    refuseIfBusy(ctx.deps.status, record, "provision");

    const op = operationEntry("deprovision", operationId, at, osb);

    // Bindings go with the instance (platforms unbind first; orphan mitigation may not).
    for (const binding of await readLiveBindings(draft, instanceId)) {
      writeBinding(draft, { ...binding, status: { ...binding.status, deleted: true } });
    }
    removeInstanceManifests(draft, record);
    const deleted: InstanceRecord = { ...record, status: { deleted: true, operations: [...record.status.operations, op] } };
    writeInstance(draft, deleted);
    held = { record: deleted, op };
    return {
      commit: commitSpec(ctx, { action: "deprovision", service, plan, instanceId, operationId, osb }),
      result: plan.async ? { status: 202, body: { operation: operationId } } : { status: 200, body: {} },
    };
  }, { instance: instanceId });
  return result.status === 202 || !held ? result : answerSynchronous(ctx, held, result, accepts);
}

/**
 * OSB: a re-sent DELETE whose deletion has not completed MUST answer 202 with its operation (an
 * asynchronous plan's; a synchronous deprovision answered 200 and is complete for the platform).
 */
function resentDeprovision(
  ctx: Ctx,
  record: InstanceRecord,
  ids: { serviceId: string; planId: string },
  accepts: boolean,
): OsbResponse | undefined {
  if (!record.status.deleted || !accepts) return undefined;
  const latest = latestOperation(record.status.operations);
  if (latest?.action !== "deprovision" || record.spec.serviceId !== ids.serviceId) return undefined;
  if (!acceptedPlanIds(ctx.deps.status, record).includes(ids.planId)) return undefined;
  const plan = ctx.deps.view.catalog().planById(record.spec.planId);
  if (!plan?.async || statusOf(ctx, record, latest).state !== "in progress") return undefined;
  return { status: 202, body: { operation: latest.id } };
}

// ---------------------------------------------------------------------------
/**
 * OSB `metadata` of a provision or update answer (and GET instance's, from 2.17): the record's
 * labels from 2.16, its attributes from 2.17 (ADR 0033); {} when there is nothing to say.
 */
export function instanceMetadata(record: InstanceRecord, apiVersion: ApiVersion): { metadata?: Record<string, unknown> } {
  const since = (minor: number) => apiVersion.major > 2 || apiVersion.minor >= minor;
  const metadata: Record<string, unknown> = {};
  if (record.status.labels !== undefined && since(16)) metadata.labels = record.status.labels;
  if (record.status.attributes !== undefined && since(17)) metadata.attributes = record.status.attributes;
  return Object.keys(metadata).length > 0 ? { metadata } : {};
}

/** OSB `dashboard_url` in a provision answer, only when there is one. */
function withDashboard(url: string | undefined): Record<string, unknown> {
  return url === undefined ? {} : { dashboard_url: url };
}

// Reads: last_operation and GET instance (from the last pushed tip).
// ---------------------------------------------------------------------------

export function operationResponse(status: OperationStatus): OsbResponse {
  const body: Record<string, unknown> = { state: status.state };
  if (status.description) body.description = status.description;
  if (status.instanceUsable !== undefined) body.instance_usable = status.instanceUsable;
  if (status.updateRepeatable !== undefined) body.update_repeatable = status.updateRepeatable;
  return status.state === "in progress" ? { status: 200, body, retryAfter: POLL_RETRY_AFTER } : { status: 200, body };
}

/** The operation asked for, or the latest one when `operation` is missing or unknown. */
export function pickOperation<A extends string>(ops: OperationEntry<A>[], operation: string | undefined): OperationEntry<A> | undefined {
  return (operation !== undefined ? ops.find((o) => o.id === operation) : undefined) ?? latestOperation(ops);
}

/**
 * The answer to polling something that does not exist: from OSB 2.16 on 404 ("MUST be returned if
 * the Service Instance being polled does not exist"); before, 410 was the only answer the spec had.
 * A completed delete is not this case: its record is kept and answers its deprovision's state.
 */
export function pollingMissing(apiVersion: ApiVersion, what: string): NotFoundError | GoneError {
  return apiVersion.major === 2 && apiVersion.minor < 16 ? new GoneError(what) : new NotFoundError(what);
}

export async function instanceLastOperation(
  ctx: Ctx,
  instanceId: string,
  operation: string | undefined,
  apiVersion: ApiVersion,
): Promise<OsbResponse> {
  const record = await readConfirmed(ctx, (tree) => readInstance(tree, instanceId), (r) => !r || !pickOperation(r.status.operations, operation));
  const op = record ? pickOperation(record.status.operations, operation) : undefined;
  if (!record || !op) {
    ctx.deps.metrics.lastOperations.inc({ resource: "instance", state: "missing" });
    throw pollingMissing(apiVersion, `instance ${instanceId} does not exist`);
  }
  await settled(ctx, record, undefined, op);
  const status = statusOf(ctx, record, op);
  ctx.deps.metrics.lastOperations.inc({ resource: "instance", state: status.state });
  return operationResponse(status);
}

export async function fetchInstance(ctx: Ctx, instanceId: string, apiVersion: ApiVersion, hints: PlatformIds = {}): Promise<OsbResponse> {
  const record = await readConfirmed(ctx, (tree) => readInstance(tree, instanceId), (r) => !live(r));
  if (!live(record)) throw new NotFoundError(`instance ${instanceId} does not exist`);
  checkPlatformIds(ctx, hints, record);
  const { service, plan } = recordedPlan(ctx.deps.view, record);
  if (!service.instancesRetrievable) {
    throw new BadRequestError(`service ${service.name} does not support fetching instances (instances_retrievable is false)`);
  }
  await settled(ctx, record, undefined, latestOperation(record.status.operations));
  const running = runningOperation(ctx.deps.status, record);
  if (running?.action === "provision") throw new NotFoundError(`instance ${instanceId} is still being provisioned`);
  if (running) throw new ConcurrencyError(`instance ${instanceId} is being updated (${running.id}) and cannot be fetched now`);
  const body: Record<string, unknown> = {
    service_id: record.spec.serviceId,
    plan_id: record.spec.planId,
    // A plan may mark a parameter sensitive after it was stored: such values are never served.
    parameters: withoutSensitiveParameters(plan, ["service_instance.create", "service_instance.update"], record.spec.parameters ?? {}),
  };
  // The status template's dashboardUrl, which Service Fabrik stored but never returned
  // (cloudfoundry/service-fabrik-broker#1493), before the plan's dashboard_url_template.
  const latest = latestOperation(record.status.operations);
  const dashboard = (latest && statusOf(ctx, record, latest).dashboardUrl) ?? dashboardUrl(plan, record);
  if (dashboard) body.dashboard_url = dashboard;
  if (record.spec.maintenanceInfo) body.maintenance_info = record.spec.maintenanceInfo;
  // OSB 2.17 returns the instance's metadata on fetch (2.16 had it in provision and update only).
  if (apiVersion.major > 2 || apiVersion.minor >= 17) Object.assign(body, instanceMetadata(record, apiVersion));
  return { status: 200, body };
}
