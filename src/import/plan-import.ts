import pMap from "p-map";
import type { Catalog, ClusterEntry, Plan, Service } from "../catalog/index.js";
import { sensitiveParameters } from "../catalog/index.js";
import { BaseError } from "../errors/index.js";
import { tappedDraft, type Draft, type TreeReader } from "../gitwriter/index.js";
import { bindInto, lookupPlan, objectsIn, writeInstanceManifests } from "../materialize/index.js";
import {
  bindingManifestDir,
  byBindingKey,
  instanceManifestDir,
  keyOf,
  readInstance,
  RECORD_API_VERSION,
  writeBinding,
  writeInstance,
  type BindingRecord,
  type InstanceRecord,
  type OperationEntry,
} from "../repo/index.js";
import { overlayDraft } from "../validate/index.js";
import { diffObject, type Difference } from "./diff.js";
import {
  appliedResources,
  bindingIdOf,
  bindingInstanceOf,
  identityKey,
  identityText,
  instanceIdOf,
  sfState,
  specOf,
  type KubeObject,
  type Landscape,
  type ObjectIdentity,
} from "./landscape.js";

/**
 * The import's plan, computed without writing anything: each Service Fabrik instance mapped to
 * the records the broker would have written had it provisioned it (and bound its bindings),
 * rendered by the plan's own templates into an overlay over the repository's tip, and compared
 * with what Service Fabrik applied: the same objects (apiVersion, kind, namespace, name) or the
 * instance is refused; the field differences with the live objects are reported. The edits of an
 * accepted instance are kept to be replayed into a commit; a refused one leaves nothing.
 */

/** One edit of the repository an accepted instance makes: a file written, or a path removed (content null). */
export interface Edit {
  path: string;
  content: string | Uint8Array | null;
}

export interface ObjectDifferences {
  object: string;
  differences: Difference[];
}

export interface PlannedInstance {
  instanceId: string;
  /** SF's `spec.clusterId` and the registry entry it maps to. */
  sfClusterId: string;
  clusterId: string;
  namespace: string;
  service: string;
  plan: string;
  bindingIds: string[];
  edits: Edit[];
  /** Per object Service Fabrik applied, the differences between what the import renders and what is live. */
  differences: ObjectDifferences[];
}

/** An instance (or binding) that is not imported, and why. */
export interface NotImported {
  instanceId: string;
  bindingId?: string;
  sfClusterId?: string;
  plan?: string;
  reason: string;
}

/** The Service Fabrik resources of an instance the repository holds as imported: what the hand-over works on. */
export interface HandOverSubject {
  instanceId: string;
  sfClusterId: string;
  instance: KubeObject;
  bindings: KubeObject[];
}

export interface ImportPlan {
  /** The master's API server. */
  source: string;
  imported: PlannedInstance[];
  /** Would map but does not: unknown plan or cluster, other objects rendered, a render that fails ... */
  refused: NotImported[];
  /** Not importable now: an operation in progress in Service Fabrik, or failed. */
  skipped: NotImported[];
  /** Bindings left out of an imported instance (failed in Service Fabrik). */
  skippedBindings: NotImported[];
  /** Instance ids the repository already holds (a second run, or an interrupted one continued). */
  present: string[];
  /** Instances imported now or before, with their SF resources. */
  handOver: HandOverSubject[];
  /**
   * Where the planning's time went: rendering (records, templates, bindings' patches) and comparing
   * with the live objects; summed over the instances, so above the wall-clock time when several
   * are planned at a time.
   */
  timings: { renderMs: number; diffMs: number };
}

export interface PlanImportInputs {
  landscape: Landscape;
  catalog: Catalog;
  clusters: readonly ClusterEntry[];
  /** The GitOps repository's tip. */
  base: TreeReader;
  /** SF cluster id -> registry cluster id; unmapped ids map to themselves. */
  clusterMap?: Readonly<Record<string, string>>;
  /** The time of the `import` entries. */
  now: () => Date;
  /** Operation ids of the `import` entries. */
  newId: () => string;
  /** Called after each instance is planned (progress). */
  onInstance?: (done: number, total: number) => void;
  /**
   * Instances planned at a time (default 1): their renders run side by side on the module's
   * workers (render's setModuleWorkers). The plan is the same whatever the number: each instance
   * is planned on its own and the results are taken in instance order.
   */
  concurrency?: number;
}

