import { Ajv, type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import { CatalogError, formatAjvErrors, type Problem } from "../errors/index.js";
import type { Plan } from "./types.js";

/** The three places of a plan's OSB `schemas` that hold a parameters schema. */
export type ParametersSchemaKey = "service_instance.create" | "service_instance.update" | "service_binding.create";

export const PARAMETERS_SCHEMA_KEYS: readonly ParametersSchemaKey[] = [
  "service_instance.create",
  "service_instance.update",
  "service_binding.create",
];

/** The parameters schema at `schemas.<scope>.<action>.parameters`, or undefined. */
export function parametersSchemaOf(schemas: Record<string, unknown> | undefined, key: ParametersSchemaKey): unknown {
  const [scope, action] = key.split(".") as [string, string];
  return field(field(field(schemas, scope), action), "parameters");
}

function field(o: unknown, key: string): unknown {
  return typeof o === "object" && o !== null && !Array.isArray(o) ? (o as Record<string, unknown>)[key] : undefined;
}

export type CompiledSchema = { validate: ValidateFunction } | { error: string; cause?: unknown };

// OSB: "Schemas MUST NOT be larger than 64kB", `$schema` MUST be present, platforms support
// draft-04 at least. We take draft-04/06/07 and validate them with ajv's draft-07 engine.
const MAX_SCHEMA_BYTES = 64 * 1024;
const SUPPORTED_SCHEMA = /^https?:\/\/json-schema\.org\/draft-0([467])\/schema#?$/;

// Compiled validators are shared across catalog reloads: by object for the plan at hand, by
// text for the same schema in a reloaded catalog. The ajv instance keeps every schema it
// compiled, so it is replaced (with the text cache) once that set grows large.
const MAX_CACHED_TEXTS = 500;
let ajv: Ajv | undefined;
const byText = new Map<string, CompiledSchema>();
const byObject = new WeakMap<object, CompiledSchema>();

/**
 * Checks a parameters schema against the OSB rules and compiles it. Returns the validator, or
 * why the schema is unusable (worded to follow its path, e.g. `...create.parameters: <error>`).
 */
export function compileParametersSchema(schema: unknown): CompiledSchema {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
    return { error: "must be a JSON schema object" };
  }
  const cached = byObject.get(schema);
  if (cached) return cached;
  const text = JSON.stringify(schema);
  let result = byText.get(text);
  if (!result) {
    result = compileChecked(schema as Record<string, unknown>, text);
    if (byText.size >= MAX_CACHED_TEXTS) {
      byText.clear();
      ajv = undefined;
    }
    byText.set(text, result);
  }
  byObject.set(schema, result);
  return result;
}

function compileChecked(schema: Record<string, unknown>, text: string): CompiledSchema {
  const declared = schema.$schema;
  if (declared === undefined) {
    return { error: "must declare its JSON schema version in `$schema` (draft-04, draft-06 or draft-07)" };
  }
  const draft = typeof declared === "string" ? SUPPORTED_SCHEMA.exec(declared)?.[1] : undefined;
  if (draft === undefined) {
    return { error: `$schema ${JSON.stringify(declared)} is not supported (use draft-04, draft-06 or draft-07)` };
  }
  if (Buffer.byteLength(text, "utf8") > MAX_SCHEMA_BYTES) {
    return { error: "is larger than 64kB" };
  }
  const external: string[] = [];
  const normalized = mapSchema(schema, (node) => {
    if (typeof node.$ref === "string" && !node.$ref.startsWith("#")) external.push(node.$ref);
    return draft === "4" ? fromDraft04(node) : node;
  }) as Record<string, unknown>;
  if (external.length > 0) {
    return { error: `must not contain external references ($ref ${external.map((r) => JSON.stringify(r)).join(", ")})` };
  }
  // The declared draft is handled above; without `$schema`/`$id` ajv compiles it as draft-07
  // and two plans declaring the same `$id` do not collide in the shared instance.
  delete normalized.$schema;
  delete normalized.$id;
  try {
    return { validate: parametersAjv().compile(normalized) };
  } catch (e) {
    return { error: `is not a valid JSON schema: ${e instanceof Error ? e.message : String(e)}`, cause: e };
  }
}

