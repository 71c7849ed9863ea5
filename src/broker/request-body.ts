import { BadRequestError } from "../errors/index.js";
import type { ApiVersion } from "../catalog/index.js";
import type { MaintenanceInfoRecord } from "../repo/index.js";

/**
 * Shape checks of OSB request bodies and query strings. Every failure is a 400 whose description
 * names the offending field; nothing here looks at the catalog or the repository.
 */

type Json = Record<string, unknown>;

export function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

class Fields {
  constructor(
    private readonly body: Json,
    private readonly where: string,
  ) {}

  private fail(field: string, want: string): never {
    throw new BadRequestError(`${this.where}: ${field} must be ${want}, got ${typeName(this.body[field])}`);
  }

  requiredString(field: string): string {
    const v = this.body[field];
    if (v === undefined) throw new BadRequestError(`${this.where}: ${field} is required`);
    if (typeof v !== "string" || v.length === 0) this.fail(field, "a non-empty string");
    return v;
  }

  optionalString(field: string): string | undefined {
    const v = this.body[field];
    if (v === undefined) return undefined;
    if (typeof v !== "string" || v.length === 0) this.fail(field, "a non-empty string");
    return v;
  }

  optionalObject(field: string): Json | undefined {
    const v = this.body[field];
    if (v === undefined || v === null) return undefined;
    if (!isObject(v)) this.fail(field, "an object");
    return v;
  }

  /**
   * `maintenance_info` exists from OSB 2.15 on: an older platform's is an unknown field, ignored
   * (the spec says unknown fields MUST be ignored). An empty object counts as none, as Service
   * Fabrik accepts it (its issue #1324; the OSB checker sends one on every request).
   */
  optionalMaintenanceInfo(field: string, apiVersion: ApiVersion | undefined): MaintenanceInfoRecord | undefined {
    if (apiVersion !== undefined && apiVersion.major === 2 && apiVersion.minor < 15) return undefined;
    const v = this.optionalObject(field);
    if (v === undefined || Object.keys(v).length === 0) return undefined;
    if (typeof v.version !== "string" || v.version.length === 0) {
      throw new BadRequestError(`${this.where}: ${field}.version must be a non-empty string`);
    }
    return typeof v.description === "string" ? { version: v.version, description: v.description } : { version: v.version };
  }
}

function bodyObject(body: unknown, where: string): Json {
  if (!isObject(body)) {
    throw new BadRequestError(`${where}: the request body must be a JSON object, got ${body === undefined ? "no body" : typeName(body)}`);
  }
  return body;
}

export interface ProvisionBody {
  serviceId: string;
  planId: string;
  organizationGuid: string;
  spaceGuid: string;
  context: Json | undefined;
  parameters: Json | undefined;
  maintenanceInfo: MaintenanceInfoRecord | undefined;
}

export function parseProvisionBody(body: unknown, apiVersion?: ApiVersion): ProvisionBody {
  const f = new Fields(bodyObject(body, "provision"), "provision");
  return {
    serviceId: f.requiredString("service_id"),
    planId: f.requiredString("plan_id"),
    // Deprecated in favour of context, but still REQUIRED by the spec (v2.17).
    organizationGuid: f.requiredString("organization_guid"),
    spaceGuid: f.requiredString("space_guid"),
    context: f.optionalObject("context"),
    parameters: f.optionalObject("parameters"),
    maintenanceInfo: f.optionalMaintenanceInfo("maintenance_info", apiVersion),
  };
}

export interface UpdateBody {
  serviceId: string;
  planId: string | undefined;
  context: Json | undefined;
  parameters: Json | undefined;
  maintenanceInfo: MaintenanceInfoRecord | undefined;
  previousPlanId: string | undefined;
}

export function parseUpdateBody(body: unknown, apiVersion?: ApiVersion): UpdateBody {
  const where = "update";
  const f = new Fields(bodyObject(body, where), where);
  const previous = f.optionalObject("previous_values");
  const pf = previous ? new Fields(previous, `${where}: previous_values`) : undefined;
  return {
    serviceId: f.requiredString("service_id"),
    planId: f.optionalString("plan_id"),
    context: f.optionalObject("context"),
    parameters: f.optionalObject("parameters"),
    maintenanceInfo: f.optionalMaintenanceInfo("maintenance_info", apiVersion),
    previousPlanId: pf?.optionalString("plan_id"),
  };
}

export interface BindBody {
  serviceId: string;
  planId: string;
  context: Json | undefined;
  parameters: Json | undefined;
  bindResource: Json | undefined;
  appGuid: string | undefined;
  /** OSB 2.17 binding rotation: the binding of the same instance the new one succeeds. */
  predecessorBindingId: string | undefined;
}

export function parseBindBody(body: unknown, apiVersion?: ApiVersion): BindBody {
  const f = new Fields(bodyObject(body, "bind"), "bind");
  const bindResource = f.optionalObject("bind_resource");
  if (bindResource) {
    const bf = new Fields(bindResource, "bind: bind_resource");
    bf.optionalString("app_guid");
    bf.optionalString("route");
  }
  return {
    serviceId: f.requiredString("service_id"),
    planId: f.requiredString("plan_id"),
    context: f.optionalObject("context"),
    parameters: f.optionalObject("parameters"),
    bindResource,
    appGuid: f.optionalString("app_guid"),
    // An older platform's predecessor_binding_id is an unknown field: ignored (OSB: MUST ignore).
    predecessorBindingId: apiVersion !== undefined && apiVersion.major === 2 && apiVersion.minor < 17 ? undefined : f.optionalString("predecessor_binding_id"),
  };
}

/** `service_id` and `plan_id` query parameters, REQUIRED on deprovision and unbind. */
export function requiredQueryIds(query: Record<string, unknown>, where: string): { serviceId: string; planId: string } {
  const get = (name: string): string => {
    const v = query[name];
    if (typeof v !== "string" || v.length === 0) {
      throw new BadRequestError(`${where}: query parameter ${name} is required`);
    }
    return v;
  };
  return { serviceId: get("service_id"), planId: get("plan_id") };
}

export function optionalQueryString(query: Record<string, unknown>, name: string): string | undefined {
  const v = query[name];
  return typeof v === "string" && v.length > 0 ? v : undefined;
}

/** Only `accepts_incomplete=true` opts in; anything else (absent, false) does not. */
export function acceptsIncomplete(query: Record<string, unknown>): boolean {
  return query.accepts_incomplete === "true";
}

/** Canonical JSON (sorted keys) equality, for "identical request" checks. */
export function sameJson(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (isObject(v)) {
    return `{${Object.keys(v)
      .filter((k) => v[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v ?? null);
}