/** A reason an instance is refused, carried through the render. */
class Refusal extends BaseError {
  static override readonly code = "ImportRefused";
}

const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));

export async function planImport(inputs: PlanImportInputs): Promise<ImportPlan> {
  const { landscape } = inputs;
  const plan: ImportPlan = { source: landscape.master, imported: [], refused: [], skipped: [], skippedBindings: [], present: [], handOver: [], timings: { renderMs: 0, diffMs: 0 } };
  const bindingsOf = new Map<string, KubeObject[]>();
  for (const b of landscape.bindings) {
    const id = bindingInstanceOf(b);
    const list = bindingsOf.get(id);
    if (list) list.push(b);
    else bindingsOf.set(id, [b]);
  }
  const instances = [...landscape.instances].sort((a, b) => (instanceIdOf(a) < instanceIdOf(b) ? -1 : instanceIdOf(a) > instanceIdOf(b) ? 1 : 0));
  let done = 0;
  const planned = await pMap(
    instances,
    async (sf) => {
      const one: ImportPlan = { ...plan, imported: [], refused: [], skipped: [], skippedBindings: [], present: [], handOver: [], timings: plan.timings };
      await planOne(inputs, one, sf, bindingsOf.get(instanceIdOf(sf)) ?? []);
      inputs.onInstance?.(++done, instances.length);
      return one;
    },
    { concurrency: Math.max(1, inputs.concurrency ?? 1) },
  );
  for (const one of planned) {
    plan.imported.push(...one.imported);
    plan.refused.push(...one.refused);
    plan.skipped.push(...one.skipped);
    plan.skippedBindings.push(...one.skippedBindings);
    plan.present.push(...one.present);
    plan.handOver.push(...one.handOver);
  }
  return plan;
}

async function planOne(inputs: PlanImportInputs, out: ImportPlan, sf: KubeObject, sfBindings: KubeObject[]): Promise<void> {
  const instanceId = instanceIdOf(sf);
  const spec = specOf(sf);
  const sfClusterId = typeof spec.clusterId === "string" ? spec.clusterId : "";
  const not = (reason: string): NotImported => ({ instanceId, ...(sfClusterId ? { sfClusterId } : {}), ...(typeof spec.planId === "string" ? { plan: spec.planId } : {}), reason });

  const existing = await readInstance(inputs.base, instanceId);
  if (existing && !existing.status.deleted) {
    out.present.push(instanceId);
    if (existing.status.operations.some((o) => o.action === "import")) {
      const live = sfBindings.filter((b) => sfState(b).state === "succeeded");
      out.handOver.push({ instanceId, sfClusterId, instance: sf, bindings: live });
    }
    return;
  }
  const state = sfState(sf);
  if (state.state === "failed") return void out.skipped.push(not(`failed in Service Fabrik (status.state failed${errorOf(sf)})`));
  if (state.state === "busy") return void out.skipped.push(not(`an operation is in progress in Service Fabrik (status.state ${state.text})`));
  const bindings: KubeObject[] = [];
  for (const b of sfBindings) {
    const s = sfState(b);
    if (s.state === "busy") return void out.skipped.push(not(`binding ${bindingIdOf(b)} has an operation in progress in Service Fabrik (status.state ${s.text})`));
    if (s.state === "failed") out.skippedBindings.push({ ...not(`failed in Service Fabrik (status.state failed${errorOf(b)}): not a binding to import`), bindingId: bindingIdOf(b) });
    else bindings.push(b);
  }
  if (sfClusterId === "") return void out.refused.push(not("spec.clusterId is empty: Service Fabrik never scheduled it"));
  const clusterId = inputs.clusterMap?.[sfClusterId] ?? sfClusterId;
  const cluster = inputs.clusters.find((c) => c.id === clusterId);
  if (!cluster) return void out.refused.push(not(`cluster ${clusterId}${clusterId === sfClusterId ? "" : ` (spec.clusterId ${sfClusterId})`} is not in the cluster registry`));
  const unreadable = inputs.landscape.unreadable.get(sfClusterId);
  if (unreadable !== undefined) return void out.refused.push(not(`its cluster could not be read: ${unreadable}`));
  let found: { service: Service; plan: Plan };
  try {
    found = lookupPlan(inputs.catalog, str(spec.serviceId) ?? "", str(spec.planId) ?? "");
  } catch (e) {
    return void out.refused.push(not(`${errorText(e)} (the catalog must hold the SFService and SFPlan it was provisioned with)`));
  }
  try {
    const planned = await renderOne(inputs, { sf, bindings, instanceId, sfClusterId, cluster, ...found }, out.timings);
    out.imported.push(planned);
    out.handOver.push({ instanceId, sfClusterId, instance: sf, bindings });
  } catch (e) {
    if (e instanceof Refusal) out.refused.push({ ...not(e.message), plan: found.plan.name });
    else out.refused.push({ ...not(`rendering failed: ${errorText(e)}`), plan: found.plan.name });
  }
}

