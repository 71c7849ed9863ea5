import type { Catalog, ClusterEntry, Plan, RepoView, Service } from "../catalog/index.js";
import { BadRequestError, ConcurrencyError, UnprocessableEntityError } from "../errors/index.js";
import { latestOperation, type InstanceRecord, type OperationEntry } from "../repo/index.js";
import type { StatusWatcher } from "../status-watcher/index.js";

/** What every operation on an existing instance asks first: is it busy, and where does it live. */

/** The service and plan a request names; 400 when the catalog has no such pair. */
export function lookupPlan(catalog: Catalog, serviceId: string, planId: string): { service: Service; plan: Plan } {
  const service = catalog.serviceById(serviceId);
  if (!service) throw new BadRequestError(`service_id ${JSON.stringify(serviceId)} is not in the catalog`);
  const plan = service.plans.find((p) => p.id === planId);
  if (!plan) {
    const elsewhere = catalog.planById(planId);
    throw new BadRequestError(
      elsewhere
        ? `plan_id ${JSON.stringify(planId)} belongs to another service, not to service ${service.name}`
        : `plan_id ${JSON.stringify(planId)} is not a plan of service ${service.name}`,
    );
  }
  return { service, plan };
}

/** The instance's latest operation when the status watcher says it is still in progress. */
export function runningOperation(status: Pick<StatusWatcher, "instanceStatus">, record: InstanceRecord): OperationEntry | undefined {
  const op = latestOperation(record.status.operations);
  return op && status.instanceStatus(record, op).state === "in progress" ? op : undefined;
}

/**
 * 409 when an operation of the instance is in progress, unless its action is `allowed` (a
 * deprovision or unbind may cut a provision short).
 */
export function refuseIfBusy(status: Pick<StatusWatcher, "instanceStatus">, record: InstanceRecord, allowed?: string): void {
  const op = runningOperation(status, record);
  if (op && op.action !== allowed) {
    throw new ConcurrencyError(`instance ${record.spec.instanceId} has operation ${op.action} ${op.id} in progress`);
  }
}

/** The plan of a recorded instance; 422 when the catalog no longer has it. */
export function recordedPlan(view: Pick<RepoView, "catalog">, record: InstanceRecord): { service: Service; plan: Plan } {
  try {
    return lookupPlan(view.catalog(), record.spec.serviceId, record.spec.planId);
  } catch (e) {
    throw new UnprocessableEntityError(
      `instance ${record.spec.instanceId} uses plan ${record.spec.planId}, which is no longer in the catalog`,
      { cause: e },
    );
  }
}

/** The cluster a recorded instance is placed on; 422 when the registry no longer has it. */
export function recordedCluster(view: Pick<RepoView, "clusters">, record: InstanceRecord): ClusterEntry {
  const cluster = view.clusters().find((c) => c.id === record.spec.clusterId);
  if (!cluster) {
    throw new UnprocessableEntityError(
      `instance ${record.spec.instanceId} is placed on cluster ${record.spec.clusterId}, which is not in the cluster registry`,
    );
  }
  return cluster;
}
