import { createHash } from "node:crypto";
import { isDns1123Subdomain } from "./kubernetes.js";
import type { RenderValues } from "./types.js";

/**
 * The values a Service Fabrik template saw, built from ours: `.service` and `.plan` are the
 * catalog documents (SFService / SFPlan), `.instance` and `.binding` the SFServiceInstance and
 * SFServiceBinding the inter-operator read from the API server, every other key as we have it
 * (live objects named by `sources`, `sensitive`). Pure.
 *
 * How SF built them (cloudfoundry/service-fabrik-broker v0.27.1): the broker created the
 * SFServiceInstance from the provision request, named by the instance id (its sha224 when the id
 * is not a DNS-1123 subdomain), labels `plan_id`, `service_id` and the context's `platform`,
 * `organization_guid`, `space_guid`, `origin`, `subaccount_id` (trimmed), spec = the request
 * body with its top-level keys camelCased (context and parameters as sent). The inter-operator
 * read it into its Go type (unknown spec keys dropped, empty strings omitted) and gave
 * templates its JSON: so every number in these four objects is a float64 in Go (the module
 * decodes them so; see go/gotemplate).
 *
 * Where we differ: `metadata.namespace` is the namespace the broker renders into (SF used
 * `sf-<id>`); the fields only the API server sets (uid, resourceVersion, creationTimestamp) and
 * `status` are not there, since no template of SF's samples reads them and we would have to
 * invent them.
 */

type Json = Record<string, unknown>;

export const SF_API_VERSION = "osb.servicefabrik.io/v1alpha1";
const CONTEXT_LABELS = ["platform", "organization_guid", "space_guid", "origin", "subaccount_id"];

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
/** `v` when it is a non-empty string, else undefined. */
export const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** The value at `path` in a loosely typed record (a parsed record or SF object); undefined past a non-object. */
export const field = (o: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>((v, k) => (typeof v === "object" && v !== null ? (v as Record<string, unknown>)[k] : undefined), o);

/** SF's getKubernetesName: the id itself when it is a valid name, else its sha224 in hex. */
export function serviceFabrikName(id: string): string {
  return isDns1123Subdomain(id) ? id : createHash("sha224").update(id).digest("hex");
}

/** Keys whose value is undefined are left out, as Go's `omitempty` left out empty fields. */
function compact(o: Json): Json {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

export function sfServiceInstance(record: Json): Json {
  const spec = isObject(record.spec) ? record.spec : {};
  const metadata = isObject(record.metadata) ? record.metadata : {};
  const id = str(spec.instanceId) ?? str(metadata.name) ?? "";
  const context = isObject(spec.context) ? spec.context : undefined;
  const labels: Record<string, string> = {};
  if (str(spec.planId)) labels.plan_id = String(spec.planId).trim();
  if (str(spec.serviceId)) labels.service_id = String(spec.serviceId).trim();
  for (const key of CONTEXT_LABELS) if (context && str(context[key])) labels[key] = String(context[key]).trim();
  return {
    apiVersion: SF_API_VERSION,
    kind: "SFServiceInstance",
    metadata: compact({ name: serviceFabrikName(id), namespace: str(metadata.namespace), labels, finalizers: ["broker.servicefabrik.io"] }),
    spec: compact({
      instanceId: str(spec.instanceId),
      serviceId: spec.serviceId ?? "",
      planId: spec.planId ?? "",
      context: spec.context ?? undefined,
      organizationGuid: str(spec.organizationGuid),
      spaceGuid: str(spec.spaceGuid),
      parameters: spec.parameters ?? undefined,
      clusterId: str(spec.clusterId),
    }),
  };
}

export function sfServiceBinding(record: Json): Json {
  const spec = isObject(record.spec) ? record.spec : {};
  const metadata = isObject(record.metadata) ? record.metadata : {};
  const id = str(spec.bindingId) ?? str(metadata.name) ?? "";
  return {
    apiVersion: SF_API_VERSION,
    kind: "SFServiceBinding",
    metadata: compact({
      name: serviceFabrikName(id),
      namespace: str(metadata.namespace),
      labels: str(spec.instanceId) ? { instance_guid: String(spec.instanceId) } : {},
      finalizers: ["broker.servicefabrik.io"],
    }),
    // SF's Go type has `id` (never filled: the body's binding_id camelCases to bindingId).
    spec: compact({
      instanceId: spec.instanceId ?? "",
      planId: spec.planId ?? "",
      serviceId: spec.serviceId ?? "",
      appGuid: str(spec.appGuid),
      bindResource: spec.bindResource ?? undefined,
      context: spec.context ?? undefined,
      parameters: spec.parameters ?? undefined,
      // Ours: OSB 2.17's predecessor_binding_id, camelCased as Service Fabrik camelCased a bind body (ADR 0033).
      predecessorBindingId: str(spec.predecessorBindingId),
    }),
  };
}

/**
 * The values of a Service Fabrik template. `bindings` (ours: every live binding record) has no
 * SF counterpart and is left out; other keys pass through.
 */
export function serviceFabrikValues(values: RenderValues): Json {
  const { service, plan, instance, binding, bindings: _bindings, ...rest } = values;
  const out: Json = { ...rest, service, plan };
  if (isObject(instance)) out.instance = instance.kind === "SFServiceInstance" ? instance : sfServiceInstance(instance);
  if (isObject(binding)) out.binding = binding.kind === "SFServiceBinding" ? binding : sfServiceBinding(binding);
  return out;
}
