/**
 * What a running Service Fabrik landscape holds, as its code wrote it (v0.27.1; notes in
 * ../shared/notes/service-fabrik.md, "Migration facts"): on the master cluster the
 * SFServiceInstance / SFServiceBinding resources the broker created, each with `spec.clusterId`
 * and, replicated up from the sister cluster, `status.state` and `status.resources` (the objects
 * the provisioner applied there); on each sister cluster those objects, owned by the sister's
 * replica of the SFServiceInstance (and by each SFServiceBinding whose bind template changed it).
 */
import { createHash } from "node:crypto";

export const SF_OSB_API_VERSION = "osb.servicefabrik.io/v1alpha1";
export const SF_INSTANCE_KIND = "SFServiceInstance";
export const SF_BINDING_KIND = "SFServiceBinding";
/** The groups of Service Fabrik's own resources: an owner reference of one of them is Service Fabrik's. */
export const SF_GROUPS = ["osb.servicefabrik.io", "resource.servicefabrik.io", "deployment.servicefabrik.io", "bind.servicefabrik.io"];

/** A Kubernetes object as the API returns it, loosely typed. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name?: string;
    namespace?: string;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    ownerReferences?: OwnerReference[];
    deletionTimestamp?: string;
    creationTimestamp?: string;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** apiVersion, kind, namespace (absent: cluster-scoped) and name: what identifies an object. */
export interface ObjectIdentity {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
}

/**
 * The read-only (and, for the hand-over, writing) access to one cluster the import needs. The
 * CLI implements it with @kubernetes/client-node (kube-client.ts); tests may pass their own.
 */
export interface ClusterClient {
  /** Where it points (the API server's URL), for messages. */
  readonly server: string;
  /**
   * Every object of a kind, in all namespaces; [] when the cluster does not serve the kind. With
   * `keep`, only what it answers for each object, as the list is read (undefined: left out).
   */
  list(apiVersion: string, kind: string, keep?: (o: KubeObject) => KubeObject | undefined): Promise<KubeObject[]>;
  /** Merge patch (RFC 7386) of one object. */
  mergePatch(ref: ObjectIdentity, patch: Record<string, unknown>): Promise<void>;
  /** DELETE with `propagationPolicy: Orphan`: the garbage collector leaves its dependents alone. */
  deleteOrphan(ref: ObjectIdentity): Promise<void>;
}

/** The landscape as read: the master's resources, and per sister cluster the live objects they list. */
export interface Landscape {
  /** The master's API server, for the commits' source trailer. */
  master: string;
  instances: KubeObject[];
  bindings: KubeObject[];
  /** Sister cluster id (SF's `spec.clusterId`) -> object identity key -> live object. */
  live: Map<string, Map<string, KubeObject>>;
  /** Sister clusters that could not be read, with why. */
  unreadable: Map<string, string>;
}

export const identityKey = (o: ObjectIdentity): string => `${o.apiVersion} ${o.kind} ${o.namespace ?? ""} ${o.name}`;

export const identityText = (o: ObjectIdentity): string => `${o.apiVersion} ${o.kind} ${o.namespace ? `${o.namespace}/` : ""}${o.name}`;

export function identityOf(o: KubeObject): ObjectIdentity {
  return { apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name ?? "", ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}) };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

export function specOf(o: KubeObject): Record<string, unknown> {
  return isObject(o.spec) ? o.spec : {};
}

export function statusOf(o: KubeObject): Record<string, unknown> {
  return isObject(o.status) ? o.status : {};
}

