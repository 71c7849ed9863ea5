import type { ErrorObject } from "ajv";

/** A located validation failure, before the file is known. */
export interface Failure {
  path: string;
  message: string;
}

/**
 * Appends one property name or array index to a display path: `spec`, `spec.templates[1]`,
 * `metadata["service-inventory-key"]`.
 */
export function joinPath(base: string, key: string | number): string {
  if (typeof key === "number") return `${base}[${key}]`;
  if (/^[A-Za-z_$][\w$]*$/.test(key)) return base === "" ? key : `${base}.${key}`;
  return `${base}[${JSON.stringify(key)}]`;
}

/**
 * Turns ajv errors (ajv created with `allErrors` and `verbose`) into path-indexed messages.
 * `base` prefixes every path (e.g. `parameters`). With `useTitles`, errors of string formats
 * (pattern, length) read `must be <title>` when the failing schema has a `title`: our repo
 * schemas title such definitions for this; user schemas are not trusted to.
 */
export function formatAjvErrors(
  errors: readonly ErrorObject[],
  data: unknown,
  base: string,
  useTitles: boolean,
): Failure[] {
  // A failing oneOf/anyOf reports each branch's errors too; the combined message says it better.
  const combinators = errors.filter((e) => e.keyword === "oneOf" || e.keyword === "anyOf").map((e) => `${e.schemaPath}/`);
  const out: Failure[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    if (combinators.some((p) => e.schemaPath.startsWith(p))) continue;
    // `if` fails with 'must match "then" schema': the then/else branch's own error says why.
    if (e.keyword === "if") continue;
    const f = formatOne(e, data, base, useTitles);
    const key = `${f.path}\u0000${f.message}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(f);
    }
  }
  return out;
}

function formatOne(e: ErrorObject, data: unknown, base: string, useTitles: boolean): Failure {
  const path = displayPath(e.instancePath, data, base);
  const params = e.params as Record<string, unknown>;
  const title = (e.parentSchema as { title?: unknown } | undefined)?.title;
  switch (e.keyword) {
    case "additionalProperties":
      return { path: joinPath(path, String(params.additionalProperty)), message: "is not allowed" };
    case "enum":
      return { path, message: `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ")}` };
    case "const":
      return { path, message: `must be ${JSON.stringify(params.allowedValue)}` };
    case "oneOf": {
      const names = requiredOnlyBranches(e.schema);
      if (names) return { path, message: `must have exactly one of ${names.map((n) => `'${n}'`).join(", ")}` };
      break;
    }
    case "pattern":
    case "minLength":
    case "maxLength":
    case "format":
      if (useTitles && typeof title === "string") return { path, message: `must be ${title}` };
      break;
  }
  return { path, message: e.message ?? `fails ${e.keyword}` };
}

/** `oneOf: [{required: [a]}, {required: [b]}]` → [a, b]; anything else → undefined. */
function requiredOnlyBranches(schema: unknown): string[] | undefined {
  if (!Array.isArray(schema)) return undefined;
  const names: string[] = [];
  for (const branch of schema as unknown[]) {
    const keys = typeof branch === "object" && branch !== null ? Object.keys(branch) : [];
    const required = (branch as { required?: unknown }).required;
    if (keys.length !== 1 || !Array.isArray(required) || required.length !== 1) return undefined;
    names.push(String(required[0]));
  }
  return names;
}

/** JSON pointer → display path, walking the data to tell array indexes from numeric-looking keys. */
function displayPath(pointer: string, data: unknown, base: string): string {
  let path = base;
  let node: unknown = data;
  for (const raw of pointer.split("/").slice(1)) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (Array.isArray(node)) {
      path = joinPath(path, Number(key));
      node = node[Number(key)];
    } else {
      path = joinPath(path, key);
      node = typeof node === "object" && node !== null ? (node as Record<string, unknown>)[key] : undefined;
    }
  }
  return path;
}
