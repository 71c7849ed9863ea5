import { LineCounter, parseAllDocuments, type YAMLError } from "yaml";
import type { Problem } from "../errors/index.js";
import {
  groupOf,
  isApiVersion,
  isClusterScoped,
  isDns1123Label,
  isDns1123Subdomain,
  isKind,
  isLabelValue,
  qualifiedNameProblem,
} from "./kubernetes.js";
import type { Manifest } from "./types.js";
import { manifestYaml } from "./yaml-output.js";

/** One non-empty document of a template's output, not yet checked. */
export interface RenderedDocument {
  value: unknown;
  /** Template source, for problems. */
  source: string;
  /** `documents[i]`, counting every document of the template's output. */
  path: string;
}

export interface ObjectDefaults {
  defaultNamespace: string;
  labels: Record<string, string>;
}

interface Checked {
  object: Record<string, unknown>;
  group: string;
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string | undefined;
  source: string;
  path: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Splits one template's output into documents. Empty documents (`---` alone, comments only,
 * `null`) are dropped. YAML errors and warnings are reported with their line in the output and
 * the text of that line; warnings count, because they mark values (`on`, `yes`, `2024-01-01`)
 * that Kubernetes' YAML 1.1 reader would read differently from us, and unknown tags.
 */
export function splitDocuments(text: string, source: string, problems: Problem[]): RenderedDocument[] {
  const lineCounter = new LineCounter();
  const lines = text.split("\n");
  const yamlProblem = (err: YAMLError): Problem => {
    const { line } = lineCounter.linePos(err.pos[0]);
    const quoted = JSON.stringify((lines[line - 1] ?? "").trimEnd());
    const hint = err.message.includes("may be parsed as either") ? " (Kubernetes reads YAML 1.1; quote the string)" : "";
    return { file: source, path: `line ${line}`, message: `${err.message}${hint}: ${quoted}` };
  };
  const documents: RenderedDocument[] = [];
  parseAllDocuments(text, { lineCounter, prettyErrors: false, compat: "yaml-1.1" }).forEach((doc, i) => {
    const path = `documents[${i}]`;
    if (doc.errors.length > 0 || doc.warnings.length > 0) {
      problems.push(...doc.errors.map(yamlProblem), ...doc.warnings.map(yamlProblem));
      return;
    }
    let value: unknown;
    try {
      value = doc.toJS();
    } catch (e) {
      // The yaml package refuses alias expansions that explode in size ("billion laughs").
      problems.push({ file: source, path, message: e instanceof Error ? e.message : String(e) });
      return;
    }
    if (value !== null && value !== undefined) documents.push({ value, source, path });
  });
  return documents;
}

/**
 * Checks every document, applies the defaults (namespace, broker labels), refuses duplicates and
 * names the files. All problems are collected; manifests are only meaningful when none were.
 */
export function toManifests(documents: RenderedDocument[], defaults: ObjectDefaults, problems: Problem[]): Manifest[] {
  const unique = new Map<string, Checked>();
  for (const c of documents.flatMap((d) => check(d, defaults, problems) ?? [])) {
    const identity = `${c.group}/${c.kind}/${c.namespace ?? ""}/${c.name}`;
    const first = unique.get(identity);
    if (first === undefined) unique.set(identity, c);
    else {
      const where = first.source === c.source ? first.path : `${first.path} of ${first.source}`;
      problems.push({ file: c.source, path: c.path, message: `${describe(c)} is rendered twice (also ${where})` });
    }
  }
  return withFileNames([...unique.values()], problems);
}

function describe(c: Checked): string {
  return `${c.apiVersion} ${c.kind} ${c.namespace === undefined ? "" : `${c.namespace}/`}${c.name}`;
}

