import type { Plan, Service } from "../catalog/index.js";
import { formatProblem, RenderError, type Problem } from "../errors/index.js";
import type { Draft } from "../gitwriter/index.js";
import { parse } from "yaml";
import { hasTemplate, render, renderText, type Manifest, type RenderCapabilities } from "../render/index.js";
import {
  bindingManifestDir,
  bindingRecordPath,
  byBindingKey,
  clusterNamespacePath,
  instanceManifestDir,
  keyOf,
  LABEL_BINDING,
  LABEL_INSTANCE,
  LABEL_MANAGED_BY,
  MANAGED_BY,
  namespaceManifest,
  readOverrides,
  sensitiveSecretPath,
  type BindingRecord,
  type InstancePatch,
  type InstanceRecord,
  type SensitiveParameterRefs,
} from "../repo/index.js";
import { bindingPatches, splitBindOutput, type CommittedObject } from "./binding-patches.js";
import { applyOverrides } from "./overrides.js";

/**
 * Turns records into the desired state under `clusters/<id>/`: renders the plan's templates
 * (pure), applies the instance's manual overrides (`overrides/<key>/`, read from the draft) and
 * replaces the files of the instance (or binding) directory in the draft.
 */

/** What a render did beyond the templates: the overrides it applied and those it could not. */
export interface Rendered {
  /** Override files applied (repo paths), for the commit's `Overrides` trailer. */
  overrides: string[];
  /** Overrides left out (malformed, target not rendered, Secret data ...): logged, reported by `validate`. */
  problems: Problem[];
}

export interface PlacedInstance {
  service: Service;
  plan: Plan;
  instance: InstanceRecord;
  /** Live bindings of the instance after this operation. */
  bindings: BindingRecord[];
  /** The namespace the instance's objects live in (instanceNamespace: its own, else its cluster's). */
  namespace: string;
  /** The cluster's registry entry's `.Capabilities` for helm templates; undefined: Helm's defaults. */
  capabilities: RenderCapabilities | undefined;
}

/**
 * The `sensitive` value of a template: per Secret key (`adminPassword`, `users.0.password`), the
 * encrypted Secret holding it, for `secretKeyRef`s: `{{sensitive.adminPassword.name}}`,
 * `{{sensitive.[users.0.password].key}}`. ADR 0007.
 */
function sensitiveRefs(refs: SensitiveParameterRefs | undefined): Record<string, { name: string; key: string }> {
  return Object.fromEntries(Object.entries(refs ?? {}).map(([key, name]) => [key, { name, key }]));
}

const caps = (p: PlacedInstance): { capabilities?: RenderCapabilities } => (p.capabilities === undefined ? {} : { capabilities: p.capabilities });

function values(p: PlacedInstance, binding?: BindingRecord) {
  return {
    service: p.service.raw,
    plan: p.plan.raw,
    instance: p.instance as unknown as Record<string, unknown>,
    bindings: p.bindings as unknown as Record<string, unknown>[],
    ...(binding ? { binding: binding as unknown as Record<string, unknown> } : {}),
    // The bind template sees the binding's sensitive parameters, the others the instance's.
    sensitive: sensitiveRefs((binding ?? p.instance).spec.sensitiveParameters),
  };
}

/**
 * Replace the plain files of `dir` by `manifests`. Subdirectories stay: `sensitive/` holds
 * encrypted Secrets the broker could not write again (it cannot decrypt them).
 */
async function replaceFiles(draft: Draft, dir: string, manifests: Manifest[]): Promise<void> {
  for (const entry of (await draft.list(dir)) ?? []) {
    if (entry.type === "blob") draft.remove(`${dir}/${entry.name}`);
  }
  for (const m of manifests) draft.write(`${dir}/${m.fileName}`, m.yaml);
}

/**
 * Render the instance's objects (`update` template if the plan has one and this is an update,
 * else `provision`) with its overrides that name no binding, then the changes its live bindings'
 * bind templates made to them (ADR 0017).
 */
