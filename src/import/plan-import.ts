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
  newBindingRecord,
  newInstanceRecord,
  readBinding,
  readInstance,
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
  matchBindings,
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
  /** Its apiVersion and kind. */
  type: string;
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

/** A binding the repository already holds as imported. */
export interface PresentBinding {
  instanceId: string;
  bindingId: string;
}

/** The Service Fabrik resources of an instance the repository holds as imported: what the hand-over works on. */
export interface HandOverSubject {
  instanceId: string;
  sfClusterId: string;
  instance: KubeObject;
  bindings: KubeObject[];
}

/**
 * Where every SFServiceInstance and SFServiceBinding the master listed went: each in exactly one
 * of imported (PlannedInstance, its bindingIds), present, refused or skipped, with its reason
 * (accounting.ts checks that they add up to what was listed).
 */
export interface ImportPlan {
  /** The master's API server. */
  source: string;
  imported: PlannedInstance[];
  /** Would map but does not: unknown plan or cluster, other objects rendered, a render that fails ... */
  refused: NotImported[];
  /** Not importable now: an operation in progress in Service Fabrik, or failed. */
  skipped: NotImported[];
  /** Instance ids the repository already holds as imported (a second run, or an interrupted one continued). */
  present: string[];
  /** The bindings not imported with an instance of `imported`. */
  bindings: {
    present: PresentBinding[];
    /** Their instance refused, their instance not on the master, or bound in Service Fabrik after their instance was imported. */
    refused: NotImported[];
    /** Failed in Service Fabrik, an operation in progress, or their instance skipped. */
    skipped: NotImported[];
  };
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
  /**
   * Whether the accepted instances keep their edits (default true). A dry run replays none: 10,000
   * instances' records and manifests would be held for nothing. Without, `edits` is [].
   */
  keepEdits?: boolean;
}

/** A reason an instance is refused, carried through the render. */
class Refusal extends BaseError {
  static override readonly code = "ImportRefused";
}

const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));

const emptyPlan = (source: string, timings: ImportPlan["timings"]): ImportPlan => ({
  source,
  imported: [],
  refused: [],
  skipped: [],
  present: [],
  bindings: { present: [], refused: [], skipped: [] },
  handOver: [],
  timings,
});

export async function planImport(inputs: PlanImportInputs): Promise<ImportPlan> {
  const { landscape } = inputs;
  const plan = emptyPlan(landscape.master, { renderMs: 0, diffMs: 0 });
  const { byInstance, orphans } = matchBindings(landscape.instances, landscape.bindings);
  for (const b of orphans) {
    plan.bindings.refused.push({ instanceId: bindingInstanceOf(b), bindingId: bindingIdOf(b), reason: `its instance ${bindingInstanceOf(b) || "(none named)"} is not among the master's SFServiceInstances` });
  }
  const instances = [...landscape.instances].sort((a, b) => (instanceIdOf(a) < instanceIdOf(b) ? -1 : instanceIdOf(a) > instanceIdOf(b) ? 1 : 0));
  let done = 0;
  const planned = await pMap(
    instances,
    async (sf) => {
      // Each instance into a plan of its own, taken in instance order below: the same plan at any concurrency.
      const one = emptyPlan(plan.source, plan.timings);
      await planOne(inputs, one, sf, byInstance.get(sf) ?? []);
      inputs.onInstance?.(++done, instances.length);
      return one;
    },
    { concurrency: Math.max(1, inputs.concurrency ?? 1) },
  );
  for (const one of planned) {
    plan.imported.push(...one.imported);
    plan.refused.push(...one.refused);
    plan.skipped.push(...one.skipped);
    plan.present.push(...one.present);
    plan.bindings.present.push(...one.bindings.present);
    plan.bindings.refused.push(...one.bindings.refused);
    plan.bindings.skipped.push(...one.bindings.skipped);
    plan.handOver.push(...one.handOver);
  }
  return plan;
}

/** One SFServiceInstance: who it is, and a NotImported of it (or of one of its bindings) with a reason. */
interface Subjected {
  sf: KubeObject;
  instanceId: string;
  sfClusterId: string;
  not(reason: string, binding?: KubeObject): NotImported;
}

