import type { Catalog, ClusterEntry } from "../catalog/index.js";
import { NotFoundError, UnprocessableEntityError } from "../errors/index.js";
import type { Draft } from "../gitwriter/index.js";
import {
  bindingManifestDir,
  byBindingKey,
  instanceManifestDir,
  instanceNamespace,
  readBindings,
  readInstance,
  writeBinding,
  type BindingRecord,
  type InstanceRecord,
} from "../repo/index.js";
import type { CommittedObject } from "./binding-patches.js";
import { lookupPlan } from "./instance-state.js";
import { clearInstanceManifests, objectsIn, writeBindingManifests, writeInstanceManifests, type Rendered } from "./manifests.js";

/**
 * The template the instance's objects were last rendered from: `provision` until an update, bind
 * or unbind came after the latest provision (they render `update`, see writeInstanceManifests).
 * Binding records of an earlier incarnation of the id are older than its provision.
 */
function lastRenderAction(instance: InstanceRecord, bindings: BindingRecord[]): "provision" | "update" {
  const ops = instance.status.operations;
  // An import stands for the provision Service Fabrik rendered (it had no update template).
  const provision = [...ops].reverse().find((o) => o.action === "provision" || o.action === "import");
  if (!provision || ops[ops.length - 1] !== provision) return "update";
  return bindings.some((b) => b.status.operations.some((o) => o.at > provision.at)) ? "update" : "provision";
}

/**
 * Renders a live instance and its live bindings again from their records, as the broker's last
 * operation on it did, with the catalog, registry and overrides given now: the instance's
 * manifest directory is replaced as a whole (stale binding directories go too), but for the
 * encrypted Secrets of sensitive parameters the records name, which cannot be rendered; binding
 * records made before ADR 0017 get the patch their bind template makes. Used by
 * `validate`'s drift check; reconciliation may use it as well. Throws NotFoundError for an
 * instance that is not live, UnprocessableEntityError when its plan or cluster is gone, RenderError.
 */
export async function renderInstanceInto(
  draft: Draft,
  view: { catalog: Catalog; clusters: readonly ClusterEntry[] },
  instanceId: string,
): Promise<Rendered> {
  const instance = await readInstance(draft, instanceId);
  if (!instance || instance.status.deleted) throw new NotFoundError(`instance ${instanceId} does not exist`);
  const cluster = view.clusters.find((c) => c.id === instance.spec.clusterId);
  if (!cluster) {
    throw new UnprocessableEntityError(`instance ${instanceId} is placed on cluster ${instance.spec.clusterId}, which is not in the cluster registry`);
  }
  let found: ReturnType<typeof lookupPlan>;
  try {
    found = lookupPlan(view.catalog, instance.spec.serviceId, instance.spec.planId);
  } catch (e) {
    throw new UnprocessableEntityError(`instance ${instanceId} uses plan ${instance.spec.planId}, which is not in the catalog`, { cause: e });
  }
  const all = await readBindings(draft, instanceId);
  const bindings = all.filter((b) => !b.status.deleted);
  const placed = { ...found, instance, bindings, namespace: instanceNamespace(instance, cluster), capabilities: cluster.capabilities };

  const legacy = await legacyBindingObjects(draft, instance, bindings);
  await clearInstanceManifests(draft, instance, bindings);
  const action = lastRenderAction(instance, all);
  const results = [await writeInstanceManifests(draft, placed, action)];
  const owned = new Set((await objectsIn(draft, instanceManifestDir(instance.spec.clusterId, instance.spec.instanceId))).map(identity));
  const migrated: BindingRecord[] = [];
  for (const binding of bindings) {
    const { instancePatches, ...rendered } = await writeBindingManifests(draft, placed, binding);
    results.push(rendered);
    const copied = (legacy.get(binding.spec.bindingId) ?? []).some((o) => owned.has(identity(o)));
    if (copied && instancePatches.length > 0) migrated.push({ ...binding, spec: { ...binding.spec, instancePatches } });
  }
  if (migrated.length > 0) {
    for (const binding of migrated) writeBinding(draft, binding);
    const ids = new Set(migrated.map((b) => b.spec.bindingId));
    placed.bindings = [...bindings.filter((b) => !ids.has(b.spec.bindingId)), ...migrated].sort(byBindingKey);
    results[0] = await writeInstanceManifests(draft, placed, action);
  }
  return { overrides: [...new Set(results.flatMap((r) => r.overrides))], problems: results.flatMap((r) => r.problems) };
}

/**
 * Bindings made before ADR 0017 have no `instancePatches` in their record, and a second copy of
 * one of the instance's objects committed under their directory (what their bind template
 * changed): their directories' objects, read before the render replaces them. A binding whose
 * directory holds a copy of an object the instance renders gets its patch, computed against the
 * instance's objects as rendered now (the bind template sees the object without its change), and
 * recorded: the copy goes, the change stays.
 */
async function legacyBindingObjects(draft: Draft, instance: InstanceRecord, bindings: readonly BindingRecord[]): Promise<Map<string, CommittedObject[]>> {
  const { clusterId, instanceId } = instance.spec;
  const out = new Map<string, CommittedObject[]>();
  for (const b of bindings) {
    if (b.spec.instancePatches === undefined) out.set(b.spec.bindingId, await objectsIn(draft, bindingManifestDir(clusterId, instanceId, b.spec.bindingId)));
  }
  return out;
}

const identity = (o: CommittedObject) => JSON.stringify([o.apiVersion, o.kind, o.namespace ?? "", o.name]);
