import type { Plan } from "../catalog/index.js";
import { UnprocessableEntityError } from "../errors/index.js";
import type { InstanceRecord } from "../repo/index.js";

/** `${ path.to.value }` as lodash's interpolate delimiter writes it. */
const INTERPOLATION = /\$\{\s*([^}]*?)\s*\}/g;
const PROPERTY_PATH = /^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*$/;

/**
 * The OSB `dashboard_url` of an instance from its plan's `manager.settings.dashboard_url_template`
 * (base64), as Service Fabrik's getDashboardUrl rendered it: a lodash-style template whose
 * `${...}` see `plan` (the SFPlan spec), `instance` (the OSB provision request as stored,
 * snake_case, with `cluster_id`), `instance_id`, `plan_id`, `service_id`, `organization_guid`, `space_guid` and
 * `context`. Undefined when the plan has no template. Only property paths are interpolated
 * (lodash evaluated any JavaScript expression; the catalog must not run code in the broker); a
 * missing property renders as "" as lodash's `== null ? ''` did. Throws UnprocessableEntityError
 * when the template is not base64, uses an expression, or renders no absolute http(s) URL (Service
 * Fabrik's 422 for a bad dashboard URL).
 */
export function dashboardUrl(plan: Plan, instance: InstanceRecord): string | undefined {
  if (plan.dashboardUrlTemplate === undefined) return undefined;
  const where = `plan ${plan.name} manager.settings.dashboard_url_template`;
  const encoded = plan.dashboardUrlTemplate.replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded) || encoded.length % 4 === 1) {
    throw new UnprocessableEntityError(`${where} is not base64`);
  }
  const template = Buffer.from(encoded, "base64").toString("utf8");
  const spec = instance.spec;
  const scope: Record<string, unknown> = {
    plan: (plan.raw.spec ?? {}),
    instance: {
      instance_id: spec.instanceId,
      service_id: spec.serviceId,
      plan_id: spec.planId,
      organization_guid: spec.organizationGuid,
      space_guid: spec.spaceGuid,
      context: spec.context ?? {},
      parameters: spec.parameters ?? {},
      cluster_id: spec.clusterId,
    },
    instance_id: spec.instanceId,
    plan_id: spec.planId,
    service_id: spec.serviceId,
    organization_guid: spec.organizationGuid,
    space_guid: spec.spaceGuid,
    context: spec.context ?? {},
  };
  const url = template.replace(INTERPOLATION, (_whole, expression: string) => {
    if (!PROPERTY_PATH.test(expression)) {
      throw new UnprocessableEntityError(`${where} interpolates "${expression}": only property paths such as instance_id or plan.name are supported`);
    }
    let value: unknown = scope;
    for (const key of expression.split(".")) {
      value = value !== null && typeof value === "object" && Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
    }
    if (value === undefined || value === null) return "";
    // Numbers and booleans print as lodash printed them; an object prints as JSON, not [object Object].
    return typeof value === "string" ? value : (JSON.stringify(value) ?? "");
  });
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UnprocessableEntityError(`${where} renders "${url}", which is not a valid URL`);
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    throw new UnprocessableEntityError(`${where} renders "${url}", which is not an http(s) URL`);
  }
  return url;
}
