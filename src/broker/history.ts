import { InternalError, NotFoundError } from "../errors/index.js";
import type { CommitInfo, GitReader, TreeReader } from "../gitwriter/index.js";
import {
  instanceManifestDir,
  instanceRecordDir,
  keyOf,
  latestOperation,
  overridesDir,
  readBinding,
  readBrokerTrailers,
  readInstance,
  TRAILER,
  type InstanceRecord,
  type OriginatingIdentity,
} from "../repo/index.js";
import type { OperationState, StatusWatcher } from "../status-watcher/index.js";
import type { Ctx, OsbResponse } from "./context.js";

/**
 * An instance's timeline from Git: every commit that touched its record, its binding records,
 * its overrides or its manifests (on any cluster it lived on), oldest first, with the audit
 * trailers decoded. Read with `git log` on a local repository that holds the tip (the writer's),
 * off the write queue, so it never delays an OSB request.
 */

export interface HistoryEntry {
  commit: string;
  /** Author date, in UTC like the records' operation times (RFC 3339). */
  at: string;
  author: { name: string; email: string };
  subject: string;
  /** `broker`: a commit of the broker (it carries Broker-Version); `human`: anyone else's. */
  by: "broker" | "human";
  /** The broker's operation (provision, update, bind, unbind, deprovision, move, re-render, gc ...); `change` for a human's commit. */
  action: string;
  operation?: string;
  bindingId?: string;
  /** A rotation: the binding `bindingId` succeeds (its Predecessor-Binding-Id trailer). */
  predecessorBindingId?: string;
  /** Who asked: the platform's X-Broker-API-Originating-Identity, decoded. */
  originatingIdentity?: OriginatingIdentity;
  requestIdentity?: string;
  /** Override files the commit's renders applied. */
  overrides?: string[];
  /** The operation's state now, from the status watcher (unknown for operations of an earlier record of the id). */
  state?: OperationState;
  /** Every trailer of the commit, as written (a repeated one, such as a records GC's Instance-Id, as the list of its values). */
  trailers: Record<string, string | string[]>;
}

export interface InstanceHistory {
  instanceId: string;
  key: string;
  /** From the record at the tip; null when there is none. */
  current: {
    deleted: boolean;
    serviceId: string;
    planId: string;
    clusterId: string;
    lastOperation?: { id: string; action: string; at: string; state: OperationState; description?: string };
  } | null;
  entries: HistoryEntry[];
}

export interface HistorySource {
  /** The repository: its tip (snapshot) and history (log). */
  reader: Pick<GitReader, "snapshot" | "log">;
  status: Pick<StatusWatcher, "instanceStatus" | "bindingStatus">;
}

function toEntry({ commit, authorDate, author, subject, trailers }: CommitInfo): HistoryEntry {
  const byBroker = trailers[TRAILER.brokerVersion] !== undefined;
  const decoded = readBrokerTrailers(trailers);
  const entry: HistoryEntry = {
    commit,
    at: new Date(authorDate).toISOString(),
    author,
    subject,
    by: byBroker ? "broker" : "human",
    // The subject's first word: `provision`, `re-render`, `gc:` (records GC) read as `gc`.
    action: byBroker ? (subject.split(" ", 1)[0] ?? "").replace(/:$/, "") : "change",
    trailers,
  };
  if (decoded.operation) entry.operation = decoded.operation;
  if (decoded.bindingId) entry.bindingId = decoded.bindingId;
  if (decoded.predecessorBindingId) entry.predecessorBindingId = decoded.predecessorBindingId;
  if (decoded.originatingIdentity) entry.originatingIdentity = decoded.originatingIdentity;
  if (decoded.requestIdentity) entry.requestIdentity = decoded.requestIdentity;
  if (decoded.overrides) entry.overrides = [...decoded.overrides];
  return entry;
}

async function stateOf(source: Source, instance: InstanceRecord | null, entry: HistoryEntry): Promise<OperationState | undefined> {
  if (!instance || !entry.operation) return undefined;
  if (entry.bindingId) {
    const binding = await readBinding(source.tree, instance.spec.instanceId, entry.bindingId);
    const op = binding?.status.operations.find((o) => o.id === entry.operation);
    return binding && op ? source.status.bindingStatus(instance, binding, op).state : undefined;
  }
  const op = instance.status.operations.find((o) => o.id === entry.operation);
  return op ? source.status.instanceStatus(instance, op).state : undefined;
}

function currentOf(source: Source, record: InstanceRecord | null): InstanceHistory["current"] {
  if (!record) return null;
  const { serviceId, planId, clusterId } = record.spec;
  const op = latestOperation(record.status.operations);
  const status = op && source.status.instanceStatus(record, op);
  return {
    deleted: record.status.deleted === true,
    serviceId,
    planId,
    clusterId,
    ...(op && status
      ? { lastOperation: { id: op.id, action: op.action, at: op.at, state: status.state, ...(status.description ? { description: status.description } : {}) } }
      : {}),
  };
}

/** The history source with the tip it is read at. */
type Source = Pick<HistorySource, "status"> & { tree: TreeReader };

export async function instanceHistory({ reader, status }: HistorySource, instanceId: string): Promise<InstanceHistory> {
  const source: Source = { tree: reader.snapshot(), status };
  const tip = source.tree.commit;
  if (tip === null) throw new NotFoundError(`instance ${instanceId} has no history: the repository is empty`);
  // Manifests on any cluster: a moved instance left its earlier ones elsewhere.
  const manifests = instanceManifestDir("any", instanceId).replace(/^clusters\/any\//, "clusters/*/");
  let commits: CommitInfo[];
  try {
    commits = await reader.log(tip, [instanceRecordDir(instanceId), overridesDir(instanceId), `:(glob)${manifests}/**`]);
  } catch (e) {
    throw new InternalError("git log failed", { cause: e });
  }
  const entries = commits.map(toEntry).reverse();
  const record = await readInstance(source.tree, instanceId);
  if (!record && entries.length === 0) throw new NotFoundError(`instance ${instanceId} has no history in the repository`);
  for (const entry of entries) {
    const state = await stateOf(source, record, entry);
    if (state) entry.state = state;
  }
  return { instanceId, key: keyOf(instanceId), current: currentOf(source, record), entries };
}

/** GET /admin/instances/:instance_id/history (basic auth, like /v2). */
export async function historyResponse(ctx: Ctx, instanceId: string): Promise<OsbResponse> {
  return { status: 200, body: { ...(await instanceHistory({ reader: ctx.deps.writer, status: ctx.deps.status }, instanceId)) } };
}
