import { BadRequestError, UnprocessableEntityError } from "../errors/index.js";
import type { Draft, OperationOutcome, TreeReader } from "../gitwriter/index.js";
import {
  BINDING_CLEANUP_REASON,
  bindingManifestDir,
  bindingRecordPath,
  brokerTrailers,
  CLUSTERS_DIR,
  INSTANCES_DIR,
  instanceNamespace,
  latestOperation,
  readBinding,
  readInstance,
  readRecordAt,
  type InstanceRecord,
} from "../repo/index.js";
import type { OperationState } from "../status-watcher/index.js";
import type { AdminDeps } from "./admin.js";

/**
 * The operator views Service Fabrik's operator APIs gave, on the repository, for the admin
 * endpoints (admin-routes.ts) and the CLI: live instances by cluster, plan and state, paged; the
 * removal of the records of a binding whose instance is gone.
 */
// ---------------------------------------------------------------------------
// Instances by cluster, plan and state, paged (Service Fabrik's GET /operator/deployments)
// ---------------------------------------------------------------------------

export const INSTANCE_STATES: readonly OperationState[] = ["in progress", "succeeded", "failed"];
export const MAX_PAGE_SIZE = 1000;
export const DEFAULT_PAGE_SIZE = 100;

export interface InstanceQuery {
  clusterId?: string;
  serviceId?: string;
  planId?: string;
  /** The state of the instance's last operation. */
  state?: OperationState;
  pageSize?: number;
  /** From the previous page's `nextPageToken`. */
  pageToken?: string;
}

export interface InstanceListEntry {
  instanceId: string;
  serviceId: string;
  planId: string;
  /** The plan's name in the catalog served (absent: the plan is not in it). */
  planName?: string;
  clusterId: string;
  namespace: string;
  organizationGuid?: string;
  spaceGuid?: string;
  lastOperation?: { id: string; action: string; at: string; state: OperationState; description?: string };
}

export interface InstancePage {
  instances: InstanceListEntry[];
  /** Present when more instances match: pass it as `pageToken` for the next page. */
  nextPageToken?: string;
}

/** A record directory below `instances/`: `<ab>/<cd>/<key>`, what a page token encodes. */
const RECORD_DIR = /^[0-9a-f]{2}\/[0-9a-f]{2}\/[a-z0-9][-a-z0-9]*$/;

function decodePageToken(token: string): string {
  const dir = Buffer.from(token, "base64url").toString("utf8");
  if (!RECORD_DIR.test(dir) || Buffer.from(dir).toString("base64url") !== token) {
    throw new BadRequestError(`page_token ${JSON.stringify(token)} is not one this broker gave: pass the nextPageToken of the previous page`);
  }
  return dir;
}

async function sortedDirs(tree: TreeReader, dir: string): Promise<string[]> {
  return ((await tree.list(dir)) ?? [])
    .filter((e) => e.type === "tree")
    .map((e) => e.name)
    .sort();
}

/** The record directories (`<ab>/<cd>/<key>`) after `after`, in path order. */
async function* recordDirsAfter(tree: TreeReader, after: string | undefined): AsyncGenerator<string> {
  const [afterAb = "", afterCd = ""] = after?.split("/") ?? [];
  for (const ab of await sortedDirs(tree, INSTANCES_DIR)) {
    if (ab < afterAb) continue;
    for (const cd of await sortedDirs(tree, `${INSTANCES_DIR}/${ab}`)) {
      if (ab === afterAb && cd < afterCd) continue;
      for (const key of await sortedDirs(tree, `${INSTANCES_DIR}/${ab}/${cd}`)) {
        const dir = `${ab}/${cd}/${key}`;
        if (after === undefined || dir > after) yield dir;
      }
    }
  }
}

/**
 * Live instances matching `query`, in the order of their record paths (stable while instances come
 * and go: a page token is the last record directory of its page), read from the last known tip.
 * Each record of the repository is read at most once per listing; the filters are applied to the
 * records, so a page of a rare plan may read many.
 */
