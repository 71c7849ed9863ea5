import type { Plan, Service } from "../catalog/index.js";
import { RenderPending, toError } from "../errors/index.js";
import { hasTemplate, renderNow, type RenderValues } from "../render/index.js";
import { keyOf, LABEL_INSTANCE, type BindingRecord, type InstanceRecord, type OperationEntry } from "../repo/index.js";
import type { AppliedIndex } from "./applied-index.js";
import { blocked, gathering, isNotReady, type KindRef, type LiveCluster, type NotReady } from "./live-cluster.js";
import { renderSources, renderStatus, type SourceRef, type StatusAction, type StatusSection } from "./status-templates.js";
import type { SyncObservation } from "./sync-state.js";
import type { BindingResult, OperationStatus } from "./types.js";

/**
 * The state of one operation in live mode, from what the cluster's caches hold now. In order:
 * the cluster must be readable, the sync object must have applied the operation's commit and
 * settled, then the plan's `status` template judges the live objects (without one: the sync
 * object's health); a deprovision or unbind also needs the broker's objects gone.
 */

export interface Subject {
  instance: InstanceRecord;
  binding?: BindingRecord;
  operation: OperationEntry;
  service: Service;
  plan: Plan;
  cluster: LiveCluster;
}

/** What a subject's records and plan say, independent of the cluster: computed once per operation. */
export interface Prepared {
  /** Deprovision / unbind: kinds (and namespaces) of the objects the broker rendered, all watched for deletion. */
  kinds: KindRef[];
  sources: Map<string, SourceRef> | Error;
}

function values(s: Omit<Subject, "cluster">): RenderValues {
  return {
    service: s.service.raw,
    plan: s.plan.raw,
    instance: s.instance as unknown as Record<string, unknown>,
    ...(s.binding ? { binding: s.binding as unknown as Record<string, unknown> } : {}),
    bindings: s.binding ? [s.binding as unknown as Record<string, unknown>] : [],
  };
}

/** Renders what does not depend on the cluster (pure; the caller memoizes it per operation). */
export function prepare(s: Omit<Subject, "cluster">): Prepared {
  const kinds = new Map<string, KindRef>();
  const collect = (action: string): void => {
    if (!hasTemplate(s.plan.templates, action)) return;
    const namespace = s.instance.metadata.namespace;
    for (const m of renderNow({ action, templates: s.plan.templates, values: values(s), defaultNamespace: namespace, labels: {}, planName: s.plan.name })) {
      const kind = { apiVersion: m.apiVersion, kind: m.kind, namespace: m.namespace ?? "" };
      kinds.set(`${kind.apiVersion} ${kind.kind} ${kind.namespace}`, kind);
    }
  };
  let sources: Prepared["sources"];
  try {
    // Rendering manifests is the costly part: only a removal needs to know every kind. The
    // instance's objects come from `provision`, or `update` once updated, bound or unbound.
    if (s.operation.action === "deprovision") ["provision", "update"].forEach(collect);
    if (s.operation.action === "unbind") collect("bind");
    sources = renderSources(s.plan, values(s));
  } catch (error) {
    sources = toError(error);
  }
  return { kinds: [...kinds.values()], sources };
}

const inProgress = (description: string): OperationStatus => ({ state: "in progress", description });

/**
 * Templates of engines that run off this thread (gotemplate) render in the background the first
 * time their inputs are seen: until then the operation is in progress with this description, a
 * state the watcher does not memoize (the next poll finds the text).
 */
export const RENDERING = "rendering the templates of plan";
const rendering = (s: Pick<Subject, "plan">): OperationStatus => ({ state: "in progress", description: `${RENDERING} ${s.plan.name}`, provisional: true });
export const isRendering = (status: OperationStatus): boolean => status.description?.startsWith(RENDERING) === true;

/**
 * In progress, and why: while the watcher is still gathering its view (connecting, a first list, a
 * discovery, reading the applied revision's records) the answer is provisional, not one to give
 * (ADR 0012); what the cluster says is a plain "in progress".
 */
const notReady = ({ state, description }: NotReady): OperationStatus =>
  state === "gathering" ? { state: "in progress", description, provisional: true } : inProgress(description);
const sha7 = (revision: string) => revision.slice(0, 7);

