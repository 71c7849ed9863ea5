import { parse } from "yaml";
import type { Plan } from "../catalog/index.js";
import { RenderError } from "../errors/index.js";
import { renderTextNow, type RenderValues } from "../render/index.js";
import type { BindingResult, OperationState } from "./types.js";

/**
 * The plan's `sources` and `status` templates, as in Service Fabrik: `sources` names the live
 * objects an instance (or binding) is judged by, `status` turns them into the state of each
 * operation. See docs/templates.md.
 */

/** A live object named by the `sources` template. */
export interface SourceRef {
  apiVersion: string;
  kind: string;
  name: string;
  /** Undefined: the instance's namespace (ignored for cluster-scoped kinds). */
  namespace?: string;
}

export type StatusAction = "provision" | "update" | "deprovision" | "bind" | "unbind";

/** One section of the `status` template's output. */
export interface StatusSection {
  state: OperationState;
  description?: string;
  error?: string;
  /** `response`, parsed: the bind credentials (and endpoints). */
  response?: BindingResult;
  dashboardUrl?: string;
  instanceUsable?: boolean;
  updateRepeatable?: boolean;
}

/** Values of the templates themselves: a source key may not shadow them. */
const RESERVED = new Set(["service", "plan", "instance", "binding", "bindings"]);
const STATES = new Set<string>(["in progress", "succeeded", "failed"]);

type Loose = Record<string, unknown>;
const isMap = (value: unknown): value is Loose => typeof value === "object" && value !== null && !Array.isArray(value);

function parsed(plan: Plan, action: string, text: string): unknown {
  try {
    return parse(text);
  } catch (error) {
    // Only the first line: the rest quotes the output, which may hold credentials.
    const reason = (error as Error).message.split("\n")[0];
    throw new RenderError(`plan ${plan.name}: template ${action} does not render YAML: ${reason}`);
  }
}

function invalid(plan: Plan, action: string, problems: string[]): RenderError {
  return new RenderError(`plan ${plan.name}: template ${action}: ${problems.join("; ")}`, { data: { plan: plan.name, action, problems } });
}

/** Renders `sources` (empty map when the plan has none). Throws RenderError for invalid output. */
export function renderSources(plan: Plan, values: RenderValues): Map<string, SourceRef> {
  const output = parsed(plan, "sources", renderTextNow({ action: "sources", templates: plan.templates, values, planName: plan.name }));
  const sources = new Map<string, SourceRef>();
  if (output === null || output === undefined) return sources;
  if (!isMap(output)) throw invalid(plan, "sources", ["must render a mapping of key to {apiVersion, kind, name, namespace}"]);
  const problems: string[] = [];
  for (const [key, ref] of Object.entries(output)) {
    if (ref === null) continue;
    if (RESERVED.has(key)) problems.push(`key ${key} is reserved (${[...RESERVED].join(", ")})`);
    const fields = isMap(ref) ? ref : {};
    const missing = ["apiVersion", "kind", "name"].filter((f) => typeof fields[f] !== "string" || fields[f] === "");
    if (missing.length > 0) problems.push(`${key}: ${missing.join(", ")} must be non-empty strings`);
    if (fields.namespace !== undefined && fields.namespace !== null && typeof fields.namespace !== "string") {
      problems.push(`${key}: namespace must be a string`);
    }
    if (problems.length > 0) continue;
    const source: SourceRef = { apiVersion: String(fields.apiVersion), kind: String(fields.kind), name: String(fields.name) };
    if (typeof fields.namespace === "string" && fields.namespace !== "") source.namespace = fields.namespace;
    sources.set(key, source);
  }
  if (problems.length > 0) throw invalid(plan, "sources", problems);
  return sources;
}

/**
 * Renders `status` and returns the section of `action`; undefined when the plan has no status
 * template or the output has no such section. Throws RenderError for invalid output.
 */
export function renderStatus(plan: Plan, action: StatusAction, values: RenderValues): StatusSection | undefined {
  const output = parsed(plan, "status", renderTextNow({ action: "status", templates: plan.templates, values, planName: plan.name }));
  if (output === null || output === undefined) return undefined;
  if (!isMap(output)) throw invalid(plan, "status", ["must render a mapping of operation to {state, description, ...}"]);
  const section = output[action];
  if (section === undefined || section === null) return undefined;
  if (!isMap(section)) throw invalid(plan, "status", [`${action} must be a mapping`]);

  const problems: string[] = [];
  const where = (f: string) => `${action}.${f}`;
  const state: unknown = section.state;
  if (typeof state !== "string" || !STATES.has(state)) problems.push(`${where("state")} must be one of ${[...STATES].join(", ")}`);
  const strings = { description: section.description, error: section.error, dashboardUrl: section.dashboardUrl };
  for (const [f, v] of Object.entries(strings)) if (v !== undefined && v !== null && typeof v !== "string") problems.push(`${where(f)} must be a string`);
  for (const f of ["instanceUsable", "updateRepeatable"]) {
    if (section[f] !== undefined && section[f] !== null && typeof section[f] !== "boolean") problems.push(`${where(f)} must be true or false`);
  }
  const response = parseResponse(section.response, where("response"), problems);
  if (problems.length > 0) throw invalid(plan, "status", problems);

  const out: StatusSection = { state: state as OperationState };
  for (const [f, v] of Object.entries(strings)) if (typeof v === "string" && v !== "") out[f as keyof typeof strings] = v;
  if (typeof section.instanceUsable === "boolean") out.instanceUsable = section.instanceUsable;
  if (typeof section.updateRepeatable === "boolean") out.updateRepeatable = section.updateRepeatable;
  if (response !== undefined) out.response = response;
  return out;
}

/** `response`: a JSON text (Service Fabrik) or a mapping, with `credentials` and optional `endpoints`. */
function parseResponse(value: unknown, where: string, problems: string[]): BindingResult | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  let response: unknown = value;
  if (typeof value === "string") {
    try {
      response = JSON.parse(value) as unknown;
    } catch {
      // Never quote the text: it holds credentials.
      problems.push(`${where} is not valid JSON`);
      return undefined;
    }
  }
  if (!isMap(response)) {
    problems.push(`${where} must be a mapping (or its JSON) with credentials`);
    return undefined;
  }
  const result: BindingResult = {};
  if (response.credentials !== undefined) {
    if (isMap(response.credentials)) result.credentials = response.credentials;
    else problems.push(`${where}.credentials must be a mapping`);
  }
  if (response.endpoints !== undefined) {
    if (Array.isArray(response.endpoints)) result.endpoints = response.endpoints;
    else problems.push(`${where}.endpoints must be a list`);
  }
  return result;
}
