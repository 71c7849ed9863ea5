import { parse } from "yaml";
import type { TreeReader, Draft } from "../gitwriter/index.js";
import { bindingRecordPath, instanceRecordDir, instanceRecordPath, keyOf } from "./layout.js";
import { yamlOf, type YamlStyle } from "../yaml/index.js";

/**
 * Instance and binding records: what Service Fabrik kept as SFServiceInstance / SFServiceBinding.
 * They hold the OSB request as received, the cluster the instance was placed on, and the history
 * of operations. Schemas: repo-layout/schemas/instance-record.schema.json, binding-record.schema.json.
 */

export const RECORD_API_VERSION = "gitops-broker.io/v1alpha1";

/** `import`: the record was written by `gitops-broker import` from a running Service Fabrik landscape. */
export type InstanceAction = "provision" | "update" | "deprovision" | "import";
export type BindingAction = "bind" | "unbind" | "import";

export interface OriginatingIdentity {
  platform: string;
  value: Record<string, unknown>;
}

export interface MaintenanceInfoRecord {
  version: string;
  description?: string;
}

/**
 * Where the sensitive parameters (ADR 0007) are kept, never their values: Secret key (the value's
 * path, `adminPassword`, `users.0.password`) -> name of the SOPS-encrypted Secret that holds its
 * latest value, in the record's `sensitive/` manifest directory.
 */
export type SensitiveParameterRefs = Record<string, string>;

/**
 * A binding's change to one of its instance's objects (a bind template that reads the instance's
 * `postgresql` and adds a user): a JSON merge patch (RFC 7386) composed onto the instance's
 * rendered object on every render while the binding lives (ADR 0017). `namespace` only when the
 * object is not in the cluster's instance namespace.
 */
export interface InstancePatch {
  target: { apiVersion: string; kind: string; name: string; namespace?: string };
  patch: Record<string, unknown>;
}

export interface OperationEntry<A extends string = string> {
  id: string;
  action: A;
  /** RFC 3339 time the broker accepted the request. */
  at: string;
  planId?: string;
  parameters?: Record<string, unknown>;
  context?: Record<string, unknown>;
  maintenanceInfo?: MaintenanceInfoRecord;
  requestIdentity?: string;
  originatingIdentity?: OriginatingIdentity;
}

export interface InstanceRecord {
  apiVersion: typeof RECORD_API_VERSION;
  kind: "ServiceInstance";
  metadata: { name: string; namespace: string };
  spec: {
    instanceId: string;
    serviceId: string;
    planId: string;
    clusterId: string;
    /**
     * The instance's own namespace, kept from Service Fabrik by an import (`sf-<id>` or its shared
     * namespace); absent: the cluster's instance namespace. See instanceNamespace.
     */
    namespace?: string;
    /** The region of the route `/<platform>/region/<region>/v2` that provisioned the instance. */
    region?: string;
    organizationGuid?: string;
    spaceGuid?: string;
    context?: Record<string, unknown>;
    parameters?: Record<string, unknown>;
    maintenanceInfo?: MaintenanceInfoRecord;
    originatingIdentity?: OriginatingIdentity;
    sensitiveParameters?: SensitiveParameterRefs;
  };
  status: {
    deleted?: boolean;
    operations: OperationEntry<InstanceAction>[];
    /** OSB `metadata.labels`: the plan's `metadata` template at the last provision or update (ADR 0033). */
    labels?: Record<string, string>;
    /** OSB `metadata.attributes`, likewise. */
    attributes?: Record<string, unknown>;
  };
}

