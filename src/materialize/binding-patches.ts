import { isDeepStrictEqual } from "node:util";
import { RenderError } from "../errors/index.js";
import type { Manifest } from "../render/index.js";
import { bindingRecordPath, byBindingKey, LABEL_BINDING, LABEL_INSTANCE, LABEL_MANAGED_BY, type BindingRecord, type InstancePatch } from "../repo/index.js";

/**
 * A binding's changes to its instance's objects (ADR 0017). Service Fabrik's bind templates read
 * the instance's object through `sources` and output all of it with one change (the sample adds
 * `spec.users.<binding-id>`); the inter-operator merged that into the live object. Here the change
 * is the JSON merge patch between the object the template received and the one it rendered,
 * kept in the binding record and composed onto the instance's render while the binding lives.
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** Fields the API server sets: never part of a template's change, whatever it rendered there. */
const SERVER_METADATA = ["resourceVersion", "uid", "generation", "creationTimestamp", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"];
/** The broker's own labels: the binding label lands on everything the bind template renders. */
const BROKER_LABELS = [LABEL_MANAGED_BY, LABEL_INSTANCE, LABEL_BINDING];

/** `object` without status, server-set metadata and broker labels (a copy). */
function comparable(object: Json): Json {
  const { status: _status, ...rest } = object;
  if (!isObject(rest.metadata)) return rest;
  const metadata: Json = { ...rest.metadata };
  for (const key of SERVER_METADATA) delete metadata[key];
  if (isObject(metadata.labels)) {
    const labels: Json = { ...metadata.labels };
    for (const key of BROKER_LABELS) delete labels[key];
    if (Object.keys(labels).length > 0) metadata.labels = labels;
    else delete metadata.labels;
  }
  return { ...rest, metadata };
}

const setKey = (o: Json, key: string, value: unknown) =>
  // defineProperty: a `__proto__` key of a rendered document is data, never the prototype.
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });

/**
 * The RFC 7386 merge patch that turns `before` into `after`; undefined when they are equal.
 * Mappings are compared key by key (a key gone is `null`); anything else, lists included, is
 * replaced whole when it differs.
 */
export function mergePatchBetween(before: unknown, after: unknown): unknown {
  if (!isObject(before) || !isObject(after)) return isDeepStrictEqual(before, after) ? undefined : structuredClone(after);
  const patch: Json = {};
  for (const key of Object.keys(before)) if (!Object.hasOwn(after, key)) setKey(patch, key, null);
  for (const [key, value] of Object.entries(after)) {
    const change = Object.hasOwn(before, key) ? mergePatchBetween(before[key], value) : structuredClone(value);
    if (change !== undefined) setKey(patch, key, change);
  }
  return Object.keys(patch).length === 0 ? undefined : patch;
}

/** One of the instance's objects as committed, parsed. */
export interface CommittedObject {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string | undefined;
  object: Json;
}

/** The committed object `m` is a rendering of (same apiVersion, kind, namespace and name). */
export function sameObject(m: Pick<Manifest, "apiVersion" | "kind" | "name" | "namespace">, objects: readonly CommittedObject[]): CommittedObject | undefined {
  return objects.find((o) => o.apiVersion === m.apiVersion && o.kind === m.kind && o.name === m.name && o.namespace === m.namespace);
}

/**
 * Splits a bind template's objects: those that are one of the instance's committed objects
 * become patches (the change from the committed object, which is what a `sources` key naming it
 * gave the template), the others stay the binding's own. Throws RenderError for a change to a
 * Secret's data: a credential never reaches Git, not even as a patch.
 */
export function splitBindOutput(
  rendered: Manifest[],
  committed: readonly CommittedObject[],
  namespace: string,
  where: string,
): { own: Manifest[]; patches: InstancePatch[] } {
  const own: Manifest[] = [];
  const patches: InstancePatch[] = [];
  for (const m of rendered) {
    const base = sameObject(m, committed);
    if (base === undefined) {
      own.push(m);
      continue;
    }
    const patch = mergePatchBetween(comparable(base.object), comparable(m.object));
    if (patch === undefined) continue;
    if (m.apiVersion === "v1" && m.kind === "Secret" && isObject(patch) && (Object.hasOwn(patch, "data") || Object.hasOwn(patch, "stringData"))) {
      throw new RenderError(`${where}: changes the data of the instance's Secret ${m.name}; a credential is never written to Git`);
    }
    patches.push({
      target: { apiVersion: m.apiVersion, kind: m.kind, name: m.name, ...(m.namespace !== undefined && m.namespace !== namespace ? { namespace: m.namespace } : {}) },
      patch: patch as Json,
    });
  }
  return { own, patches };
}

/** A binding's patch in the shape `applyOverrides` applies (problems name the binding record). */
export interface PatchToApply {
  file: string;
  at: string;
  target: InstancePatch["target"];
  patch: Json;
  /** The object it patches: its target, in the target's namespace, else the default one (or none: cluster-scoped). */
  matches: (m: Manifest) => boolean;
}

/** The patches of live bindings, in binding-key order, then record order. */
export function bindingPatches(bindings: readonly BindingRecord[], defaultNamespace: string): PatchToApply[] {
  return [...bindings]
    .sort(byBindingKey)
    .flatMap((b) =>
      (b.spec.instancePatches ?? []).map(({ target, patch }, i) => ({
        file: bindingRecordPath(b.spec.instanceId, b.spec.bindingId),
        at: `spec.instancePatches[${i}].`,
        target,
        patch,
        matches: (m: Manifest) =>
          m.apiVersion === target.apiVersion &&
          m.kind === target.kind &&
          m.name === target.name &&
          (target.namespace === undefined ? m.namespace === undefined || m.namespace === defaultNamespace : m.namespace === target.namespace),
      })),
    );
}