export async function writeInstanceManifests(draft: Draft, p: PlacedInstance, action: "provision" | "update"): Promise<Rendered> {
  const templateAction = action === "update" && hasTemplate(p.plan.templates, "update") ? "update" : "provision";
  const instanceId = p.instance.spec.instanceId;
  const defaults = { defaultNamespace: p.namespace, labels: { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_INSTANCE]: keyOf(instanceId) } };
  const rendered = await render({ action: templateAction, templates: p.plan.templates, values: values(p), ...defaults, planName: p.plan.name, ...caps(p) });
  const { overrides, problems } = await readOverrides(draft, instanceId);
  const own = overrides.filter((o) => o.binding === undefined);
  const scope = `instance ${instanceId}`;
  const out = applyOverrides(rendered, own, defaults, scope);
  const bound = applyOverrides(out.manifests, bindingPatches(p.bindings, p.namespace), defaults, scope);
  // An instance in a namespace of its own (imported from Service Fabrik, which made it) leaves the
  // cluster's Namespace as it is: committing one could create a Namespace nobody uses.
  if (p.instance.spec.namespace === undefined) await ensureClusterNamespace(draft, p.instance.spec.clusterId, p.namespace);
  await replaceFiles(draft, instanceManifestDir(p.instance.spec.clusterId, instanceId), bound.manifests);
  return { overrides: out.applied, problems: [...problems, ...out.problems, ...bound.problems] };
}

/**
 * Render the binding's own objects (`bind` template; none when the plan has no bind template)
 * with the instance's overrides that name this binding. Objects of the bind template that are
 * one of the instance's objects as committed are not written again (a second copy of an object
 * in Git): they come back as `instancePatches`, their change from the committed object. Only a
 * bind keeps them (bindInto); later renders compose the patches the record holds, since a bind
 * template reading an object that already carries its change changes nothing. Malformed override
 * files are reported by the instance's render, not again here.
 */
export async function writeBindingManifests(draft: Draft, p: PlacedInstance, binding: BindingRecord): Promise<Rendered & { instancePatches: InstancePatch[] }> {
  const { instanceId } = p.instance.spec;
  const bindingKey = keyOf(binding.spec.bindingId);
  const defaults = {
    defaultNamespace: p.namespace,
    labels: { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_INSTANCE]: keyOf(instanceId), [LABEL_BINDING]: bindingKey },
  };
  const committed = await committedObjects(draft, p);
  const bindValues = { ...(await committedSources(p, binding, committed)), ...values(p, binding) };
  const rendered = await render({ action: "bind", templates: p.plan.templates, values: bindValues, ...defaults, planName: p.plan.name, ...caps(p) });
  const scope = `binding ${binding.spec.bindingId} of instance ${instanceId}`;
  const split = splitBindOutput(rendered, committed, p.namespace, `plan ${p.plan.name}: template bind of ${scope}`);
  const { overrides } = await readOverrides(draft, instanceId);
  const own = overrides.filter((o) => o.binding !== undefined && keyOf(o.binding) === bindingKey);
  const out = applyOverrides(split.own, own, defaults, scope);
  await replaceFiles(draft, bindingManifestDir(p.instance.spec.clusterId, instanceId, binding.spec.bindingId), out.manifests);
  return { overrides: out.applied, problems: out.problems, instancePatches: split.patches };
}

/**
 * A new binding's objects: the instance's objects with the bindings before it and this one's
 * record (its templates may list `bindings`), the bind template's own objects, and its changes
 * to the instance's objects composed in. Returns the binding record to write (with its
 * `instancePatches`). Throws RenderError when a change cannot apply (it would be dropped
 * silently on every later render).
 */
export async function bindInto(draft: Draft, p: PlacedInstance, binding: BindingRecord): Promise<{ binding: BindingRecord; rendered: Rendered[] }> {
  const others = p.bindings.filter((b) => b.spec.bindingId !== binding.spec.bindingId);
  const withBinding = (b: BindingRecord) => ({ ...p, bindings: [...others, b].sort(byBindingKey) });
  const first = await writeInstanceManifests(draft, withBinding(binding), "update");
  const { instancePatches, ...own } = await writeBindingManifests(draft, withBinding(binding), binding);
  if (instancePatches.length === 0) return { binding, rendered: [first, own] };
  const bound: BindingRecord = { ...binding, spec: { ...binding.spec, instancePatches } };
  const composed = await writeInstanceManifests(draft, withBinding(bound), "update");
  const failed = composed.problems.filter((x) => x.file === bindingRecordPath(binding.spec.instanceId, binding.spec.bindingId));
  if (failed.length > 0) {
    const list = failed.map((x) => `- ${formatProblem(x)}`).join("\n");
    throw new RenderError(`plan ${p.plan.name}: template bind changes objects of instance ${binding.spec.instanceId} in a way that cannot apply:\n${list}`, {
      data: { plan: p.plan.name, action: "bind", problems: failed },
    });
  }
  return { binding: bound, rendered: [composed, own] };
}

/** The instance's objects as committed in the draft (its manifest directory's files). */
function committedObjects(draft: Draft, p: PlacedInstance): Promise<CommittedObject[]> {
  return objectsIn(draft, instanceManifestDir(p.instance.spec.clusterId, p.instance.spec.instanceId));
}

