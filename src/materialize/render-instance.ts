import type { Catalog, ClusterEntry } from "../catalog/index.js";
import { NotFoundError, UnprocessableEntityError } from "../errors/index.js";
import type { Draft } from "../gitwriter/index.js";
import { readBindings, readInstance, type BindingRecord, type InstanceRecord } from "../repo/index.js";
import { lookupPlan } from "./instance-state.js";
import { clearInstanceManifests, writeBindingManifests, writeInstanceManifests, type Rendered } from "./manifests.js";

/**
 * The template the instance's objects were last rendered from: `provision` until an update, bind
 * or unbind came after the latest provision (they render `update`, see writeInstanceManifests).
 * Binding records of an earlier incarnation of the id are older than its provision.
 */
function lastRenderAction(instance: InstanceRecord, bindings: BindingRecord[]): "provision" | "update" {
  const ops = instance.status.operations;
  const provision = [...ops].reverse().find((o) => o.action === "provision");
  if (!provision || ops[ops.length - 1] !== provision) return "update";
  return bindings.some((b) => b.status.operations.some((o) => o.at > provision.at)) ? "update" : "provision";
}

/**
 * Renders a live instance and its live bindings again from their records, as the broker's last
 * operation on it did, with the catalog, registry and overrides given now: the instance's
 * manifest directory is replaced as a whole (stale binding directories go too), but for the
 * encrypted Secrets of sensitive parameters the records name, which cannot be rendered. Used by
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
  const placed = { ...found, instance, bindings, namespace: cluster.namespace, capabilities: cluster.capabilities };

  await clearInstanceManifests(draft, instance, bindings);
  const results = [await writeInstanceManifests(draft, placed, lastRenderAction(instance, all))];
  for (const binding of bindings) results.push(await writeBindingManifests(draft, placed, binding));
  return { overrides: [...new Set(results.flatMap((r) => r.overrides))], problems: results.flatMap((r) => r.problems) };
}