/** `prepared` is asked for only once the commit is applied: polls before that render nothing. */
export function evaluate(s: Subject, prepared: () => Prepared, index: AppliedIndex): OperationStatus {
  const { cluster, operation: op } = s;
  const problem = cluster.problem();
  if (problem) return inProgress(problem);
  const sync = cluster.sync();
  if (isNotReady(sync)) return notReady(sync);
  const applied = appliedGate(s, sync, index);
  const gate = "waiting" in applied ? applied.waiting : sync.settling ? blocked(`waiting for ${sync.subject}: ${sync.settling}`) : undefined;
  if (gate) return notReady(gate);
  const rendered = prepared();
  const waiting = cluster.watch("owned", rendered.kinds);
  if (waiting) return notReady(waiting);

  // An imported record stands for the provision (or bind) Service Fabrik made: its status block says.
  const action = op.action === "import" ? (s.binding ? "bind" : "provision") : (op.action as StatusAction);
  const judged = statusSection(s, rendered, action);
  if ("pending" in judged) return rendering(s);
  if ("waiting" in judged) return notReady(judged.waiting);
  const at = "at" in applied ? applied.at : "";
  const appliedBy = `${op.action} applied by ${sync.subject} at ${sha7(at)}`;
  if (op.action === "deprovision" || op.action === "unbind") {
    const left = leftovers(s);
    if (left.length > 0) {
      const names = left.slice(0, 3).map((o) => `${o.kind}/${o.metadata?.name}`).join(", ");
      return inProgress(`${appliedBy}; waiting for ${left.length} object(s) to be deleted from cluster ${cluster.entry.id}: ${names}`);
    }
    if (judged.section && judged.section.state !== "succeeded") return fromSection(judged.section);
    return { state: "succeeded", description: judged.section?.description ?? `${appliedBy}; its objects are gone from cluster ${cluster.entry.id}` };
  }
  if (judged.section) return fromSection(judged.section, appliedBy);
  const own = ownHealth(s, sync, index, at);
  if (own !== undefined && "pending" in own) return notReady(gathering(`checking whether its objects are healthy: ${own.pending}`));
  const health = own ?? { healthy: sync.healthy, health: sync.health };
  return health.healthy
    ? { state: "succeeded", description: `${appliedBy}${health.health ? `, ${health.health}` : ""}` }
    : inProgress(`${appliedBy}; waiting for it to report healthy (${health.health ?? "no health reported yet"})`);
}

/** The bind credentials, when the status template says the bind succeeded (from the caches alone). */
export function bindResponse(s: Subject, prepared: Prepared): BindingResult {
  const judged = statusSection(s, prepared, "bind");
  return "section" in judged && judged.section?.state === "succeeded" ? (judged.section.response ?? {}) : {};
}

/** The revision at which the operation's commit is applied, or why it is not known to be yet. */
function appliedGate(s: Subject, sync: SyncObservation, index: AppliedIndex): { at: string } | { waiting: NotReady } {
  const { operation: op } = s;
  const failed = sync.error ? `; the last sync failed: ${sync.error}` : "";
  const revision = sync.appliedRevision;
  const record = { instanceId: s.instance.spec.instanceId, ...(s.binding ? { bindingId: s.binding.spec.bindingId } : {}) };
  if (revision !== undefined) {
    const answer = index.answer(revision, record, op.id);
    if ("pending" in answer) return { waiting: gathering(`checking whether ${sync.subject} applied operation ${op.id}: ${answer.pending}`) };
    if (answer.applied) return { at: revision };
  }
  const own = ownObjectsApplied(s, sync, index);
  if (own === true) return { at: sync.resources!.revision };
  const applied = revision === undefined ? "nothing applied yet" : `applied: ${sha7(revision)}`;
  return { waiting: blocked(`waiting for ${sync.subject} to apply operation ${op.id} (${applied})${own ? `: ${own}` : ""}${failed}`) };
}

/**
 * Argo CD applies every resource of a sync it can: one that fails (an admission webhook, a quota)
 * fails the sync but not the others, and status.resources[] says which match the compared
 * revision. An operation in that revision whose instance has all its objects there Synced is
 * applied, whatever its neighbours' objects do (each instance is judged by its own objects).
 * Undefined: not known (nothing to compare, still reading); a string: what is not synced yet.
 */
function ownObjectsApplied(s: Subject, sync: SyncObservation, index: AppliedIndex): true | string | undefined {
  const resources = sync.resources;
  // Only after a failed sync: otherwise the application's applied revision says it, at no read.
  if (resources === undefined || sync.error === undefined || resources.revision === sync.appliedRevision) return undefined;
  const record = { instanceId: s.instance.spec.instanceId, ...(s.binding ? { bindingId: s.binding.spec.bindingId } : {}) };
  const inRevision = index.answer(resources.revision, record, s.operation.id);
  if ("pending" in inRevision || !inRevision.applied) return undefined;
  const objects = index.objects(resources.revision, s.instance.spec.clusterId, s.instance.spec.instanceId);
  if ("pending" in objects) return undefined;
  const behind = objects.keys.filter((key) => !resources.synced.has(key));
  if (behind.length === 0) return true;
  const names = behind.slice(0, 3).map((key) => key.split("/").filter((part, i) => i !== 2 && part !== "").join("/"));
  return `${names.join(", ")} not synced to ${sha7(resources.revision)}`;
}

/**
 * Argo CD's health of the instance's own objects (those of its directory at the applied
 * revision), when the Application carries it per resource (`controller.resource.health.persist`);
 * undefined: only the application's aggregate, the worst of every instance's, is known.
 */
