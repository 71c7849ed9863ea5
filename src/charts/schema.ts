import { Ajv, type ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

/** One chart's values.schema.json and the values it sees (from the module). */
export interface SchemaCheck {
  chart: string;
  schema?: unknown;
  values: Record<string, unknown>;
  /** The schema is not JSON: Helm's parse error. */
  error?: string;
}

// Helm validates with a JSON Schema library that follows `$schema` (draft-04 to 2020-12) and
// takes 2020-12 when it is absent. ajv: draft-07 (which also reads draft-04/06 schemas written
// for it) when `$schema` names an older draft, else 2020-12.
const OLD_DRAFT = /^https?:\/\/json-schema\.org\/draft-0[4-7]\/schema#?$/;

let draft7: Ajv | undefined;
let draft2020: Ajv2020 | undefined;
const compiled = new Map<string, ValidateFunction | string>();
const MAX_CACHED = 200;

function compile(schema: unknown): ValidateFunction | string {
  const key = JSON.stringify(schema);
  const hit = compiled.get(key);
  if (hit !== undefined) return hit;
  const old = typeof schema === "object" && schema !== null && OLD_DRAFT.test((schema as { $schema?: string }).$schema ?? "");
  let out: ValidateFunction | string;
  try {
    if (old) {
      if (draft7 === undefined) {
        draft7 = new Ajv({ allErrors: true, strict: false, validateSchema: false });
        addFormats.default(draft7);
      }
      const copy = { ...(schema as Record<string, unknown>) };
      delete copy.$schema;
      out = draft7.compile(copy);
    } else {
      if (draft2020 === undefined) {
        draft2020 = new Ajv2020({ allErrors: true, strict: false });
        addFormats.default(draft2020);
      }
      out = draft2020.compile(schema as object);
    }
  } catch (e) {
    out = e instanceof Error ? e.message : String(e);
  }
  if (compiled.size >= MAX_CACHED) {
    compiled.clear();
    draft7 = undefined;
    draft2020 = undefined;
  }
  compiled.set(key, out);
  return out;
}

/**
 * Helm's check of values against each chart's values.schema.json, in its words where they can
 * be matched: "values don't meet the specifications of the schema(s) in the following
 * chart(s):" then, per chart, its name and one line per violation (`- at '/path': message`, the
 * message being ajv's rather than Helm's validator's). Undefined when every chart's values fit.
 */
export function schemaViolations(checks: readonly SchemaCheck[]): string | undefined {
  let text = "";
  for (const c of checks) {
    if (c.error !== undefined) {
      text += `${c.chart}:\n${c.error}\n`;
      continue;
    }
    const validate = compile(c.schema);
    if (typeof validate === "string") {
      text += `${c.chart}:\n${validate}\n`;
      continue;
    }
    if (validate(c.values)) continue;
    const lines = (validate.errors ?? []).map((e) => `- at '${e.instancePath}': ${e.message ?? "is invalid"}${paramsText(e.params)}`);
    text += `${c.chart}:\n${lines.join("\n")}\n`;
  }
  return text === "" ? undefined : `values don't meet the specifications of the schema(s) in the following chart(s):\n${text}`;
}

function paramsText(params: Record<string, unknown>): string {
  if (typeof params.allowedValues !== "undefined") return ` (${JSON.stringify(params.allowedValues)})`;
  if (typeof params.additionalProperty === "string") return ` '${params.additionalProperty}'`;
  return "";
}