export interface BindingRecord {
  apiVersion: typeof RECORD_API_VERSION;
  kind: "ServiceBinding";
  metadata: { name: string; namespace: string };
  spec: {
    bindingId: string;
    instanceId: string;
    serviceId: string;
    planId: string;
    /** OSB `predecessor_binding_id` (2.17): the binding of the same instance this one succeeds (ADR 0033). */
    predecessorBindingId?: string;
    context?: Record<string, unknown>;
    parameters?: Record<string, unknown>;
    bindResource?: Record<string, unknown>;
    appGuid?: string;
    originatingIdentity?: OriginatingIdentity;
    sensitiveParameters?: SensitiveParameterRefs;
    /** OSB `metadata.expires_at` (RFC 3339), fixed at the bind from the plan's settings (ADR 0033). */
    expiresAt?: string;
    /** OSB `metadata.renew_before` (RFC 3339), fixed at the bind from the plan's settings. */
    renewBefore?: string;
    /** What the bind template changed in the instance's objects (ADR 0017). */
    instancePatches?: InstancePatch[];
  };
  status: {
    deleted?: boolean;
    operations: OperationEntry<BindingAction>[];
  };
}

/** Parsed records by blob oid: records are immutable per oid, so the cache never goes stale. */
const parsed = new Map<string, unknown>();
const PARSE_CACHE_LIMIT = 50_000;

/** A record (any YAML file) at `path`, parsed once per blob oid; callers get their own copy. */
export async function readRecordAt<T>(tree: TreeReader, path: string): Promise<T | null> {
  const oid = await tree.oid(path);
  if (oid === null) return null;
  const hit = parsed.get(oid);
  if (hit !== undefined) return structuredClone(hit) as T;
  const text = await tree.readText(path);
  if (text === null) return null;
  const value = parse(text) as T;
  if (parsed.size >= PARSE_CACHE_LIMIT) parsed.clear();
  parsed.set(oid, value);
  return structuredClone(value);
}

export function readInstance(tree: TreeReader, instanceId: string): Promise<InstanceRecord | null> {
  return readRecordAt<InstanceRecord>(tree, instanceRecordPath(instanceId));
}

export function readBinding(tree: TreeReader, instanceId: string, bindingId: string): Promise<BindingRecord | null> {
  return readRecordAt<BindingRecord>(tree, bindingRecordPath(instanceId, bindingId));
}

/** Every binding record of an instance, deleted ones included, sorted by binding key. */
export async function readBindings(tree: TreeReader, instanceId: string): Promise<BindingRecord[]> {
  const dir = `${instanceRecordDir(instanceId)}/bindings`;
  const entries = (await tree.list(dir)) ?? [];
  const out: BindingRecord[] = [];
  for (const e of entries) {
    if (e.type !== "blob" || !e.name.endsWith(".yaml")) continue;
    const rec = await readRecordAt<BindingRecord>(tree, `${dir}/${e.name}`);
    if (rec) out.push(rec);
  }
  return out.sort(byBindingKey);
}

/** The one order of bindings handed to templates: by binding key, code point by code point. */
export function byBindingKey(a: BindingRecord, b: BindingRecord): number {
  return a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;
}

/** Binding records of an instance that are not deleted, sorted by binding key. */
export async function readLiveBindings(tree: TreeReader, instanceId: string): Promise<BindingRecord[]> {
  return (await readBindings(tree, instanceId)).filter((b) => !b.status.deleted);
}

/** Records keep their keys in the order they were built (new-records.ts), in YAML 1.2's core schema. */
export const RECORD_STYLE: YamlStyle = {};

export function recordYaml(record: InstanceRecord | BindingRecord): string {
  return yamlOf(record, RECORD_STYLE);
}

export function writeInstance(draft: Draft, record: InstanceRecord): void {
  draft.write(instanceRecordPath(record.spec.instanceId), recordYaml(record));
}

export function writeBinding(draft: Draft, record: BindingRecord): void {
  draft.write(bindingRecordPath(record.spec.instanceId, record.spec.bindingId), recordYaml(record));
}

/**
 * The namespace the instance's objects live in: its own (an imported Service Fabrik instance's),
 * else its cluster's instance namespace as the registry has it now.
 */
export function instanceNamespace(instance: InstanceRecord, cluster: { namespace: string }): string {
  return instance.spec.namespace ?? cluster.namespace;
}

export function latestOperation<A extends string>(ops: OperationEntry<A>[]): OperationEntry<A> | undefined {
  return ops[ops.length - 1];
}

export { keyOf };