function ownHealth(s: Subject, sync: SyncObservation, index: AppliedIndex, at: string): { healthy: boolean; health: string } | { pending: string } | undefined {
  const health = sync.resources?.health;
  if (health === undefined) return undefined;
  const objects = index.objects(at, s.instance.spec.clusterId, s.instance.spec.instanceId);
  if ("pending" in objects) return objects;
  const states = objects.keys.map((key) => health.get(key)).filter((h): h is string => h !== undefined);
  const worst = ["Unknown", "Degraded", "Missing", "Progressing", "Suspended"].find((h) => states.includes(h));
  return { healthy: worst === undefined, health: `health of its objects ${worst ?? "Healthy"}` };
}

type Judged = { waiting: NotReady } | { pending: true } | { section?: StatusSection };

function statusSection(s: Subject, prepared: Prepared, action: StatusAction): Judged {
  if (!hasTemplate(s.plan.templates, "status")) return {};
  if (prepared.sources instanceof RenderPending) return { pending: true };
  if (prepared.sources instanceof Error) return { waiting: blocked(`the templates of plan ${s.plan.name} fail: ${prepared.sources.message}`) };
  const namespace = s.instance.metadata.namespace;
  const refs = [...prepared.sources].map(([key, ref]) => ({ key, name: ref.name, kind: { apiVersion: ref.apiVersion, kind: ref.kind, namespace: ref.namespace ?? namespace } }));
  // A source may be the broker's own object (the postgresql) or one the operator made (its Secret).
  const kinds = refs.map((r) => r.kind);
  const waiting = s.cluster.watch("owned", kinds) ?? s.cluster.watch("foreign", kinds);
  if (waiting) return { waiting };
  const live = Object.fromEntries(refs.map((r) => [r.key, s.cluster.get(r.kind, r.name)]));
  try {
    const section = renderStatus(s.plan, action, { ...live, ...values(s) });
    return section ? { section } : {};
  } catch (error) {
    if (error instanceof RenderPending) return { pending: true };
    return { waiting: blocked(`the status template of plan ${s.plan.name} fails: ${error instanceof Error ? error.message : String(error)}`) };
  }
}

function fromSection(section: StatusSection, fallbackDescription?: string): OperationStatus {
  const status: OperationStatus = { state: section.state };
  const description = section.state === "failed" ? (section.error ?? section.description) : (section.description ?? fallbackDescription);
  if (description !== undefined) status.description = description;
  if (section.instanceUsable !== undefined) status.instanceUsable = section.instanceUsable;
  if (section.updateRepeatable !== undefined) status.updateRepeatable = section.updateRepeatable;
  if (section.dashboardUrl !== undefined) status.dashboardUrl = section.dashboardUrl;
  return status;
}

/** The broker's objects of the instance (deprovision) or binding (unbind) still on the cluster. */
function leftovers(s: Subject) {
  const instanceKey = keyOf(s.instance.spec.instanceId);
  if (!s.binding) return s.cluster.ownedBy("instance", instanceKey);
  return s.cluster.ownedBy("binding", keyOf(s.binding.spec.bindingId)).filter((o) => o.metadata?.labels?.[LABEL_INSTANCE] === instanceKey);
}

/**
 * The kinds the plans' `sources` templates read on a cluster, rendered for a stand-in instance
 * and binding in the cluster's namespace: watched from the cluster's start, so that the first
 * bind does not wait for the first list of Secrets (the names differ per instance, the kinds not).
 */
export function sourceKinds(plans: readonly { service: Service; plan: Plan }[], clusterId: string, namespace: string): KindRef[] {
  const kinds = new Map<string, KindRef>();
  for (const { service, plan } of plans) {
    if (!hasTemplate(plan.templates, "sources")) continue;
    const name = "gitops-broker-warm-up";
    const instance = {
      apiVersion: "gitops-broker.io/v1alpha1",
      kind: "ServiceInstance",
      metadata: { name, namespace },
      spec: { instanceId: name, serviceId: service.id, planId: plan.id, clusterId },
      status: { operations: [] },
    } as unknown as InstanceRecord;
    const binding = {
      apiVersion: "gitops-broker.io/v1alpha1",
      kind: "ServiceBinding",
      metadata: { name, namespace },
      spec: { bindingId: name, instanceId: name, serviceId: service.id, planId: plan.id },
      status: { operations: [] },
    } as unknown as BindingRecord;
    try {
      for (const ref of renderSources(plan, values({ service, plan, instance, binding, operation: { id: name, action: "bind", at: "" } })).values()) {
        const kind = { apiVersion: ref.apiVersion, kind: ref.kind, namespace: ref.namespace ?? namespace };
        kinds.set(`${kind.apiVersion} ${kind.kind} ${kind.namespace}`, kind);
      }
    } catch {
      // A template that needs a real record's fields: its kinds are watched on first use.
    }
  }
  return [...kinds.values()];
}