function check(doc: RenderedDocument, defaults: ObjectDefaults, problems: Problem[]): Checked | undefined {
  const { value: object, source, path } = doc;
  if (!isRecord(object)) {
    problems.push({ file: source, path, message: `is a ${Array.isArray(object) ? "list" : typeof object}, not a Kubernetes object (a mapping)` });
    return undefined;
  }
  const before = problems.length;
  const problem = (field: string, message: string) => problems.push({ file: source, path: `${path}.${field}`, message });

  const { apiVersion, kind, metadata } = object;
  if (typeof apiVersion !== "string" || !isApiVersion(apiVersion)) problem("apiVersion", `${show(apiVersion)} is not an apiVersion ([group/]version)`);
  if (typeof kind !== "string" || !isKind(kind)) problem("kind", `${show(kind)} is not a kind (letters and digits, starting with a letter)`);
  if (!isRecord(metadata)) {
    problem("metadata", "is required and must be a mapping");
    return undefined;
  }
  const { name, namespace, labels, annotations } = metadata;
  if (typeof name !== "string" || !isDns1123Subdomain(name)) {
    problem("metadata.name", `${show(name)} is not a DNS-1123 subdomain (lowercase alphanumerics, '-' and '.', at most 253 characters; required)`);
  }
  if (namespace !== undefined && (typeof namespace !== "string" || !isDns1123Label(namespace))) {
    problem("metadata.namespace", `${show(namespace)} is not a DNS-1123 label (lowercase alphanumerics and '-', at most 63 characters)`);
  }
  checkStringMap(labels, "metadata.labels", problem, true);
  checkStringMap(annotations, "metadata.annotations", problem, false);
  if (problems.length > before || typeof apiVersion !== "string" || typeof kind !== "string" || typeof name !== "string") return undefined;

  const group = groupOf(apiVersion);
  const clusterScoped = isClusterScoped(group, kind);
  if (clusterScoped && namespace !== undefined) problem("metadata.namespace", `${kind} is cluster-scoped and must not have a namespace`);
  if (group === "" && kind === "Secret") {
    for (const field of ["data", "stringData"]) {
      if (hasContent(object[field])) {
        problem(field, `renders Secret ${name} with ${field}; secrets must come from the cluster (created by the operator or synced by a secret store), a credential is never written to Git`);
      }
    }
  }
  if (problems.length > before) return undefined;

  const ns = clusterScoped ? undefined : typeof namespace === "string" ? namespace : defaults.defaultNamespace;
  const meta: Record<string, unknown> = { ...metadata, labels: { ...(isRecord(labels) ? labels : {}), ...defaults.labels } };
  if (ns !== undefined) meta.namespace = ns;
  return { object: { ...object, metadata: meta }, group, apiVersion, kind, name, namespace: ns, source, path };
}

function checkStringMap(value: unknown, field: string, problem: (field: string, message: string) => void, labelValues: boolean): void {
  if (value === undefined || value === null) return;
  if (!isRecord(value)) {
    problem(field, "must be a mapping of strings");
    return;
  }
  for (const [key, v] of Object.entries(value)) {
    const keyProblem = qualifiedNameProblem(key);
    if (keyProblem !== undefined) problem(`${field}[${JSON.stringify(key)}]`, keyProblem);
    else if (typeof v !== "string") problem(`${field}[${JSON.stringify(key)}]`, `${show(v)} must be a string (quote it)`);
    else if (labelValues && !isLabelValue(v)) {
      problem(`${field}[${JSON.stringify(key)}]`, `${show(v)} is not a label value (at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric)`);
    }
  }
}

function hasContent(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  return isRecord(value) ? Object.keys(value).length > 0 : true;
}

function show(value: unknown): string {
  return value === undefined ? "missing" : JSON.stringify(value);
}

/**
 * `<kind>-<name>.yaml`. Objects that would share that name (same kind and name in another
 * namespace or group) get `<kind>-<name>_<namespace>_<group>.yaml` instead: `_` occurs in no
 * Kubernetes name, namespace or group, so the parts cannot run into each other.
 */
function withFileNames(checked: Checked[], problems: Problem[]): Manifest[] {
  const base = (c: Checked) => `${c.kind.toLowerCase()}-${c.name}`;
  const uses = new Map<string, number>();
  for (const c of checked) uses.set(base(c), (uses.get(base(c)) ?? 0) + 1);
  const files = new Map<string, Checked>();
  return checked.map((c) => {
    const fileName = uses.get(base(c)) === 1 ? `${base(c)}.yaml` : `${base(c)}_${c.namespace ?? ""}_${c.group || "core"}.yaml`;
    // Only kinds that differ in case alone (`Foo` and `foo` in one group) can still meet here.
    const other = files.get(fileName);
    if (other !== undefined) problems.push({ file: c.source, path: c.path, message: `${describe(c)} and ${describe(other)} would share the file ${fileName}` });
    files.set(fileName, c);
    return { apiVersion: c.apiVersion, kind: c.kind, name: c.name, namespace: c.namespace, fileName, yaml: manifestYaml(c.object), object: c.object };
  });
}