export async function listInstances(deps: Pick<AdminDeps, "writer" | "view" | "status">, query: InstanceQuery): Promise<InstancePage> {
  const pageSize = query.pageSize ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE) {
    throw new BadRequestError(`page_size must be an integer from 1 to ${MAX_PAGE_SIZE}, not ${String(query.pageSize)}`);
  }
  const after = query.pageToken === undefined ? undefined : decodePageToken(query.pageToken);
  const tree = deps.writer.snapshot();
  const instances: InstanceListEntry[] = [];
  let last: string | undefined;
  for await (const dir of recordDirsAfter(tree, after)) {
    const record = await readRecordAt<InstanceRecord>(tree, `${INSTANCES_DIR}/${dir}/instance.yaml`);
    if (!record || record.status.deleted || !matches(record, query)) continue;
    const entry = listEntry(deps, record);
    if (query.state !== undefined && entry.lastOperation?.state !== query.state) continue;
    if (instances.length === pageSize) return { instances, nextPageToken: Buffer.from(last!).toString("base64url") };
    instances.push(entry);
    last = dir;
  }
  return { instances };
}

function matches(record: InstanceRecord, query: InstanceQuery): boolean {
  const { spec } = record;
  return (
    (query.clusterId === undefined || spec.clusterId === query.clusterId) &&
    (query.serviceId === undefined || spec.serviceId === query.serviceId) &&
    (query.planId === undefined || spec.planId === query.planId)
  );
}

function listEntry(deps: Pick<AdminDeps, "view" | "status">, record: InstanceRecord): InstanceListEntry {
  const { spec } = record;
  const plan = deps.view.catalog().planById(spec.planId);
  const cluster = deps.view.clusters().find((c) => c.id === spec.clusterId);
  const op = latestOperation(record.status.operations);
  const status = op && deps.status.instanceStatus(record, op);
  return {
    instanceId: spec.instanceId,
    serviceId: spec.serviceId,
    planId: spec.planId,
    ...(plan ? { planName: plan.name } : {}),
    clusterId: spec.clusterId,
    namespace: cluster ? instanceNamespace(record, cluster) : (spec.namespace ?? record.metadata.namespace),
    ...(spec.organizationGuid !== undefined ? { organizationGuid: spec.organizationGuid } : {}),
    ...(spec.spaceGuid !== undefined ? { spaceGuid: spec.spaceGuid } : {}),
    ...(op && status
      ? {
          lastOperation: {
            id: op.id,
            action: op.action,
            at: op.at,
            state: status.state,
            ...(status.description !== undefined ? { description: status.description } : {}),
          },
        }
      : {}),
  };
}

// ---------------------------------------------------------------------------
// A binding whose instance is gone (Service Fabrik's binding cleanup)
// ---------------------------------------------------------------------------

export interface BindingCleanup {
  instanceId: string;
  bindingId: string;
  /** The commit that removed the files; null when there was nothing left to remove. */
  commit: string | null;
  /** Repo paths removed (the binding record, and binding manifests left on any cluster), sorted. */
  removed: string[];
}

/**
 * Removes the binding record (and any manifests of it left under `clusters/`) of a binding whose
 * instance is gone: deprovisioned, or its record removed. One commit (`Reason: binding-cleanup`,
 * Instance-Id, Binding-Id); a second call finds nothing and commits nothing. A binding of a live
 * instance is refused (422): unbind it through OSB.
 */
export async function cleanupBinding(deps: AdminDeps, instanceId: string, bindingId: string): Promise<BindingCleanup> {
  const { result, commit } = await deps.routed.submit({ instance: instanceId }, async (draft: Draft): Promise<OperationOutcome<string[]>> => {
    const instance = await readInstance(draft, instanceId);
    if (instance && !instance.status.deleted) {
      const binding = await readBinding(draft, instanceId, bindingId);
      const state = binding && !binding.status.deleted ? "is bound" : "has no such binding";
      throw new UnprocessableEntityError(
        `instance ${instanceId} is live (it ${state}): only a binding whose instance is deprovisioned or gone is cleaned up; unbind it through OSB`,
      );
    }
    const removed: string[] = [];
    const record = bindingRecordPath(instanceId, bindingId);
    if ((await draft.oid(record)) !== null) removed.push(record);
    for (const cluster of (await draft.list(CLUSTERS_DIR)) ?? []) {
      if (cluster.type !== "tree") continue;
      const dir = bindingManifestDir(cluster.name, instanceId, bindingId);
      if ((await draft.list(dir)) !== null) removed.push(dir);
    }
    if (removed.length === 0) return { commit: null, result: removed };
    for (const path of removed) draft.remove(path);
    return {
      commit: {
        subject: `binding-cleanup instance ${instanceId} binding ${bindingId} (${instance ? "instance deprovisioned" : "no instance record"})`,
        trailers: brokerTrailers({ reason: BINDING_CLEANUP_REASON, instanceId, bindingId, brokerVersion: deps.brokerVersion }),
      },
      result: removed,
    };
  });
  return { instanceId, bindingId, commit, removed: [...result].sort() };
}