function subjectOf(sf: KubeObject): Subjected {
  const instanceId = instanceIdOf(sf);
  const spec = specOf(sf);
  const sfClusterId = typeof spec.clusterId === "string" ? spec.clusterId : "";
  const not = (reason: string, binding?: KubeObject): NotImported => ({
    instanceId,
    ...(binding ? { bindingId: bindingIdOf(binding) } : {}),
    ...(sfClusterId ? { sfClusterId } : {}),
    ...(typeof spec.planId === "string" ? { plan: spec.planId } : {}),
    reason,
  });
  return { sf, instanceId, sfClusterId, not };
}

const inProgress = (o: KubeObject) => `an operation is in progress in Service Fabrik (status.state ${sfState(o).text})`;
const failedBinding = (b: KubeObject) => `failed in Service Fabrik (status.state failed${errorOf(b)}): not a binding to import`;

async function planOne(inputs: PlanImportInputs, out: ImportPlan, sf: KubeObject, sfBindings: KubeObject[]): Promise<void> {
  const s = subjectOf(sf);
  const existing = await readInstance(inputs.base, s.instanceId);
  // Imported before (and maybe deprovisioned through the broker since): never imported again.
  if (existing && (!existing.status.deleted || wasImported(existing))) return planPresent(inputs, out, s, existing, sfBindings);
  // A failed binding is left out of its instance; one in progress keeps the instance out.
  for (const b of sfBindings.filter((b) => sfState(b).state === "failed")) out.bindings.skipped.push(s.not(failedBinding(b), b));
  const bindings = sfBindings.filter((b) => sfState(b).state !== "failed");
  const verdict = await importable(inputs, out, s, bindings);
  if ("planned" in verdict) {
    out.imported.push(verdict.planned);
    out.handOver.push({ instanceId: s.instanceId, sfClusterId: s.sfClusterId, instance: sf, bindings });
    return;
  }
  const not = { ...s.not(verdict.reason), ...(verdict.plan ? { plan: verdict.plan } : {}) };
  (verdict.skip ? out.skipped : out.refused).push(not);
  for (const b of bindings) {
    if (sfState(b).state === "busy") out.bindings.skipped.push(s.not(inProgress(b), b));
    else (verdict.skip ? out.bindings.skipped : out.bindings.refused).push(s.not(`its instance ${s.instanceId} is ${verdict.skip ? "skipped" : "refused"}`, b));
  }
}

const wasImported = (record: { status: { operations: { action: string }[] } }) => record.status.operations.some((o) => o.action === "import");

/**
 * An instance the repository holds: already imported (its bindings too, or not; unbound or
 * deprovisioned through the broker since counts as imported), or provisioned through the broker.
 */
async function planPresent(inputs: PlanImportInputs, out: ImportPlan, s: Subjected, existing: InstanceRecord, sfBindings: KubeObject[]): Promise<void> {
  if (!wasImported(existing)) {
    out.refused.push(s.not("the GitOps repository holds an instance with this id that was not imported (provisioned through the broker)"));
    for (const b of sfBindings) out.bindings.refused.push(s.not(`its instance ${s.instanceId} is refused`, b));
    return;
  }
  out.present.push(s.instanceId);
  const handed: KubeObject[] = [];
  for (const b of sfBindings) {
    const state = sfState(b).state;
    if (state === "failed") out.bindings.skipped.push(s.not(failedBinding(b), b));
    else if (state === "busy") out.bindings.skipped.push(s.not(inProgress(b), b));
    else {
      const record = await readBinding(inputs.base, s.instanceId, bindingIdOf(b));
      if (record && wasImported(record)) {
        out.bindings.present.push({ instanceId: s.instanceId, bindingId: bindingIdOf(b) });
        handed.push(b);
      } else {
        out.bindings.refused.push(s.not("not in the GitOps repository though its instance is: bound in Service Fabrik after the instance was imported (bind it again through the broker)", b));
      }
    }
  }
  out.handOver.push({ instanceId: s.instanceId, sfClusterId: s.sfClusterId, instance: s.sf, bindings: handed });
}

type Verdict = { planned: PlannedInstance } | { skip: boolean; reason: string; plan?: string };

