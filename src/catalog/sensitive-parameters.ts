import { parametersSchemaOf, type ParametersSchemaKey } from "./parameters.js";
import type { Plan } from "./types.js";

/**
 * Sensitive parameters: values that a plan's parameters schema marks `writeOnly: true` or
 * `format: password`, at any depth (properties, patternProperties, additionalProperties, items,
 * allOf/anyOf/oneOf, if/then/else, local `$ref`s). Found by walking the schema along the data, so
 * only values actually present count. See docs/adr/0007-sensitive-parameters.md.
 */

export interface SensitiveParameter {
  /** Where the value is, e.g. `parameters.adminPassword` or `parameters.users[0].password`. */
  path: string;
  /** What marks it sensitive in the schema. */
  marker: "writeOnly" | "format: password";
  /** The same place as keys and array indexes below `parameters`, e.g. `["users", 0, "password"]`. */
  at: (string | number)[];
}

type Json = Record<string, unknown>;
type Segment = string | number;

interface Found {
  segments: Segment[];
  marker: SensitiveParameter["marker"];
}

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function markerOf(schema: Json): SensitiveParameter["marker"] | undefined {
  if (schema.writeOnly === true) return "writeOnly";
  if (schema.format === "password") return "format: password";
  return undefined;
}

/** A local `$ref` (`#/definitions/x`, `#/$defs/x`), resolved against the root schema. */
function resolveRef(root: Json, ref: string): unknown {
  if (ref === "#") return root;
  if (!ref.startsWith("#/")) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split("/")) {
    const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    node = isObject(node) ? node[key] : Array.isArray(node) ? node[Number(key)] : undefined;
  }
  return node;
}

function patternMatches(pattern: string, key: string): boolean {
  try {
    return new RegExp(pattern).test(key);
  } catch {
    // A pattern ajv could compile but this engine cannot: the schema loaded, so treat it as no match.
    return false;
  }
}

/**
 * Walks `schema` along `data`. `seen` holds the schema nodes already applied to this data node,
 * so `$ref` and combinator cycles end; it starts afresh for every child value.
 */
function walk(root: Json, schema: unknown, data: unknown, at: Segment[], seen: Set<object>, out: Found[]): void {
  if (!isObject(schema) || seen.has(schema) || data === undefined) return;
  seen.add(schema);
  const marker = markerOf(schema);
  if (marker) {
    out.push({ segments: at, marker });
    return;
  }
  if (typeof schema.$ref === "string") walk(root, resolveRef(root, schema.$ref), data, at, seen, out);
  for (const keyword of ["allOf", "anyOf", "oneOf"]) {
    const list = schema[keyword];
    if (Array.isArray(list)) for (const sub of list) walk(root, sub, data, at, seen, out);
  }
  // Either branch may apply: both are searched (a marker in either makes the value sensitive).
  for (const keyword of ["then", "else"]) walk(root, schema[keyword], data, at, seen, out);

  if (isObject(data)) {
    const properties = isObject(schema.properties) ? schema.properties : {};
    const patterns = isObject(schema.patternProperties) ? schema.patternProperties : {};
    const dependencies = isObject(schema.dependencies) ? schema.dependencies : {};
    for (const [key, value] of Object.entries(data)) {
      const child = [...at, key];
      let matched = Object.hasOwn(properties, key);
      if (matched) walk(root, properties[key], value, child, new Set(), out);
      for (const [pattern, sub] of Object.entries(patterns)) {
        if (!patternMatches(pattern, key)) continue;
        matched = true;
        walk(root, sub, value, child, new Set(), out);
      }
      if (!matched) walk(root, schema.additionalProperties, value, child, new Set(), out);
      // A schema dependency applies to the whole object when its property is present.
      walk(root, dependencies[key], data, at, seen, out);
    }
  } else if (Array.isArray(data)) {
    const items = schema.items;
    data.forEach((value, i) => {
      const sub: unknown = Array.isArray(items) ? (i < items.length ? items[i] : schema.additionalItems) : items;
      walk(root, sub, value, [...at, i], new Set(), out);
    });
  }
}

function formatPath(segments: Segment[]): string {
  return segments
    .map((s) => (typeof s === "number" ? `[${s}]` : /^[A-Za-z_$][\w$]*$/.test(s) ? `.${s}` : `[${JSON.stringify(s)}]`))
    .join("")
    .replace(/^\./, "");
}

function find(plan: Plan, which: ParametersSchemaKey, parameters: unknown): Found[] {
  const schema = parametersSchemaOf(plan.schemas, which);
  if (!isObject(schema) || parameters === undefined) return [];
  const out: Found[] = [];
  walk(schema, schema, parameters, ["parameters"], new Set(), out);
  const unique = new Map(out.map((f) => [formatPath(f.segments), f]));
  return [...unique.values()];
}

/** The values in `parameters` that the plan's `which` schema marks sensitive, in data order. */
export function sensitiveParameters(plan: Plan, which: ParametersSchemaKey, parameters: unknown): SensitiveParameter[] {
  return find(plan, which, parameters).map((f) => ({ path: formatPath(f.segments), marker: f.marker, at: f.segments.slice(1) }));
}

/**
 * A copy of `parameters` without the values that any of the `which` schemas marks sensitive:
 * object members are left out, array elements become null (so the others keep their index).
 */
export function withoutSensitiveParameters(
  plan: Plan,
  which: readonly ParametersSchemaKey[],
  parameters: Record<string, unknown>,
): Record<string, unknown> {
  const copy = structuredClone(parameters);
  for (const key of which) {
    for (const { segments } of find(plan, key, copy)) {
      // segments[0] is "parameters", the root itself.
      if (segments.length === 1) return {};
      let node: unknown = copy;
      for (const s of segments.slice(1, -1)) node = (node as Record<Segment, unknown> | undefined)?.[s];
      const last = segments[segments.length - 1]!;
      if (Array.isArray(node) && typeof last === "number") node[last] = null;
      else if (isObject(node)) delete node[last as string];
    }
  }
  return copy;
}