/** The objects of the YAML files directly in `dir` (subdirectories left out), parsed. */
export async function objectsIn(draft: Draft, dir: string): Promise<CommittedObject[]> {
  const objects: CommittedObject[] = [];
  for (const entry of (await draft.list(dir)) ?? []) {
    if (entry.type !== "blob" || !entry.name.endsWith(".yaml")) continue;
    const object = parse((await draft.readText(`${dir}/${entry.name}`)) ?? "") as unknown;
    if (typeof object !== "object" || object === null || Array.isArray(object)) continue;
    const o = object as Record<string, unknown>;
    const metadata = (typeof o.metadata === "object" && o.metadata !== null ? o.metadata : {}) as Record<string, unknown>;
    if (typeof o.apiVersion !== "string" || typeof o.kind !== "string" || typeof metadata.name !== "string") continue;
    objects.push({ apiVersion: o.apiVersion, kind: o.kind, name: metadata.name, namespace: typeof metadata.namespace === "string" ? metadata.namespace : undefined, object: o });
  }
  return objects;
}

/**
 * Service Fabrik rendered bind with the objects its `sources` template names, read live (the
 * sample's bind template adds a user to `.postgresql`). The broker renders bind when it commits,
 * in both status modes, from the desired state: each source key that names one of the
 * instance's objects gets it as committed (ADR 0017). Sources the instance does not render (an
 * operator's Secret or Service) stay missing, as an object SF could not fetch did.
 */
async function committedSources(p: PlacedInstance, binding: BindingRecord, objects: readonly CommittedObject[]): Promise<Record<string, unknown>> {
  if (!hasTemplate(p.plan.templates, "sources")) return {};
  let refs: unknown;
  try {
    refs = parse(await renderText({ action: "sources", templates: p.plan.templates, values: values(p, binding), planName: p.plan.name }));
  } catch {
    return {}; // the status watcher reports a broken sources template; bind renders without
  }
  if (typeof refs !== "object" || refs === null || Array.isArray(refs)) return {};
  const out: Record<string, unknown> = {};
  for (const [key, ref] of Object.entries(refs as Record<string, unknown>)) {
    if (typeof ref !== "object" || ref === null || ["service", "plan", "instance", "binding", "bindings"].includes(key)) continue;
    const { apiVersion, kind, name } = ref as Record<string, unknown>;
    const found = objects.find((o) => o.apiVersion === apiVersion && o.kind === kind && o.name === name);
    if (found !== undefined) out[key] = structuredClone(found.object);
  }
  return out;
}

export function removeBindingManifests(draft: Draft, instance: InstanceRecord, bindingId: string): void {
  draft.remove(bindingManifestDir(instance.spec.clusterId, instance.spec.instanceId, bindingId));
}

export function removeInstanceManifests(draft: Draft, instance: InstanceRecord): void {
  draft.remove(instanceManifestDir(instance.spec.clusterId, instance.spec.instanceId));
}

/** The encrypted Secret files the records name (instance and `bindings`), repo paths. */
export function sensitiveFiles(instance: InstanceRecord, bindings: readonly BindingRecord[]): string[] {
  const { clusterId, instanceId } = instance.spec;
  const files = (dir: string, refs: SensitiveParameterRefs | undefined) =>
    [...new Set(Object.values(refs ?? {}))].map((name) => sensitiveSecretPath(dir, name));
  return [
    ...files(instanceManifestDir(clusterId, instanceId), instance.spec.sensitiveParameters),
    ...bindings.flatMap((b) => files(bindingManifestDir(clusterId, instanceId, b.spec.bindingId), b.spec.sensitiveParameters)),
  ];
}

/**
 * Empties the instance's manifest directory but for the encrypted Secrets the records of the
 * instance and of `bindings` name: those cannot be rendered again.
 */
export async function clearInstanceManifests(draft: Draft, instance: InstanceRecord, bindings: readonly BindingRecord[]): Promise<void> {
  const kept: [string, Uint8Array][] = [];
  for (const path of sensitiveFiles(instance, bindings)) {
    const content = await draft.readFile(path);
    if (content !== null) kept.push([path, content]);
  }
  removeInstanceManifests(draft, instance);
  for (const [path, content] of kept) draft.write(path, content);
}

/** Every cluster directory holds the Namespace its instances live in (see namespaceManifest). */
async function ensureClusterNamespace(draft: Draft, clusterId: string, namespace: string): Promise<void> {
  const path = clusterNamespacePath(clusterId);
  if ((await draft.oid(path)) !== null) return;
  draft.write(path, namespaceManifest(namespace));
}