async function importable(inputs: PlanImportInputs, out: ImportPlan, s: Subjected, bindings: KubeObject[]): Promise<Verdict> {
  const { sf, sfClusterId } = s;
  const spec = specOf(sf);
  const state = sfState(sf);
  if (state.state === "failed") return { skip: true, reason: `failed in Service Fabrik (status.state failed${errorOf(sf)})` };
  if (state.state === "busy") return { skip: true, reason: inProgress(sf) };
  const busy = bindings.find((b) => sfState(b).state === "busy");
  if (busy) return { skip: true, reason: `binding ${bindingIdOf(busy)} has an operation in progress in Service Fabrik (status.state ${sfState(busy).text})` };
  if (sfClusterId === "") return { skip: false, reason: "spec.clusterId is empty: Service Fabrik never scheduled it" };
  const clusterId = inputs.clusterMap?.[sfClusterId] ?? sfClusterId;
  const cluster = inputs.clusters.find((c) => c.id === clusterId);
  if (!cluster) return { skip: false, reason: `cluster ${clusterId}${clusterId === sfClusterId ? "" : ` (spec.clusterId ${sfClusterId})`} is not in the cluster registry` };
  const unreadable = inputs.landscape.unreadable.get(sfClusterId);
  if (unreadable !== undefined) return { skip: false, reason: `its cluster could not be read: ${unreadable}` };
  let found: { service: Service; plan: Plan };
  try {
    found = lookupPlan(inputs.catalog, str(spec.serviceId) ?? "", str(spec.planId) ?? "");
  } catch (e) {
    return { skip: false, reason: `${errorText(e)} (the catalog must hold the SFService and SFPlan it was provisioned with)` };
  }
  try {
    return { planned: await renderOne(inputs, { sf, bindings, instanceId: s.instanceId, sfClusterId, cluster, ...found }, out.timings) };
  } catch (e) {
    return { skip: false, reason: e instanceof Refusal ? e.message : `rendering failed: ${errorText(e)}`, plan: found.plan.name };
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

/** The instance record the broker would have written for the provision Service Fabrik got (the broker's constructor). */
export function instanceRecordOf(sf: KubeObject, clusterId: string, clusterNamespace: string, plan: Plan, op: OperationEntry<"import">): InstanceRecord {
  const spec = specOf(sf);
  const namespace = sf.metadata.namespace ?? clusterNamespace;
  const context = isObject(spec.context) ? spec.context : undefined;
  const maintenance = isObject(spec.maintenanceInfo) && typeof spec.maintenanceInfo.version === "string" ? spec.maintenanceInfo : undefined;
  return newInstanceRecord(
    {
      instanceId: instanceIdOf(sf),
      serviceId: String(spec.serviceId),
      planId: plan.id,
      clusterId,
      namespace,
      ownNamespace: namespace === clusterNamespace ? undefined : namespace,
      organizationGuid: str(spec.organizationGuid) ?? str(context?.organization_guid),
      spaceGuid: str(spec.spaceGuid) ?? str(context?.space_guid),
      context,
      parameters: isObject(spec.parameters) ? spec.parameters : undefined,
      maintenanceInfo: maintenance && { version: String(maintenance.version), ...(typeof maintenance.description === "string" ? { description: maintenance.description } : {}) },
    },
    op,
  );
}

/** The binding record the broker would have written for the bind Service Fabrik got (the broker's constructor). */
export function bindingRecordOf(sf: KubeObject, instance: InstanceRecord, op: OperationEntry<"import">): BindingRecord {
  const spec = specOf(sf);
  const bindResource = isObject(spec.bindResource) ? spec.bindResource : undefined;
  return newBindingRecord(
    {
      bindingId: bindingIdOf(sf),
      instanceId: instance.spec.instanceId,
      serviceId: instance.spec.serviceId,
      planId: instance.spec.planId,
      namespace: instance.metadata.namespace,
      context: isObject(spec.context) ? spec.context : undefined,
      parameters: isObject(spec.parameters) ? spec.parameters : undefined,
      bindResource,
      appGuid: str(spec.appGuid) ?? str(bindResource?.app_guid),
    },
    op,
  );
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
  const differing = rendered
    .map((r) => ({ object: identityText(r.identity), type: `${r.identity.apiVersion} ${r.identity.kind}`, differences: diffObject(r.object, live!.get(identityKey(r.identity))!) }))
    .filter((d) => d.differences.length > 0);
  // A copy of their own, as JSON (what differenceText prints): their names and values are slices of
  // the rendered YAML and parts of the live objects, and would keep both whole until the end of the run.
  const differences = JSON.parse(JSON.stringify(differing)) as ObjectDifferences[];
  return {
    instanceId: s.instanceId,
    sfClusterId: s.sfClusterId,
    clusterId: s.cluster.id,
    namespace: record.metadata.namespace,
    service: s.service.name,
    plan: s.plan.name,
    bindingIds: written.map((b) => b.spec.bindingId),
    edits: inputs.keepEdits === false ? [] : edits,
    differences,
  };
}