function parametersAjv(): Ajv {
  if (!ajv) {
    // strict: false and ECMA-262 (non-unicode) patterns: these are users' schemas written for
    // other validators; unknown keywords and formats are ignored the way most platforms do.
    ajv = new Ajv({ allErrors: true, verbose: true, strict: false, unicodeRegExp: false, logger: false });
    addFormats.default(ajv);
  }
  return ajv;
}

/** Draft-04 → draft-06+: boolean exclusiveMaximum/Minimum become numbers, `id` goes. */
function fromDraft04(node: Record<string, unknown>): Record<string, unknown> {
  const out = { ...node };
  if (typeof out.id === "string") delete out.id;
  for (const [limit, exclusive] of [
    ["maximum", "exclusiveMaximum"],
    ["minimum", "exclusiveMinimum"],
  ] as const) {
    if (out[exclusive] === true && typeof out[limit] === "number") {
      out[exclusive] = out[limit];
      delete out[limit];
    } else if (typeof out[exclusive] === "boolean") {
      delete out[exclusive];
    }
  }
  return out;
}

// Keywords whose values are schemas (draft-04..07), so that `fn` sees schemas and never data
// such as `default`, `enum` or `examples`.
const SCHEMA_MAP_KEYWORDS = new Set(["properties", "patternProperties", "definitions", "dependencies"]);
const SCHEMA_LIST_KEYWORDS = new Set(["allOf", "anyOf", "oneOf", "items"]);
const SCHEMA_KEYWORDS = new Set([
  "items",
  "additionalItems",
  "additionalProperties",
  "not",
  "if",
  "then",
  "else",
  "contains",
  "propertyNames",
]);

/** Copy of `schema` with `fn` applied to it and to every subschema. */
function mapSchema(schema: unknown, fn: (node: Record<string, unknown>) => Record<string, unknown>): unknown {
  if (!isObject(schema)) return schema;
  const out = fn({ ...schema });
  for (const [key, value] of Object.entries(out)) {
    if (SCHEMA_MAP_KEYWORDS.has(key) && isObject(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapSchema(v, fn)]));
    } else if (SCHEMA_LIST_KEYWORDS.has(key) && Array.isArray(value)) {
      out[key] = value.map((v) => mapSchema(v, fn));
    } else if (SCHEMA_KEYWORDS.has(key)) {
      out[key] = mapSchema(value, fn);
    }
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Validates request parameters against the plan's schema for `which`. Problems have file
 * `request` and paths like `parameters.foo` (message `must be string`) or `parameters` (message
 * `must have required property 'foo'`); the broker turns them into a 400 BadRequest.
 * No schema: anything goes. No parameters: validated as `{}`, except for an update, where
 * absent parameters mean "unchanged".
 * Throws CatalogError when the plan's schema itself is unusable (never for a plan that
 * loadCatalog returned: such a plan's file is left out).
 */
export function validateParameters(plan: Plan, which: ParametersSchemaKey, parameters: unknown): Problem[] {
  const schema = parametersSchemaOf(plan.schemas, which);
  if (schema === undefined) return [];
  if (parameters === undefined && which === "service_instance.update") return [];
  const compiled = compileParametersSchema(schema);
  if ("error" in compiled) {
    const problem = { file: plan.file, path: `spec.schemas.${which}.parameters`, message: compiled.error };
    throw new CatalogError([problem], { cause: compiled.cause });
  }
  const data = parameters ?? {};
  if (compiled.validate(data)) return [];
  return formatAjvErrors(compiled.validate.errors ?? [], data, "parameters", false).map((f) => ({ file: "request", ...f }));
}
