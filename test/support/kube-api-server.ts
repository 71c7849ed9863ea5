/**
 * A small Kubernetes API server for tests: `node:http` on 127.0.0.1 (port 0) speaking the JSON
 * protocol that @kubernetes/client-node 1.x uses (discovery, CRUD, patch, list with selectors,
 * chunked watch streams with bookmarks and 410 Expired), over an in-memory object store with a
 * global resourceVersion and an event history.
 *
 * A DOUBLE, kept for what a real server cannot do quickly or on demand: injected faults (429 and
 * 503 answers with Retry-After, dropped watch sockets, a listener that stops answering, a history
 * compacted at a chosen moment), thousands of objects, and a request log to prove that polls cost
 * no request. What only a real server can show (its watch cache and bookmarks, 410 after an etcd
 * compaction, CRD validation, status subresources, TokenRequest, RBAC) is tested against the real
 * kube-apiserver and etcd built from their modules: test/support/real-kube.ts, test/real-kube/.
 *
 *   const server = await startKubeApiServer({ bookmarkIntervalMs: 50 });
 *   server.registerResource({ group: "acid.zalan.do", version: "v1", kind: "postgresql", plural: "postgresqls", namespaced: true });
 *   const kc = server.loadKubeConfig();                   // a client-node KubeConfig pointing here
 *   server.store.upsert({ apiVersion: "v1", kind: "Secret", metadata: { name: "s", namespace: "ns" } });
 *   ...
 *   await server.close();
 *
 * Faults, as a real client sees them:
 * - `compact()` forgets the history: a watch from an older resourceVersion gets one
 *   `ERROR` event with a 410 `Expired` Status, then the stream ends (what kube-apiserver does);
 *   the next page of a list begun before is 410 Expired.
 * - `dropWatches()` destroys the sockets of open watch streams (the client sees a premature close).
 * - `setAvailable(false, { code: 429, retryAfterSeconds: 3 })` answers every request with that
 *   Status (default 503) and Retry-After header; open watches stay open.
 * - `stop()` closes the listener and every connection ("connection refused"); `start()` listens
 *   again on the same port.
 *
 * Semantics kept from kube-apiserver: list items of the core group carry no apiVersion/kind; a
 * watch without resourceVersion (or "0") starts with synthetic ADDED events for the current state;
 * objects leaving or entering a watch's label selector are sent as DELETED/ADDED; DELETE of an
 * object with finalizers only sets `deletionTimestamp`, and the update removing the last finalizer
 * deletes it.
 *
 * Lists page as kube-apiserver's etcd3 store pages them (staging/src/k8s.io/apiserver/pkg/storage/
 * etcd3/store.go GetList), for every resource, custom ones included: `limit` objects in key order
 * (namespace/name), `metadata.continue` while keys follow the last one examined (so a page
 * filtered by a selector can be short, even empty, and still continue), `remainingItemCount` only
 * without a label or field selector, and every page of a list read from the snapshot of its first
 * page (rebuilt from the event history) with that page's resourceVersion: writes between pages do
 * not show. The last page of a custom resource list says `continue: ""` (an unstructured list
 * there), of a built-in one nothing. `resourceVersion=0` is answered whole, `limit` ignored, as
 * kube-apiserver's watch cache does. A token older than the last `compact()` is 410 Expired with the server's message and a
 * token in `metadata.continue` that goes on from the latest state (inconsistent, as the real one);
 * `resourceVersion` with a continue token is 400; a first page at an exact resourceVersion
 * (`resourceVersionMatch=Exact`, or the legacy `resourceVersion` + `limit`) reads that snapshot.
 *
 * Not modelled: TLS, server-side apply, subresources, admission (namespaces need not exist),
 * deletecollection, Table and protobuf answers. Of lists: the watch cache's lag (a real server may
 * answer `resourceVersion=0` from a cache behind etcd; here it is the latest state) and its
 * snapshots (kube-apiserver 1.37 serves later pages from them, and keeps serving a token after
 * etcd was compacted behind its back until it restarts; here `compact()` expires every older
 * token at once, what the real one does once the snapshot is gone), compaction on a timer, the
 * token's format (opaque either way; ours is not the real one), the 504 for a future
 * resourceVersion comes at once (the real one waits for it first), and the cost of a list (no
 * `maxLimit` chunking, no APF throttling).
 */
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import { stringify } from "yaml";

export interface ResourceType {
  /** "" for the core group. */
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

export interface KubeObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  [key: string]: unknown;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: KubeObjectMeta;
  [key: string]: unknown;
}

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

export interface RecordedRequest {
  method: string;
  /** URL path without the query, e.g. `/api/v1/namespaces/ns/secrets`. */
  path: string;
  query: Record<string, string>;
  /** `?watch=true` */
  watch: boolean;
  contentType?: string;
  status: number;
}

/** Server-side access to the objects, bypassing HTTP (what a controller or a human would do). */
export interface ObjectStore {
  /** Creates or replaces (no resourceVersion precondition); returns the stored object. */
  upsert(object: KubeObject): KubeObject;
  /** Removes the object at once, finalizers or not; returns the last state, undefined when absent. */
  delete(ref: ObjectRef): KubeObject | undefined;
  get(ref: ObjectRef): KubeObject | undefined;
  /** Objects of one kind, sorted by namespace/name; all namespaces unless `namespace` is given. */
  list(apiVersion: string, kind: string, namespace?: string): KubeObject[];
  /** The current global resourceVersion. */
  resourceVersion(): string;
  /**
   * Calls `listener` after every change, HTTP or store (what a controller's informer sees, without
   * the watch protocol); returns the unsubscribe function. A listener must not throw.
   */
  subscribe(listener: (type: "ADDED" | "MODIFIED" | "DELETED", object: KubeObject, previous: KubeObject | undefined) => void): () => void;
}

