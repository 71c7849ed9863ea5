import { BaseError, NotFoundError, SchedulingError, UnprocessableEntityError } from "../errors/index.js";
import { tappedDraft, type Draft, type GitWriter, type OperationOutcome } from "../gitwriter/index.js";
import {
  brokerTrailers,
  instanceManifestDir,
  liveOnCluster,
  readInstance,
  readLiveBindings,
  summarizeInstances,
  writeBinding,
  writeInstance,
  type InstanceSummaryCache,
} from "../repo/index.js";
import { createScheduler } from "../scheduler/index.js";
import type { StatusWatcher } from "../status-watcher/index.js";
import type { RepoView } from "../catalog/index.js";
import {
  lookupPlan,
  removeInstanceManifests,
  refuseIfBusy,
  sensitiveFiles,
  writeBindingManifests,
  writeInstanceManifests,
} from "../materialize/index.js";
import type { RoutedWriter } from "../stores/index.js";
import { placeInstance } from "./placement.js";

/**
 * Administrative operations on the repository, for the CLI: listing clusters with their load,
 * and moving an instance to another cluster. They use the same records, rendering and queue as
 * the OSB operations.
 */

export interface AdminDeps {
  /** Reads (the last fetched tips). */
  writer: GitWriter;
  /** Writes, each in the repository its placement routes to (ADR 0036). */
  routed: RoutedWriter;
  view: RepoView;
  summaries: InstanceSummaryCache;
  status: StatusWatcher;
  brokerVersion: string;
}

export interface ClusterReport {
  id: string;
  schedulable: boolean;
  instances: number;
  maxInstances: number | undefined;
  resources: Record<string, string | number> | undefined;
  namespace: string;
  statusMode: string | undefined;
  labels: Record<string, string>;
}

export async function clusterReport(deps: AdminDeps): Promise<ClusterReport[]> {
  const tree = deps.writer.snapshot();
  await deps.view.sync(tree);
  const summary = await summarizeInstances(tree, deps.summaries);
  return deps.view.clusters().map((c) => ({
    id: c.id,
    schedulable: c.schedulable,
    instances: liveOnCluster(summary, c.id),
    maxInstances: c.capacity?.maxInstances,
    resources: c.capacity?.resources,
    namespace: c.namespace,
    statusMode: c.statusMode,
    labels: c.labels,
  }));
}

export interface MoveResult {
  from: string;
  to: string;
  /** null for a dry run. */
  commit: string | null;
  /** Files the commit deletes (the instance's objects on the old cluster) and writes, sorted. */
  deleted: string[];
  written: string[];
}

/**
 * Not a failure: carries a dry run's result out of the queued operation, whose edits are dropped
 * with it (an operation that throws commits nothing). Caught by moveInstance, never reported.
 */
class DryRun extends BaseError {
  static override readonly code = "DryRun";
  constructor(readonly result: MoveResult) {
    super("dry run");
  }
}

/**
 * Move an instance to another cluster in one commit: its objects (and its bindings') leave
 * `clusters/<from>/` and are rendered into `clusters/<to>/`; the record follows. The target must
 * be registered, schedulable and have room. An instance with sensitive parameters is not moved:
 * they are encrypted for the source cluster and the broker cannot decrypt them (ADR 0007).
 * With `dryRun`, the same checks and rendering run on a draft that is dropped: nothing is committed.
 */
export async function moveInstance(deps: AdminDeps, instanceId: string, targetId: string, options: { dryRun?: boolean } = {}): Promise<MoveResult> {
  try {
    // Routed by the cluster the human chose; the instance must be in its repository (ADR 0036).
    const placement = { cluster: targetId, instance: instanceId };
    const { result, commit } = await deps.routed.submit(placement, (draft: Draft) => moveOperation(deps, instanceId, targetId, draft, options.dryRun === true));
    return { ...result, commit };
  } catch (e) {
    if (e instanceof DryRun) return e.result;
    throw e;
  }
}

/** Files under `dir` at any depth, repo paths. */
async function filesBelow(tree: Draft, dir: string): Promise<string[]> {
  const entries = (await tree.list(dir)) ?? [];
  const nested = await Promise.all(
    entries.map((e) => (e.type === "tree" ? filesBelow(tree, `${dir}/${e.name}`) : Promise.resolve([`${dir}/${e.name}`]))),
  );
  return nested.flat();
}

async function moveOperation(
  deps: AdminDeps,
  instanceId: string,
  targetId: string,
  draft: Draft,
  dryRun: boolean,
): Promise<OperationOutcome<Omit<MoveResult, "commit">>> {
  await deps.view.sync(draft);
  const record = await readInstance(draft, instanceId);
  if (!record || record.status.deleted) throw new NotFoundError(`instance ${instanceId} does not exist`);
  const from = record.spec.clusterId;
  if (from === targetId) throw new UnprocessableEntityError(`instance ${instanceId} is already on cluster ${targetId}`);
  const target = deps.view.clusters().find((c) => c.id === targetId);
  if (!target) throw new SchedulingError(`cluster ${targetId} is not in the registry`);
  refuseIfBusy(deps.status, record);
  const { service, plan } = lookupPlan(deps.view.catalog(), record.spec.serviceId, record.spec.planId);
  if (sensitiveFiles(record, await readLiveBindings(draft, instanceId)).length > 0) {
    throw new UnprocessableEntityError(
      `instance ${instanceId} holds sensitive parameters encrypted for cluster ${from}; the broker cannot re-encrypt them for ${targetId}: ` +
        "deprovision it and provision it again on the target",
    );
  }
  // The `single` scheduler over just the target says whether it has room (instances, resources).
  await placeInstance({
    tree: draft,
    cache: deps.summaries,
    scheduler: createScheduler({ type: "single" }),
    catalog: deps.view.catalog(),
    clusters: [target],
    service,
    plan,
    instance: record,
  });
  const deleted = await filesBelow(draft, instanceManifestDir(from, instanceId));
  const written: string[] = [];
  const recording = tappedDraft(draft, (file, content) => {
    if (content !== null) written.push(file);
  });
  removeInstanceManifests(draft, record);
  // An imported instance's own namespace (spec.namespace) stays behind: on the new cluster it
  // lives in the cluster's instance namespace, as every instance provisioned there.
  const { namespace: _own, ...spec } = record.spec;
  const moved = {
    ...record,
    metadata: { ...record.metadata, namespace: target.namespace },
    spec: { ...spec, clusterId: target.id },
  };
  const bindings = (await readLiveBindings(draft, instanceId)).map((b) => ({
    ...b,
    metadata: { ...b.metadata, namespace: target.namespace },
  }));
  const placed = { service, plan, instance: moved, bindings, namespace: target.namespace, capabilities: target.capabilities };
  const rendered = [await writeInstanceManifests(recording, placed, "update")];
  for (const binding of bindings) {
    rendered.push(await writeBindingManifests(recording, placed, binding));
    writeBinding(recording, binding);
  }
  writeInstance(recording, moved);
  const files = { deleted: deleted.filter((f) => !written.includes(f)).sort(), written: [...new Set(written)].sort() };
  if (dryRun) throw new DryRun({ from, to: target.id, commit: null, ...files });
  return {
    commit: {
      subject: `move ${service.name}/${plan.name} instance ${instanceId} from ${from} to ${target.id}`,
      trailers: brokerTrailers({
        instanceId,
        movedFrom: from,
        movedTo: target.id,
        overrides: [...new Set(rendered.flatMap((r) => r.overrides))],
        brokerVersion: deps.brokerVersion,
      }),
    },
    result: { from, to: target.id, ...files },
  };
}