/** `status.resources` of an SF resource: the objects its provisioner applied. */
export function appliedResources(o: KubeObject): ObjectIdentity[] {
  const list = statusOf(o).resources;
  if (!Array.isArray(list)) return [];
  const out: ObjectIdentity[] = [];
  for (const r of list) {
    if (!isObject(r)) continue;
    const apiVersion = str(r.apiVersion);
    const kind = str(r.kind);
    const name = str(r.name);
    if (apiVersion && kind && name) out.push({ apiVersion, kind, name, ...(str(r.namespace) ? { namespace: String(r.namespace) } : {}) });
  }
  return out;
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * The Kubernetes name Service Fabrik gave an OSB id (its broker's getKubernetesName): the id when
 * it is a DNS-1123 subdomain of at most 253 characters, else the sha224 hex of the id. Its
 * SFServiceInstance and SFServiceBinding are named so, and a binding's `spec.instanceId` holds
 * its instance's name so. (The broker's own keyOf hashes every id that is not a DNS-1123 label.)
 */
export function serviceFabrikName(id: string): string {
  return id.length > 0 && id.length <= 253 && DNS1123_SUBDOMAIN.test(id) ? id : createHash("sha224").update(id, "utf8").digest("hex");
}

/** The instance id of an SFServiceInstance: `spec.instanceId`, else its name. */
export function instanceIdOf(o: KubeObject): string {
  return str(specOf(o).instanceId) ?? o.metadata.name ?? "";
}

/**
 * The binding id of an SFServiceBinding: `spec.id`, the id as the platform sent it (Service
 * Fabrik's putBinding keeps it there and names the resource by its Kubernetes name, the sha224
 * hex of an id that is not a DNS-1123 subdomain; its CRD has no `bindingId`), else `spec.bindingId`,
 * else its name.
 */
export function bindingIdOf(o: KubeObject): string {
  const spec = specOf(o);
  return str(spec.id) ?? str(spec.bindingId) ?? o.metadata.name ?? "";
}

/**
 * The instance an SFServiceBinding names: `spec.instanceId`, else its `instance_guid` label. Service
 * Fabrik's putBinding stores there the instance's Kubernetes name (the SFServiceInstance's
 * `metadata.name`: the sha224 hex of an id that is not a DNS-1123 subdomain), not its id.
 */
export function bindingInstanceOf(o: KubeObject): string {
  return str(specOf(o).instanceId) ?? o.metadata.labels?.instance_guid ?? "";
}

/**
 * The master's SFServiceBindings by the SFServiceInstance they belong to, matched as Service
 * Fabrik stored them: the instance named by its id (`spec.instanceId`) or by its Kubernetes name
 * (`metadata.name`, what putBinding writes for an id that is not a DNS-1123 subdomain). `orphans`:
 * bindings whose instance is not among `instances`.
 */
export function matchBindings(instances: readonly KubeObject[], bindings: readonly KubeObject[]): { byInstance: Map<KubeObject, KubeObject[]>; orphans: KubeObject[] } {
  const named = new Map<string, KubeObject>();
  for (const i of instances) named.set(instanceIdOf(i), i);
  for (const i of instances) if (i.metadata.name && !named.has(i.metadata.name)) named.set(i.metadata.name, i);
  const byInstance = new Map<KubeObject, KubeObject[]>();
  const orphans: KubeObject[] = [];
  for (const b of bindings) {
    const instance = named.get(bindingInstanceOf(b));
    if (instance === undefined) orphans.push(b);
    else {
      const list = byInstance.get(instance);
      if (list) list.push(b);
      else byInstance.set(instance, [b]);
    }
  }
  return { byInstance, orphans };
}

export type SfState = "succeeded" | "failed" | "busy";

/**
 * Where an SF resource stands: `status.state` is the state (the `state` label is the broker's and
 * can read `in_queue` long after success); `in_queue`, `update`, `delete`, `in progress`, none, or a
 * deletionTimestamp: an operation in progress.
 */
export function sfState(o: KubeObject): { state: SfState; text: string } {
  const text = str(statusOf(o).state) ?? "(none)";
  if (o.metadata.deletionTimestamp) return { state: "busy", text: `being deleted (deletionTimestamp ${o.metadata.deletionTimestamp}, state ${text})` };
  if (text === "succeeded") return { state: "succeeded", text };
  if (text === "failed") return { state: "failed", text };
  return { state: "busy", text };
}

/** Is `ref` an owner reference to one of Service Fabrik's resources? */
export function isServiceFabrikOwner(ref: OwnerReference): boolean {
  const group = ref.apiVersion.includes("/") ? ref.apiVersion.slice(0, ref.apiVersion.indexOf("/")) : "";
  return SF_GROUPS.includes(group);
}

/** Finalizers Service Fabrik's broker and controllers put on its resources. */
export function isServiceFabrikFinalizer(f: string): boolean {
  return f.endsWith("servicefabrik.io") || f.startsWith("interoperator.servicefabrik.io/");
}