function errorOf(o: KubeObject): string {
  const error = (o.status as { error?: unknown } | undefined)?.error;
  return typeof error === "string" && error !== "" ? `: ${error}` : "";
}

interface Subject {
  sf: KubeObject;
  bindings: KubeObject[];
  instanceId: string;
  sfClusterId: string;
  cluster: ClusterEntry;
  service: Service;
  plan: Plan;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** The instance record the broker would have written for the provision Service Fabrik got. */
export function instanceRecordOf(sf: KubeObject, clusterId: string, clusterNamespace: string, plan: Plan, op: OperationEntry<"import">): InstanceRecord {
  const spec = specOf(sf);
  const instanceId = instanceIdOf(sf);
  const namespace = sf.metadata.namespace ?? clusterNamespace;
  const context = isObject(spec.context) ? spec.context : undefined;
  const maintenance = isObject(spec.maintenanceInfo) && typeof spec.maintenanceInfo.version === "string" ? spec.maintenanceInfo : undefined;
  return {
    apiVersion: RECORD_API_VERSION,
    kind: "ServiceInstance",
    metadata: { name: keyOf(instanceId), namespace },
    spec: {
      instanceId,
      serviceId: String(spec.serviceId),
      planId: plan.id,
      clusterId,
      ...(namespace === clusterNamespace ? {} : { namespace }),
      ...(str(spec.organizationGuid) ?? str(context?.organization_guid) ? { organizationGuid: str(spec.organizationGuid) ?? String(context?.organization_guid) } : {}),
      ...(str(spec.spaceGuid) ?? str(context?.space_guid) ? { spaceGuid: str(spec.spaceGuid) ?? String(context?.space_guid) } : {}),
      ...(context ? { context } : {}),
      ...(isObject(spec.parameters) ? { parameters: spec.parameters } : {}),
      ...(maintenance ? { maintenanceInfo: { version: String(maintenance.version), ...(typeof maintenance.description === "string" ? { description: maintenance.description } : {}) } } : {}),
    },
    status: { operations: [op] },
  };
}

/** The binding record the broker would have written for the bind Service Fabrik got. */
export function bindingRecordOf(sf: KubeObject, instance: InstanceRecord, op: OperationEntry<"import">): BindingRecord {
  const spec = specOf(sf);
  const bindResource = isObject(spec.bindResource) ? spec.bindResource : undefined;
  const appGuid = str(spec.appGuid) ?? str(bindResource?.app_guid);
  return {
    apiVersion: RECORD_API_VERSION,
    kind: "ServiceBinding",
    metadata: { name: keyOf(bindingIdOf(sf)), namespace: instance.metadata.namespace },
    spec: {
      bindingId: bindingIdOf(sf),
      instanceId: instance.spec.instanceId,
      serviceId: instance.spec.serviceId,
      planId: instance.spec.planId,
      ...(isObject(spec.context) ? { context: spec.context } : {}),
      ...(isObject(spec.parameters) ? { parameters: spec.parameters } : {}),
      ...(bindResource ? { bindResource } : {}),
      ...(appGuid ? { appGuid } : {}),
    },
    status: { operations: [op] },
  };
}

/** A Draft that keeps every edit made through it, in order, to replay elsewhere. */
function recording(draft: Draft): { draft: Draft; edits: Edit[] } {
  const edits: Edit[] = [];
  return { draft: tappedDraft(draft, (path, content) => edits.push({ path, content })), edits };
}

async function renderOne(inputs: PlanImportInputs, s: Subject, timings: ImportPlan["timings"]): Promise<PlannedInstance> {
  const started = performance.now();
  const at = inputs.now().toISOString();
  const op = (): OperationEntry<"import"> => ({ id: inputs.newId(), action: "import", at, planId: s.plan.id });
  const record = instanceRecordOf(s.sf, s.cluster.id, s.cluster.namespace, s.plan, op());
  const secret = [
    ...sensitiveParameters(s.plan, "service_instance.create", record.spec.parameters ?? {}).map((p) => `instance parameter ${p.path}`),
    ...s.bindings.flatMap((b) => sensitiveParameters(s.plan, "service_binding.create", specOf(b).parameters ?? {}).map((p) => `binding ${bindingIdOf(b)} parameter ${p.path}`)),
  ];
  if (secret.length > 0) {
    throw new Refusal(`${secret.join(", ")} marked sensitive by plan ${s.plan.name} (ADR 0007): it would become an encrypted Secret the cluster does not have; import it without, or provision it anew`);
  }
  const bindings = s.bindings.map((b) => bindingRecordOf(b, record, op())).sort(byBindingKey);
  const { draft, edits } = recording(overlayDraft(inputs.base));
  const placed = { service: s.service, plan: s.plan, instance: record, bindings: [] as BindingRecord[], namespace: record.metadata.namespace, capabilities: s.cluster.capabilities };
  if (bindings.length === 0) await writeInstanceManifests(draft, placed, "provision");
  const written: BindingRecord[] = [];
  for (const binding of bindings) {
    // Each binding's bind template sees the instance's object with the bindings before it, as it
    // saw the live object in Service Fabrik; its change becomes the binding's patch (ADR 0017).
    const { binding: bound } = await bindInto(draft, { ...placed, bindings: written }, binding);
    written.push(bound);
  }
  writeInstance(draft, record);
  for (const b of written) writeBinding(draft, b);

  const rendered = [
    ...(await objectsIn(draft, instanceManifestDir(s.cluster.id, s.instanceId))),
    ...(await Promise.all(written.map((b) => objectsIn(draft, bindingManifestDir(s.cluster.id, s.instanceId, b.spec.bindingId))))).flat(),
  ].map((o) => ({ identity: { apiVersion: o.apiVersion, kind: o.kind, name: o.name, ...(o.namespace ? { namespace: o.namespace } : {}) }, object: o.object }));
  const rendering = performance.now();
  timings.renderMs += rendering - started;
  try {
    return compare(inputs, s, { record, written, edits, rendered });
  } finally {
    timings.diffMs += performance.now() - rendering;
  }
}

/** Refuses an instance whose rendering names other objects than Service Fabrik applied, or objects not live; else its differences. */
function compare(
  inputs: PlanImportInputs,
  s: Subject,
  r: { record: InstanceRecord; written: BindingRecord[]; edits: Edit[]; rendered: { identity: ObjectIdentity; object: Record<string, unknown> }[] },
): PlannedInstance {
  const { record, written, edits, rendered } = r;
  const applied = new Map<string, ObjectIdentity>();
  for (const ref of [...appliedResources(s.sf), ...s.bindings.flatMap(appliedResources)]) applied.set(identityKey(ref), ref);
  const renderedKeys = new Set(rendered.map((r) => identityKey(r.identity)));
  const extra = rendered.filter((r) => !applied.has(identityKey(r.identity))).map((r) => identityText(r.identity));
  const missing = [...applied.values()].filter((ref) => !renderedKeys.has(identityKey(ref))).map(identityText);
  if (extra.length > 0 || missing.length > 0) {
    throw new Refusal(
      [
        ...(extra.length > 0 ? [`renders objects Service Fabrik did not apply: ${extra.join(", ")}`] : []),
        ...(missing.length > 0 ? [`does not render objects Service Fabrik applied: ${missing.join(", ")}`] : []),
      ].join("; ") + " (Argo CD or Flux would create or delete them)",
    );
  }
  const live = inputs.landscape.live.get(s.sfClusterId);
  const absent = rendered.filter((r) => !live?.has(identityKey(r.identity))).map((r) => identityText(r.identity));
  if (absent.length > 0) throw new Refusal(`its objects are not on cluster ${s.sfClusterId}: ${absent.join(", ")} (the sync would create them)`);
  const differences = rendered
    .map((r) => ({ object: identityText(r.identity), differences: diffObject(r.object, live!.get(identityKey(r.identity))!) }))
    .filter((d) => d.differences.length > 0);
  return {
    instanceId: s.instanceId,
    sfClusterId: s.sfClusterId,
    clusterId: s.cluster.id,
    namespace: record.metadata.namespace,
    service: s.service.name,
    plan: s.plan.name,
    bindingIds: written.map((b) => b.spec.bindingId),
    edits,
    differences,
  };
}
