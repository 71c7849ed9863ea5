import type { Plan, Service } from "../catalog/index.js";
import type { Draft } from "../gitwriter/index.js";
import { hasTemplate, render, type Manifest } from "../render/index.js";
import {
  bindingManifestDir,
  clusterNamespacePath,
  instanceManifestDir,
  keyOf,
  LABEL_BINDING,
  LABEL_INSTANCE,
  LABEL_MANAGED_BY,
  MANAGED_BY,
  namespaceManifest,
  type BindingRecord,
  type InstanceRecord,
} from "../repo/index.js";

/**
 * Turns records into the desired state under `clusters/<id>/`: renders the plan's templates
 * (pure) and replaces the files of the instance (or binding) directory in the draft.
 */


export interface PlacedInstance {
  service: Service;
  plan: Plan;
  instance: InstanceRecord;
  /** Live bindings of the instance after this operation. */
  bindings: BindingRecord[];
  namespace: string;
}

function values(p: PlacedInstance, binding?: BindingRecord) {
  return {
    service: p.service.raw,
    plan: p.plan.raw,
    instance: p.instance as unknown as Record<string, unknown>,
    bindings: p.bindings as unknown as Record<string, unknown>[],
    ...(binding ? { binding: binding as unknown as Record<string, unknown> } : {}),
  };
}

/** Replace the plain files of `dir` (not its subdirectories) by `manifests`. */
async function replaceFiles(draft: Draft, dir: string, manifests: Manifest[]): Promise<void> {
  for (const entry of (await draft.list(dir)) ?? []) {
    if (entry.type === "blob") draft.remove(`${dir}/${entry.name}`);
  }
  for (const m of manifests) draft.write(`${dir}/${m.fileName}`, m.yaml);
}

/** Render the instance's objects (`update` template if the plan has one and this is an update, else `provision`). */
export async function writeInstanceManifests(draft: Draft, p: PlacedInstance, action: "provision" | "update"): Promise<void> {
  const templateAction = action === "update" && hasTemplate(p.plan.templates, "update") ? "update" : "provision";
  const key = keyOf(p.instance.spec.instanceId);
  const manifests = render({
    action: templateAction,
    templates: p.plan.templates,
    values: values(p),
    defaultNamespace: p.namespace,
    labels: { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_INSTANCE]: key },
    planName: p.plan.name,
  });
  await ensureClusterNamespace(draft, p.instance.spec.clusterId, p.namespace);
  await replaceFiles(draft, instanceManifestDir(p.instance.spec.clusterId, p.instance.spec.instanceId), manifests);
}

/** Render the binding's own objects (`bind` template; none when the plan has no bind template). */
export async function writeBindingManifests(draft: Draft, p: PlacedInstance, binding: BindingRecord): Promise<void> {
  const manifests = render({
    action: "bind",
    templates: p.plan.templates,
    values: values(p, binding),
    defaultNamespace: p.namespace,
    labels: {
      [LABEL_MANAGED_BY]: MANAGED_BY,
      [LABEL_INSTANCE]: keyOf(p.instance.spec.instanceId),
      [LABEL_BINDING]: keyOf(binding.spec.bindingId),
    },
    planName: p.plan.name,
  });
  const dir = bindingManifestDir(p.instance.spec.clusterId, p.instance.spec.instanceId, binding.spec.bindingId);
  draft.remove(dir);
  for (const m of manifests) draft.write(`${dir}/${m.fileName}`, m.yaml);
}

export function removeBindingManifests(draft: Draft, instance: InstanceRecord, bindingId: string): void {
  draft.remove(bindingManifestDir(instance.spec.clusterId, instance.spec.instanceId, bindingId));
}

export function removeInstanceManifests(draft: Draft, instance: InstanceRecord): void {
  draft.remove(instanceManifestDir(instance.spec.clusterId, instance.spec.instanceId));
}

/** Every cluster directory holds the Namespace its instances live in (see namespaceManifest). */
async function ensureClusterNamespace(draft: Draft, clusterId: string, namespace: string): Promise<void> {
  const path = clusterNamespacePath(clusterId);
  if ((await draft.oid(path)) !== null) return;
  draft.write(path, namespaceManifest(namespace));
}