export interface KubeApiServerOptions {
  /** Bearer token the kubeconfig carries and the server requires. */
  token?: string;
  /** Interval of BOOKMARK events on watches with allowWatchBookmarks=true (default 1000). */
  bookmarkIntervalMs?: number;
  /** Resources served besides namespaces, secrets, configmaps and services. */
  resources?: ResourceType[];
}

export interface UnavailableResponse {
  /** HTTP status (default 503). */
  code?: number;
  retryAfterSeconds?: number;
}

export interface KubeApiServer {
  readonly url: string;
  readonly port: number;
  /** Kubeconfig YAML (cluster, token user, context with namespace `default`) pointing here. */
  kubeconfig(): string;
  /** A client-node KubeConfig loaded from `kubeconfig()`. */
  loadKubeConfig(): KubeConfig;
  registerResource(resource: ResourceType): void;
  readonly store: ObjectStore;
  /** Every request answered, in order of the response head. */
  readonly requests: readonly RecordedRequest[];
  /** Forgets the event history: watches from a resourceVersion before now, and the continue tokens of lists begun before, get 410 Expired. */
  compact(): void;
  /** Destroys the connections of all open watch streams. */
  dropWatches(): void;
  /** Number of open watch streams. */
  openWatches(): number;
  setAvailable(available: boolean, response?: UnavailableResponse): void;
  /** Outage: stop listening and drop all connections ("connection refused"). */
  stop(): Promise<void>;
  /** Listen again on the same port after `stop()`. */
  start(): Promise<void>;
  close(): Promise<void>;
}

const CORE_RESOURCES: ResourceType[] = [
  { group: "", version: "v1", kind: "Namespace", plural: "namespaces", namespaced: false },
  { group: "", version: "v1", kind: "Secret", plural: "secrets", namespaced: true },
  { group: "", version: "v1", kind: "ConfigMap", plural: "configmaps", namespaced: true },
  { group: "", version: "v1", kind: "Service", plural: "services", namespaced: true },
];

const VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"];

// ---------------------------------------------------------------------------------------------
// Errors as Kubernetes Status objects
// ---------------------------------------------------------------------------------------------

/** A failure answered as a `Status` object with this code and reason. */
class StatusError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly details: Record<string, unknown> | undefined;
  /** A 410 on an expired continue token carries a token that continues from the latest state. */
  listContinue: string | undefined;
  constructor(code: number, reason: string, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = "StatusError";
    this.code = code;
    this.reason = reason;
    this.details = details;
  }
  toStatus(): Record<string, unknown> {
    const status = failureStatus(this.code, this.reason, this.message, this.details);
    return this.listContinue === undefined ? status : { ...status, metadata: { continue: this.listContinue } };
  }
}

function failureStatus(code: number, reason: string, message: string, details?: Record<string, unknown>): Record<string, unknown> {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    ...(details === undefined ? {} : { details }),
    code,
  };
}

function qualified(rt: ResourceType): string {
  return rt.group === "" ? rt.plural : `${rt.plural}.${rt.group}`;
}

function notFound(rt: ResourceType, name: string): StatusError {
  return new StatusError(404, "NotFound", `${qualified(rt)} "${name}" not found`, { name, group: rt.group, kind: rt.plural });
}

const badRequest = (message: string): StatusError => new StatusError(400, "BadRequest", message);
const invalid = (message: string): StatusError => new StatusError(422, "Invalid", message);

// ---------------------------------------------------------------------------------------------
// Selectors
// ---------------------------------------------------------------------------------------------

type Requirement =
  | { key: string; op: "=" | "!="; value: string }
  | { key: string; op: "in" | "notin"; values: string[] }
  | { key: string; op: "exists" | "!exists" };

const KEY = String.raw`[A-Za-z0-9][-A-Za-z0-9_./]*`;
const VALUE = String.raw`[-A-Za-z0-9_.]*`;
const EQUALITY = new RegExp(`^(${KEY})\\s*(==|=|!=)\\s*(${VALUE})$`);
const SET = new RegExp(`^(${KEY})\\s+(in|notin)\\s*\\(([^()]*)\\)$`);
const EXISTS = new RegExp(`^(!?)\\s*(${KEY})$`);

