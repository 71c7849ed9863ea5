import type { ApiVersion, Catalog, Plan, Service } from "./types.js";

/**
 * The OSB minor version (2.x) that introduced each optional catalog field, from the spec's
 * release notes (openservicebrokerapi/servicebroker release-notes.md, spec.md):
 * free 2.2, dashboard_client 2.3, plan bindable 2.11, schemas 2.13, instances_retrievable and
 * bindings_retrievable 2.14 (with the GET endpoints), and in 2.15: allow_context_updates
 * (updatable context), plan-level plan_updateable, maximum_polling_duration, maintenance_info.
 * 2.16 added no catalog field; 2.17 added the plan's binding_rotatable.
 */
const SINCE = {
  free: 2,
  dashboard_client: 3,
  plan_bindable: 11,
  schemas: 13,
  instances_retrievable: 14,
  bindings_retrievable: 14,
  allow_context_updates: 15,
  plan_plan_updateable: 15,
  maximum_polling_duration: 15,
  maintenance_info: 15,
  binding_rotatable: 17,
} as const;

/** `X-Broker-API-Version: MAJOR.MINOR` → {major, minor}; null when absent or malformed. */
export function parseApiVersion(header: string | undefined): ApiVersion | null {
  const m = /^\s*(\d+)\.(\d+)\s*$/.exec(header ?? "");
  return m ? { major: Number(m[1]), minor: Number(m[2]) } : null;
}

/** The platforms of Service Fabrik's routes, `/<platform>/v2`. */
export const PLATFORMS = ["cf", "k8s", "sm"] as const;
export type Platform = (typeof PLATFORMS)[number];

/** Service Fabrik's `supported_platform` when a plan or service does not say (its catalog.js). */
const DEFAULT_PLATFORMS: readonly string[] = ["cf", "sm"];

/** Service Fabrik hid every service and plan whose name contains this from the catalog. */
const INTERNAL_NAME = "-fabrik-internal";

/** Whether a service or plan is listed to `platform` (undefined: `/v2`, every platform). */
function offered(item: { name: string; supportedPlatforms?: string[] }, platform: Platform | undefined): boolean {
  if (item.name.includes(INTERNAL_NAME)) return false;
  return platform === undefined || (item.supportedPlatforms ?? DEFAULT_PLATFORMS).includes(platform);
}

/**
 * The `GET /v2/catalog` body for a platform speaking `version`: OSB field names, only the fields
 * the spec defines (Service Fabrik's context, manager and templates stay in the broker), and no
 * field newer than `version`. Objects are copies: callers may serialize or change them freely.
 * Names containing `-fabrik-internal` are left out; with a `platform` (`/cf/v2` and the like),
 * so is what its `supported_platform` does not name, and a service left without plans.
 */
export function toOsbCatalog(catalog: Catalog, version: ApiVersion, platform?: Platform): { services: unknown[] } {
  const has = (minor: number): boolean => version.major > 2 || (version.major === 2 && minor <= version.minor);
  const services = catalog.services
    .filter((s) => offered(s, platform))
    .map((s) => ({ ...s, plans: s.plans.filter((p) => offered(p, platform)) }))
    .filter((s) => s.plans.length > 0);
  return { services: services.map((s) => osbService(s, has)) };
}

type Has = (minor: number) => boolean;

function osbService(s: Service, has: Has): Record<string, unknown> {
  const out: Record<string, unknown> = { name: s.name, id: s.id, description: s.description };
  if (s.tags) out.tags = [...s.tags];
  if (s.requires) out.requires = [...s.requires];
  out.bindable = s.bindable;
  if (has(SINCE.instances_retrievable)) out.instances_retrievable = s.instancesRetrievable;
  if (has(SINCE.bindings_retrievable)) out.bindings_retrievable = s.bindingsRetrievable;
  if (s.allowContextUpdates !== undefined && has(SINCE.allow_context_updates)) {
    out.allow_context_updates = s.allowContextUpdates;
  }
  if (s.metadata) out.metadata = structuredClone(s.metadata);
  if (s.dashboardClient && has(SINCE.dashboard_client)) {
    const { id, secret, redirect_uri } = s.dashboardClient;
    out.dashboard_client = redirect_uri === undefined ? { id, secret } : { id, secret, redirect_uri };
  }
  out.plan_updateable = s.planUpdateable;
  out.plans = s.plans.map((p) => osbPlan(p, has));
  return out;
}

function osbPlan(p: Plan, has: Has): Record<string, unknown> {
  const out: Record<string, unknown> = { id: p.id, name: p.name, description: p.description };
  if (p.metadata) out.metadata = structuredClone(p.metadata);
  if (p.free !== undefined && has(SINCE.free)) out.free = p.free;
  if (p.bindable !== undefined && has(SINCE.plan_bindable)) out.bindable = p.bindable;
  if (p.planUpdateable !== undefined && has(SINCE.plan_plan_updateable)) out.plan_updateable = p.planUpdateable;
  if (p.schemas && has(SINCE.schemas)) out.schemas = structuredClone(p.schemas);
  if (p.maximumPollingDuration !== undefined && has(SINCE.maximum_polling_duration)) {
    out.maximum_polling_duration = p.maximumPollingDuration;
  }
  if (p.maintenanceInfo && has(SINCE.maintenance_info)) {
    const { version, description } = p.maintenanceInfo;
    out.maintenance_info = description === undefined ? { version } : { version, description };
  }
  if (p.bindingRotatable !== undefined && has(SINCE.binding_rotatable)) out.binding_rotatable = p.bindingRotatable;
  return out;
}