/** Splits on commas outside parentheses: `a in (x,y),b` -> [`a in (x,y)`, `b`]. */
function splitTerms(selector: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "," && depth === 0) {
      terms.push(selector.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(selector.slice(start));
  return terms.map((t) => t.trim());
}

/** The full label selector syntax: `=`, `==`, `!=`, `in`, `notin`, `key`, `!key`. */
function parseLabelSelector(selector: string): Requirement[] {
  if (selector.trim() === "") return [];
  return splitTerms(selector).map((term) => {
    let m = EQUALITY.exec(term);
    if (m) return { key: m[1]!, op: m[2] === "!=" ? "!=" : "=", value: m[3]! };
    m = SET.exec(term);
    if (m) {
      const values = m[3]!.split(",").map((v) => v.trim());
      if (values.some((v) => !new RegExp(`^${VALUE}$`).test(v)) || m[3]!.trim() === "") {
        throw badRequest(`unable to parse requirement: invalid values in "${term}"`);
      }
      return { key: m[1]!, op: m[2] === "in" ? "in" : "notin", values };
    }
    m = EXISTS.exec(term);
    if (m) return { key: m[2]!, op: m[1] === "!" ? "!exists" : "exists" };
    throw badRequest(`unable to parse requirement: "${term}"`);
  });
}

function labelsMatch(requirements: Requirement[], labels: Record<string, string> | undefined): boolean {
  return requirements.every((r) => {
    const value = labels?.[r.key];
    switch (r.op) {
      case "=":
        return value === r.value;
      case "!=":
        return value !== r.value;
      case "in":
        return value !== undefined && r.values.includes(value);
      case "notin":
        return value === undefined || !r.values.includes(value);
      case "exists":
        return value !== undefined;
      case "!exists":
        return value === undefined;
    }
  });
}

interface FieldRequirement {
  field: "metadata.name" | "metadata.namespace";
  equals: boolean;
  value: string;
}

function parseFieldSelector(selector: string): FieldRequirement[] {
  if (selector.trim() === "") return [];
  return selector.split(",").map((term) => {
    const m = /^\s*([\w.]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(term);
    if (!m) throw badRequest(`invalid field selector: "${term}"`);
    const field = m[1]!;
    if (field !== "metadata.name" && field !== "metadata.namespace") {
      throw badRequest(`field label not supported: ${field}`);
    }
    return { field, equals: m[2] !== "!=", value: m[3]! };
  });
}

function fieldsMatch(requirements: FieldRequirement[], object: KubeObject): boolean {
  return requirements.every((r) => {
    const actual = r.field === "metadata.name" ? object.metadata.name : (object.metadata.namespace ?? "");
    return (actual === r.value) === r.equals;
  });
}

interface Filter {
  namespace: string | undefined;
  labels: Requirement[];
  fields: FieldRequirement[];
}

function filterFrom(namespace: string | undefined, query: URLSearchParams): Filter {
  return {
    namespace,
    labels: parseLabelSelector(query.get("labelSelector") ?? ""),
    fields: parseFieldSelector(query.get("fieldSelector") ?? ""),
  };
}

function passes(filter: Filter, object: KubeObject): boolean {
  return (
    (filter.namespace === undefined || object.metadata.namespace === filter.namespace) &&
    labelsMatch(filter.labels, object.metadata.labels) &&
    fieldsMatch(filter.fields, object)
  );
}

// ---------------------------------------------------------------------------------------------
// Patches
// ---------------------------------------------------------------------------------------------

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const clone = <T>(value: T): T => structuredClone(value);

/** RFC 7386 JSON merge patch. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return clone(patch);
  const result: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

function pointerTokens(pointer: unknown): string[] {
  if (typeof pointer !== "string" || (pointer !== "" && !pointer.startsWith("/"))) {
    throw invalid(`invalid JSON pointer: ${JSON.stringify(pointer)}`);
  }
  return pointer === "" ? [] : pointer.slice(1).split("/").map((t) => t.replaceAll("~1", "/").replaceAll("~0", "~"));
}

/** The container holding the last token of `tokens`, and that token. */
function locate(doc: unknown, tokens: string[]): { container: Record<string, unknown> | unknown[]; key: string } {
  let node = doc;
  for (const token of tokens.slice(0, -1)) {
    node = Array.isArray(node) ? node[Number(token)] : isPlainObject(node) ? node[token] : undefined;
    if (node === undefined) throw invalid(`path not found: /${tokens.join("/")}`);
  }
  if (!Array.isArray(node) && !isPlainObject(node)) throw invalid(`path not found: /${tokens.join("/")}`);
  return { container: node, key: tokens[tokens.length - 1]! };
}

function valueAt(doc: unknown, tokens: string[]): unknown {
  if (tokens.length === 0) return doc;
  const { container, key } = locate(doc, tokens);
  const value = Array.isArray(container) ? container[Number(key)] : container[key];
  if (value === undefined) throw invalid(`path not found: /${tokens.join("/")}`);
  return value;
}

function addAt(doc: unknown, tokens: string[], value: unknown): unknown {
  if (tokens.length === 0) return value;
  const { container, key } = locate(doc, tokens);
  if (Array.isArray(container)) {
    const index = key === "-" ? container.length : Number(key);
    if (!Number.isInteger(index) || index < 0 || index > container.length) throw invalid(`invalid array index: ${key}`);
    container.splice(index, 0, value);
  } else {
    container[key] = value;
  }
  return doc;
}

function removeAt(doc: unknown, tokens: string[]): unknown {
  valueAt(doc, tokens);
  const { container, key } = locate(doc, tokens);
  if (Array.isArray(container)) container.splice(Number(key), 1);
  else delete container[key];
  return doc;
}

/** RFC 6902 JSON patch. */
function jsonPatch(target: unknown, operations: unknown): unknown {
  if (!Array.isArray(operations)) throw badRequest("a JSON patch must be an array of operations");
  let doc = clone(target);
  for (const operation of operations as Array<Record<string, unknown>>) {
    const path = pointerTokens(operation.path);
    switch (operation.op) {
      case "add":
        doc = addAt(doc, path, clone(operation.value));
        break;
      case "remove":
        doc = removeAt(doc, path);
        break;
      case "replace":
        valueAt(doc, path);
        doc = addAt(removeAt(doc, path), path, clone(operation.value));
        break;
      case "move": {
        const from = pointerTokens(operation.from);
        const value = valueAt(doc, from);
        doc = addAt(removeAt(doc, from), path, value);
        break;
      }
      case "copy":
        doc = addAt(doc, path, clone(valueAt(doc, pointerTokens(operation.from))));
        break;
      case "test":
        if (JSON.stringify(valueAt(doc, path)) !== JSON.stringify(operation.value)) {
          throw invalid(`test operation failed at ${String(operation.path)}`);
        }
        break;
      default:
        throw badRequest(`unsupported JSON patch operation: ${String(operation.op)}`);
    }
  }
  return doc;
}

function applyPatch(current: KubeObject, contentType: string, patch: unknown): unknown {
  switch (contentType) {
    case "application/json-patch+json":
      return jsonPatch(current, patch);
    // Strategic merge differs from a merge patch only for list fields with patch strategies,
    // which the kinds served here do not use.
    case "application/merge-patch+json":
    case "application/strategic-merge-patch+json":
      if (!isPlainObject(patch)) throw badRequest("a merge patch must be a JSON object");
      return mergePatch(current, patch);
    default:
      throw new StatusError(415, "UnsupportedMediaType", `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json`);
  }
}

// ---------------------------------------------------------------------------------------------
// The store: objects, a global resourceVersion, the event history
// ---------------------------------------------------------------------------------------------

type EventType = "ADDED" | "MODIFIED" | "DELETED";

interface HistoryEvent {
  rv: number;
  resource: ResourceType;
  type: EventType;
  /** The new state (for DELETED: the last state, with the deletion's resourceVersion). */
  object: KubeObject;
  /** The state before a MODIFIED. */
  previous?: KubeObject;
  /** The stored object the change replaced (undefined for ADDED): what a snapshot before it holds. */
  before?: KubeObject;
}

function apiVersionOf(rt: ResourceType): string {
  return rt.group === "" ? rt.version : `${rt.group}/${rt.version}`;
}

function objectKey(namespace: string | undefined, name: string): string {
  return `${namespace ?? ""}/${name}`;
}

const timestamp = (): string => new Date().toISOString().replace(/\.\d{3}Z$/, "Z");

/** Everything but metadata and status: what bumps metadata.generation. */
function specOf(object: KubeObject): string {
  const { metadata: _metadata, status: _status, ...rest } = object;
  return JSON.stringify(rest);
}

interface SnapshotEntry {
  /** `<namespace>/<name>`: etcd's order within a resource. */
  key: string;
  object: KubeObject;
}

/** Snapshots of paged lists kept for their next pages (more are rebuilt from the history). */
const SNAPSHOTS_KEPT = 8;

class Store {
  private rv = 0;
  /** Watches from a resourceVersion below this one get 410 Expired. */
  compactedRv = 0;
  private readonly objects = new Map<ResourceType, Map<string, KubeObject>>();
  history: HistoryEvent[] = [];
  readonly resources: ResourceType[] = [];
  readonly listeners = new Set<(event: HistoryEvent) => void>();
  private generated = 0;
  private readonly snapshots = new Map<string, SnapshotEntry[]>();

  get resourceVersion(): number {
    return this.rv;
  }

  register(rt: ResourceType): void {
    const existing = this.resources.find(
      (r) => r.group === rt.group && r.version === rt.version && (r.plural === rt.plural || r.kind === rt.kind),
    );
    if (existing) throw new Error(`resource ${rt.plural}.${rt.group}/${rt.version} is already registered`);
    this.resources.push({ ...rt });
  }

  resourceFor(apiVersion: string, kind: string): ResourceType {
    const rt = this.resources.find((r) => apiVersionOf(r) === apiVersion && r.kind === kind);
    if (!rt) throw new Error(`no resource registered for ${apiVersion} ${kind}`);
    return rt;
  }

  private bucket(rt: ResourceType): Map<string, KubeObject> {
    let bucket = this.objects.get(rt);
    if (!bucket) {
      bucket = new Map();
      this.objects.set(rt, bucket);
    }
    return bucket;
  }

  get(rt: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    const object = this.bucket(rt).get(objectKey(namespace, name));
    return object && clone(object);
  }

  /** Forgets the history (and the snapshots built from it): nothing before now can be read. */
  compact(): void {
    this.compactedRv = this.rv;
    this.history = [];
    this.snapshots.clear();
  }

  /**
   * The objects of `rt` at resourceVersion `rv` (>= compactedRv), sorted by key, as etcd ranges
   * them: the current ones with the changes since `rv` undone from the history. Stored objects
   * are never changed in place, so a snapshot shares them; the last few are kept for the pages
   * that follow.
   */
  snapshot(rt: ResourceType, rv: number): SnapshotEntry[] {
    const cacheKey = `${apiVersionOf(rt)}/${rt.plural}@${rv}`;
    const cached = this.snapshots.get(cacheKey);
    if (cached) return cached;
    const state = new Map(this.bucket(rt));
    for (let i = this.history.length - 1; i >= 0 && this.history[i]!.rv > rv; i--) {
      const event = this.history[i]!;
      if (event.resource !== rt) continue;
      const key = objectKey(event.object.metadata.namespace, event.object.metadata.name!);
      if (event.before === undefined) state.delete(key);
      else state.set(key, event.before);
    }
    const entries = [...state.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, object]) => ({ key, object }));
    this.snapshots.set(cacheKey, entries);
    for (const old of this.snapshots.keys()) if (this.snapshots.size > SNAPSHOTS_KEPT) this.snapshots.delete(old);
    return entries;
  }

  list(rt: ResourceType, filter: Filter): KubeObject[] {
    return [...this.bucket(rt).entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, object]) => object)
      .filter((object) => passes(filter, object))
      .map(clone);
  }

  private commit(rt: ResourceType, type: EventType, object: KubeObject, previous?: KubeObject): KubeObject {
    this.rv++;
    object.metadata.resourceVersion = String(this.rv);
    const key = objectKey(object.metadata.namespace, object.metadata.name!);
    const before = this.bucket(rt).get(key);
    if (type === "DELETED") this.bucket(rt).delete(key);
    else this.bucket(rt).set(key, object);
    const event: HistoryEvent = { rv: this.rv, resource: rt, type, object: clone(object), ...(previous ? { previous } : {}), ...(before ? { before } : {}) };
    this.history.push(event);
    for (const listener of this.listeners) listener(event);
    return clone(object);
  }

  /** Checks the body against the URL (kind, namespace) and returns a normalised copy. */
  private normalise(rt: ResourceType, namespace: string | undefined, body: unknown): KubeObject {
    if (!isPlainObject(body)) throw badRequest("the request body must be a JSON object");
    const object = clone(body) as Partial<KubeObject>;
    if (object.kind !== undefined && object.kind !== rt.kind) {
      throw badRequest(`the kind of the object (${object.kind}) does not match the resource (${rt.kind})`);
    }
    if (object.apiVersion !== undefined && object.apiVersion !== apiVersionOf(rt)) {
      throw badRequest(`the apiVersion of the object (${object.apiVersion}) does not match the resource (${apiVersionOf(rt)})`);
    }
    const metadata: KubeObjectMeta = isPlainObject(object.metadata) ? object.metadata : {};
    if (rt.namespaced) {
      if (metadata.namespace !== undefined && metadata.namespace !== namespace) {
        throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
      }
      metadata.namespace = namespace;
    } else {
      delete metadata.namespace;
    }
    return { ...object, apiVersion: apiVersionOf(rt), kind: rt.kind, metadata };
  }

  create(rt: ResourceType, namespace: string | undefined, body: unknown): KubeObject {
    const object = this.normalise(rt, namespace, body);
    const meta = object.metadata;
    if (!meta.name && meta.generateName) meta.name = `${meta.generateName}${(++this.generated).toString(36).padStart(5, "0")}`;
    if (!meta.name) throw invalid(`${rt.kind} is invalid: metadata.name: Required value: name or generateName is required`);
    if (this.bucket(rt).has(objectKey(namespace, meta.name))) {
      throw new StatusError(409, "AlreadyExists", `${qualified(rt)} "${meta.name}" already exists`, { name: meta.name, group: rt.group, kind: rt.plural });
    }
    delete meta.deletionTimestamp;
    meta.uid = randomUUID();
    meta.creationTimestamp = timestamp();
    meta.generation = 1;
    return this.commit(rt, "ADDED", object);
  }

  /** PUT semantics: 409 Conflict when the body carries a stale resourceVersion. */
  update(rt: ResourceType, namespace: string | undefined, name: string, body: unknown): KubeObject {
    const current = this.bucket(rt).get(objectKey(namespace, name));
    if (!current) throw notFound(rt, name);
    const object = this.normalise(rt, namespace, body);
    const meta = object.metadata;
    if (meta.name !== undefined && meta.name !== name) {
      throw badRequest(`the name of the object (${meta.name}) does not match the name on the URL (${name})`);
    }
    if (meta.resourceVersion !== undefined && meta.resourceVersion !== current.metadata.resourceVersion) {
      throw new StatusError(
        409,
        "Conflict",
        `Operation cannot be fulfilled on ${qualified(rt)} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
        { name, group: rt.group, kind: rt.plural },
      );
    }
    meta.name = name;
    meta.uid = current.metadata.uid;
    meta.creationTimestamp = current.metadata.creationTimestamp;
    meta.generation = (current.metadata.generation ?? 1) + (specOf(object) === specOf(current) ? 0 : 1);
    if (current.metadata.deletionTimestamp === undefined) delete meta.deletionTimestamp;
    else meta.deletionTimestamp = current.metadata.deletionTimestamp;
    // The update that removes the last finalizer of an object being deleted deletes it.
    if (meta.deletionTimestamp !== undefined && (meta.finalizers ?? []).length === 0) {
      return this.commit(rt, "DELETED", object);
    }
    return this.commit(rt, "MODIFIED", object, clone(current));
  }

  patch(rt: ResourceType, namespace: string | undefined, name: string, contentType: string, patch: unknown): KubeObject {
    const current = this.get(rt, namespace, name);
    if (!current) throw notFound(rt, name);
    return this.update(rt, namespace, name, applyPatch(current, contentType, patch));
  }

  /** DELETE semantics: with finalizers only `deletionTimestamp` is set (`deleted: false`). */
  delete(rt: ResourceType, namespace: string | undefined, name: string): { object: KubeObject; deleted: boolean } {
    const current = this.bucket(rt).get(objectKey(namespace, name));
    if (!current) throw notFound(rt, name);
    if ((current.metadata.finalizers ?? []).length === 0) {
      return { object: this.commit(rt, "DELETED", clone(current)), deleted: true };
    }
    if (current.metadata.deletionTimestamp !== undefined) return { object: clone(current), deleted: false };
    const next = clone(current);
    next.metadata.deletionTimestamp = timestamp();
    return { object: this.commit(rt, "MODIFIED", next, clone(current)), deleted: false };
  }

  upsert(object: KubeObject): KubeObject {
    const rt = this.resourceFor(object.apiVersion, object.kind);
    const namespace = rt.namespaced ? (object.metadata.namespace ?? "default") : undefined;
    const name = object.metadata.name;
    if (!name) throw new Error("upsert needs metadata.name");
    const body = clone(object);
    delete body.metadata.resourceVersion;
    return this.bucket(rt).has(objectKey(namespace, name)) ? this.update(rt, namespace, name, body) : this.create(rt, namespace, body);
  }

  remove(ref: ObjectRef): KubeObject | undefined {
    const rt = this.resourceFor(ref.apiVersion, ref.kind);
    const namespace = rt.namespaced ? (ref.namespace ?? "default") : undefined;
    const current = this.bucket(rt).get(objectKey(namespace, ref.name));
    return current && this.commit(rt, "DELETED", clone(current));
  }
}

// ---------------------------------------------------------------------------------------------
// Paged lists
// ---------------------------------------------------------------------------------------------

/** A continue token: the snapshot's resourceVersion (-1: the latest) and the key to start at. */
interface ContinueToken {
  rv: number;
  start: string;
}

const TOKEN_VERSION = "kube-api-server/v1";

function encodeContinue(token: ContinueToken): string {
  return Buffer.from(JSON.stringify({ v: TOKEN_VERSION, ...token })).toString("base64url");
}

function decodeContinue(text: string): ContinueToken {
  let parsed: { v?: unknown; rv?: unknown; start?: unknown };
  try {
    parsed = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as typeof parsed;
  } catch {
    throw badRequest(`invalid continue token: not a token of this server`);
  }
  if (parsed.v !== TOKEN_VERSION || typeof parsed.rv !== "number" || !Number.isInteger(parsed.rv) || parsed.rv === 0 || parsed.rv < -1 || typeof parsed.start !== "string") {
    throw badRequest(`invalid continue token: ${text}`);
  }
  return { rv: parsed.rv, start: parsed.start };
}

/** Groups of kube-apiserver's own types; a resource of another group is served as a custom resource. */
const BUILT_IN_GROUPS = new Set(["", "apps", "batch", "autoscaling", "policy", "coordination.k8s.io", "rbac.authorization.k8s.io", "networking.k8s.io", "storage.k8s.io", "apiextensions.k8s.io"]);

const INCONSISTENT_CONTINUE =
  "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/** A resourceVersion query parameter: "" and "0" say "the latest" (undefined). */
function resourceVersionParam(query: URLSearchParams): number | undefined {
  const text = query.get("resourceVersion") ?? "";
  if (text === "" || text === "0") return undefined;
  const rv = Number(text);
  if (!Number.isInteger(rv) || rv < 0) throw badRequest(`invalid resource version: ${text}`);
  return rv;
}

/**
 * Where a list reads from: the snapshot and the key to start at. As kube-apiserver's etcd3 store:
 * a continue token carries its snapshot (another resourceVersion with it is a 400); a first page
 * reads the latest state, or the exact resourceVersion asked for with `resourceVersionMatch=Exact`
 * or (the legacy form) with a `limit`; a snapshot older than the last compaction is 410 Expired.
 */
function listStart(store: Store, query: URLSearchParams, limit: number): { rv: number; start: string; whole?: true } {
  const rvParam = resourceVersionParam(query);
  const token = query.get("continue") ?? "";
  const tooLarge = (rv: number) => new StatusError(504, "Timeout", `Too large resource version: ${rv}, current: ${store.resourceVersion}`, { retryAfterSeconds: 1 });
  if (token !== "") {
    if (rvParam !== undefined) throw badRequest("specifying resource version is not allowed when using continue");
    const { rv, start } = decodeContinue(token);
    if (rv === -1) return { rv: store.resourceVersion, start };
    if (rv > store.resourceVersion) throw tooLarge(rv);
    if (rv < store.compactedRv) {
      const expired = new StatusError(410, "Expired", INCONSISTENT_CONTINUE);
      expired.listContinue = encodeContinue({ rv: -1, start });
      throw expired;
    }
    return { rv, start };
  }
  const match = query.get("resourceVersionMatch") ?? "";
  if (match !== "" && match !== "Exact" && match !== "NotOlderThan") throw badRequest(`unknown resourceVersionMatch: ${match}`);
  if (match !== "" && rvParam === undefined && query.get("resourceVersion") !== "0") throw badRequest("resourceVersionMatch is forbidden unless resourceVersion is provided");
  if (rvParam !== undefined && rvParam > store.resourceVersion) throw tooLarge(rvParam);
  const exact = rvParam !== undefined && (match === "Exact" || (match === "" && limit > 0));
  // resourceVersion=0 ("any"): served from the watch cache, which ignores the limit.
  if (!exact) return { rv: store.resourceVersion, start: "", ...(query.get("resourceVersion") === "0" ? { whole: true as const } : {}) };
  if (rvParam < store.compactedRv) throw new StatusError(410, "Expired", "The resourceVersion for the provided list is too old.");
  return { rv: rvParam, start: "" };
}

/**
 * One page of a list, as kube-apiserver serves it from etcd: up to `limit` objects (0 or none:
 * all) from one snapshot in key order, `metadata.continue` when keys follow the last one
 * examined, and `remainingItemCount` (how many objects follow) when no label or field selector
 * filters them. Every page of one list carries the first page's resourceVersion.
 */
function listPage(store: Store, rt: ResourceType, filter: Filter, query: URLSearchParams): { items: KubeObject[]; metadata: Record<string, unknown> } {
  const limitText = query.get("limit") ?? "";
  const asked = limitText === "" ? 0 : Number(limitText);
  if (!Number.isInteger(asked)) throw badRequest(`invalid limit: ${limitText}`);
  const { rv, start, whole } = listStart(store, query, asked);
  const limit = whole ? 0 : asked;
  const inRange = store.snapshot(rt, rv).filter(({ key, object }) => key >= start && (filter.namespace === undefined || object.metadata.namespace === filter.namespace));
  const selective = filter.labels.length > 0 || filter.fields.length > 0;
  const items: KubeObject[] = [];
  let examined = 0;
  for (const { object } of inRange) {
    if (limit > 0 && items.length >= limit) break;
    examined++;
    if (passes(filter, object)) items.push(clone(object));
  }
  const metadata: Record<string, unknown> = { resourceVersion: String(rv) };
  const remaining = inRange.length - examined;
  // A custom resource's list is unstructured there: its last page says `continue: ""`.
  if (!BUILT_IN_GROUPS.has(rt.group)) metadata.continue = "";
  if (remaining > 0) {
    metadata.continue = encodeContinue({ rv, start: `${inRange[examined - 1]!.key}\u0000` });
    if (!selective) metadata.remainingItemCount = remaining;
  }
  return { items, metadata };
}

// ---------------------------------------------------------------------------------------------
// Watches
// ---------------------------------------------------------------------------------------------

/** What a watcher with `filter` sees of `event` (selector transitions become ADDED/DELETED). */
function viewOf(filter: Filter, event: HistoryEvent): { type: EventType; object: KubeObject } | undefined {
  const now = passes(filter, event.object);
  if (event.type !== "MODIFIED") return now ? { type: event.type, object: event.object } : undefined;
  const before = event.previous !== undefined && passes(filter, event.previous);
  if (now) return { type: before ? "MODIFIED" : "ADDED", object: event.object };
  if (!before) return undefined;
  // Leaving the selector: kube-apiserver sends the previous state with the new resourceVersion.
  const left = clone(event.previous!);
  left.metadata.resourceVersion = String(event.rv);
  return { type: "DELETED", object: left };
}

// ---------------------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------------------

interface Target {
  rt: ResourceType;
  namespace: string | undefined;
  name: string | undefined;
}

export async function startKubeApiServer(options: KubeApiServerOptions = {}): Promise<KubeApiServer> {
  const token = options.token ?? "kube-api-server-test-token";
  const bookmarkIntervalMs = options.bookmarkIntervalMs ?? 1000;
  const store = new Store();
  for (const rt of [...CORE_RESOURCES, ...(options.resources ?? [])]) store.register(rt);
  const requests: RecordedRequest[] = [];
  const watchResponses = new Set<http.ServerResponse>();
  let unavailable: UnavailableResponse | undefined;

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const contentType = req.headers["content-type"]?.split(";")[0]?.trim();
    const watch = url.searchParams.get("watch") === "true" || url.searchParams.get("watch") === "1";
    const record = (status: number): void => {
      requests.push({
        method: req.method ?? "",
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        watch,
        ...(contentType === undefined ? {} : { contentType }),
        status,
      });
    };
    const reply = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
      record(status);
      res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
    };
    handle(req, res, url, watch, contentType, record, reply).catch((error: unknown) => {
      if (res.headersSent) {
        res.destroy();
      } else if (error instanceof StatusError) {
        reply(error.code, error.toStatus());
      } else {
        reply(500, failureStatus(500, "InternalError", error instanceof Error ? error.message : String(error)));
      }
    });
  });

  async function handle(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    url: URL,
    watch: boolean,
    contentType: string | undefined,
    record: (status: number) => void,
    reply: (status: number, body: unknown, headers?: Record<string, string>) => void,
  ): Promise<void> {
    if (req.headers.authorization !== `Bearer ${token}`) {
      reply(401, failureStatus(401, "Unauthorized", "Unauthorized"));
      return;
    }
    if (unavailable) {
      const code = unavailable.code ?? 503;
      const retry = unavailable.retryAfterSeconds;
      const reason = code === 429 ? "TooManyRequests" : "ServiceUnavailable";
      reply(code, failureStatus(code, reason, `the server is currently unable to handle the request`, retry === undefined ? undefined : { retryAfterSeconds: retry }), retry === undefined ? {} : { "retry-after": String(retry) });
      return;
    }
    const segments = url.pathname.split("/").filter((s) => s !== "").map(decodeURIComponent);
    const discovery = discoveryDocument(segments);
    if (discovery !== undefined) {
      if (req.method !== "GET") throw new StatusError(405, "MethodNotAllowed", `the server does not allow this method on the requested resource`);
      reply(200, discovery);
      return;
    }
    const target = resolveTarget(segments);
    const body = req.method === "POST" || req.method === "PUT" || req.method === "PATCH" ? await readJson(req) : undefined;
    const { rt, namespace, name } = target;
    if (name === undefined) {
      if (req.method === "GET" && watch) {
        startWatch(res, rt, filterFrom(namespace, url.searchParams), url.searchParams, record);
      } else if (req.method === "GET") {
        const { items, metadata } = listPage(store, rt, filterFrom(namespace, url.searchParams), url.searchParams);
        reply(200, {
          kind: `${rt.kind}List`,
          apiVersion: apiVersionOf(rt),
          metadata,
          // kube-apiserver leaves apiVersion/kind out of the items of built-in lists.
          items: rt.group === "" ? items.map(({ apiVersion: _a, kind: _k, ...rest }) => rest) : items,
        });
      } else if (req.method === "POST") {
        if (namespace === undefined && rt.namespaced) throw new StatusError(405, "MethodNotAllowed", "create needs a namespace in the path");
        reply(201, store.create(rt, namespace, body));
      } else {
        throw new StatusError(405, "MethodNotAllowed", `the server does not allow this method on the requested resource`);
      }
      return;
    }
    switch (req.method) {
      case "GET": {
        const object = store.get(rt, namespace, name);
        if (!object) throw notFound(rt, name);
        reply(200, object);
        return;
      }
      case "PUT":
        reply(200, store.update(rt, namespace, name, body));
        return;
      case "PATCH":
        reply(200, store.patch(rt, namespace, name, contentType ?? "", body));
        return;
      case "DELETE": {
        const { object, deleted } = store.delete(rt, namespace, name);
        reply(
          200,
          deleted
            ? { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", details: { name, group: rt.group, kind: rt.plural, uid: object.metadata.uid } }
            : object,
        );
        return;
      }
      default:
        throw new StatusError(405, "MethodNotAllowed", `the server does not allow this method on the requested resource`);
    }
  }

  function discoveryDocument(segments: string[]): unknown {
    const [root, a, b, ...rest] = segments;
    if (root === "version" && a === undefined) return { major: "1", minor: "33", gitVersion: "v1.33.0-kube-api-server-test" };
    if (root === "api" && a === undefined) return { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [] };
    if (root === "api" && a === "v1" && b === undefined) return resourceList("", "v1");
    if (root !== "apis") return undefined;
    const groups = groupVersions();
    if (a === undefined) {
      return { kind: "APIGroupList", apiVersion: "v1", groups: [...groups].map(([name, versions]) => apiGroup(name, versions)) };
    }
    const versions = groups.get(a);
    if (versions === undefined) return undefined;
    if (b === undefined) return apiGroup(a, versions);
    if (rest.length === 0 && versions.includes(b)) return resourceList(a, b);
    return undefined;
  }

  function groupVersions(): Map<string, string[]> {
    const groups = new Map<string, string[]>();
    for (const rt of store.resources) {
      if (rt.group === "") continue;
      const versions = groups.get(rt.group) ?? [];
      if (!versions.includes(rt.version)) versions.push(rt.version);
      groups.set(rt.group, versions);
    }
    return groups;
  }

  function apiGroup(name: string, versions: string[]): Record<string, unknown> {
    const list = versions.map((version) => ({ groupVersion: `${name}/${version}`, version }));
    return { kind: "APIGroup", apiVersion: "v1", name, versions: list, preferredVersion: list[0] };
  }

  function resourceList(group: string, version: string): Record<string, unknown> {
    return {
      kind: "APIResourceList",
      apiVersion: "v1",
      groupVersion: group === "" ? version : `${group}/${version}`,
      resources: store.resources
        .filter((rt) => rt.group === group && rt.version === version)
        .map((rt) => ({ name: rt.plural, singularName: rt.kind.toLowerCase(), namespaced: rt.namespaced, kind: rt.kind, verbs: VERBS })),
    };
  }

  /** `/api/v1/...` or `/apis/<g>/<v>/...` followed by `<plural>[/<name>]` or `namespaces/<ns>/<plural>[/<name>]`. */
  function resolveTarget(segments: string[]): Target {
    const notServed = new StatusError(404, "NotFound", "the server could not find the requested resource");
    let group: string;
    let version: string | undefined;
    let rest: string[];
    if (segments[0] === "api") {
      [group, version, rest] = ["", segments[1], segments.slice(2)];
    } else if (segments[0] === "apis") {
      [group, version, rest] = [segments[1] ?? "", segments[2], segments.slice(3)];
    } else {
      throw notServed;
    }
    const find = (plural: string | undefined): ResourceType | undefined =>
      store.resources.find((r) => r.group === group && r.version === version && r.plural === plural);
    if (rest.length === 4 || (rest.length === 3 && rest[0] === "namespaces")) {
      const rt = find(rest[2]);
      if (rest[0] !== "namespaces" || !rt?.namespaced) throw notServed;
      return { rt, namespace: rest[1], name: rest[3] };
    }
    if (rest.length === 1 || rest.length === 2) {
      const rt = find(rest[0]);
      if (!rt || (rest.length === 2 && rt.namespaced)) throw notServed;
      return { rt, namespace: undefined, name: rest[1] };
    }
    throw notServed;
  }

  function startWatch(res: http.ServerResponse, rt: ResourceType, filter: Filter, query: URLSearchParams, record: (status: number) => void): void {
    const rvParam = query.get("resourceVersion") ?? "";
    const from = rvParam === "" || rvParam === "0" ? undefined : Number(rvParam);
    if (from !== undefined && (!Number.isInteger(from) || from < 0)) throw badRequest(`invalid resource version: ${rvParam}`);
    const timeoutSeconds = query.get("timeoutSeconds");

    record(200);
    res.writeHead(200, { "content-type": "application/json", "cache-control": "no-cache" });
    res.flushHeaders();
    const send = (type: string, object: unknown): void => {
      res.write(`${JSON.stringify({ type, object })}\n`);
    };
    if (from !== undefined && from < store.compactedRv) {
      send("ERROR", failureStatus(410, "Expired", `too old resource version: ${from} (${store.compactedRv})`));
      res.end();
      return;
    }
    const deliver = (event: HistoryEvent): void => {
      if (event.resource !== rt) return;
      const view = viewOf(filter, event);
      if (view) send(view.type, view.object);
    };
    // Replay and subscribe in the same tick: no event can fall in between.
    if (from === undefined) {
      for (const object of store.list(rt, filter)) send("ADDED", object);
    } else {
      for (const event of store.history) if (event.rv > from) deliver(event);
    }
    store.listeners.add(deliver);
    watchResponses.add(res);
    const timers: NodeJS.Timeout[] = [];
    if (query.get("allowWatchBookmarks") === "true") {
      timers.push(
        setInterval(() => {
          send("BOOKMARK", { kind: rt.kind, apiVersion: apiVersionOf(rt), metadata: { resourceVersion: String(store.resourceVersion) } });
        }, bookmarkIntervalMs),
      );
    }
    if (timeoutSeconds !== null && Number(timeoutSeconds) > 0) {
      timers.push(setTimeout(() => res.end(), Number(timeoutSeconds) * 1000));
    }
    res.on("close", () => {
      for (const timer of timers) clearTimeout(timer);
      store.listeners.delete(deliver);
      watchResponses.delete(res);
    });
  }

  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  let listening = true;

  const kubeconfig = (): string =>
    stringify(
      {
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "kube-api-server", cluster: { server: url, "insecure-skip-tls-verify": true } }],
        users: [{ name: "test", user: { token } }],
        contexts: [{ name: "test", context: { cluster: "kube-api-server", user: "test", namespace: "default" } }],
        "current-context": "test",
      },
      { lineWidth: 0 },
    );

  const stop = async (): Promise<void> => {
    if (!listening) return;
    listening = false;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  };

  return {
    url,
    port,
    kubeconfig,
    loadKubeConfig() {
      const kc = new KubeConfig();
      kc.loadFromString(kubeconfig());
      return kc;
    },
    registerResource: (rt) => store.register(rt),
    store: {
      upsert: (object) => store.upsert(object),
      delete: (ref) => store.remove(ref),
      get(ref) {
        const rt = store.resourceFor(ref.apiVersion, ref.kind);
        return store.get(rt, rt.namespaced ? (ref.namespace ?? "default") : undefined, ref.name);
      },
      list: (apiVersion, kind, namespace) => store.list(store.resourceFor(apiVersion, kind), { namespace, labels: [], fields: [] }),
      resourceVersion: () => String(store.resourceVersion),
      subscribe(listener) {
        const deliver = (event: HistoryEvent) => listener(event.type, clone(event.object), event.previous && clone(event.previous));
        store.listeners.add(deliver);
        return () => store.listeners.delete(deliver);
      },
    },
    requests,
    compact: () => store.compact(),
    dropWatches() {
      for (const res of watchResponses) res.socket?.destroy();
    },
    openWatches: () => watchResponses.size,
    setAvailable(available, response = {}) {
      unavailable = available ? undefined : response;
    },
    stop,
    async start() {
      if (listening) return;
      server.listen(port, "127.0.0.1");
      await once(server, "listening");
      listening = true;
    },
    close: stop,
  };
}

async function readJson(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new StatusError(400, "BadRequest", `the request body is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
}
