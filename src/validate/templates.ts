import { parse } from "yaml";
import { DEFAULT_INSTANCE_NAMESPACE, sensitiveParameters, type Catalog, type ClusterEntry, type Plan } from "../catalog/index.js";
import { RenderError, type Problem } from "../errors/index.js";
import { compileCheck, hasTemplate, render, renderText, type RenderValues } from "../render/index.js";
import { LABEL_BINDING, LABEL_INSTANCE, LABEL_MANAGED_BY, MANAGED_BY, RECORD_API_VERSION } from "../repo/index.js";
import { parseLabelSelector } from "../scheduler/index.js";
import { error, type ValidationProblem } from "./problems.js";

/**
 * Every template compiles; the manifest templates (provision, update, bind) render valid
 * manifests and `clusterSelector` a label selector that parses, for a sample instance and
 * binding built from the plan's parameter schemas. Text templates for the status watcher
 * (`sources`, `status`) read live objects and are only compiled.
 */

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A value the schema accepts: its default or first example or enum value, else a minimal one of its type. */
function sampleValue(schema: Json): unknown {
  const given = explicitSample(schema);
  if (given !== undefined) return given;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if ("const" in schema) return schema.const;
  switch (schema.type) {
    case "string":
      return "sample";
    case "integer":
    case "number":
      return typeof schema.minimum === "number" ? schema.minimum : 1;
    case "boolean":
      return false;
    case "array":
      return [];
    case "object":
      return sampleParameters(schema);
    default:
      return undefined;
  }
}

function explicitSample(schema: Json): unknown {
  if (schema.default !== undefined) return schema.default;
  return Array.isArray(schema.examples) ? schema.examples[0] : undefined;
}

/** Properties with a default or an example, and a sample of every required one. */
function sampleParameters(schema: unknown): Json {
  if (!isObject(schema) || !isObject(schema.properties)) return {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const out: Json = {};
  for (const [name, property] of Object.entries(schema.properties)) {
    if (!isObject(property)) continue;
    const value = required.has(name) ? sampleValue(property) : explicitSample(property);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** Every property and one item of every array, at any depth: where sensitive values could be. */
function everyProperty(schema: unknown): unknown {
  if (!isObject(schema)) return "sample";
  if (isObject(schema.properties)) return Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k, everyProperty(v)]));
  if (schema.type === "array" || schema.items !== undefined) return [everyProperty(schema.items)];
  return "sample";
}

/**
 * The `sensitive` value templates get (ADR 0007): a Secret reference for every sensitive
 * parameter the schema declares, so a template wiring `{{sensitive.adminPassword.name}}` renders
 * as it would after a request that sent it.
 */
function sampleSensitive(plan: Plan, scope: "service_instance" | "service_binding", owner: string): Json {
  const found = sensitiveParameters(plan, `${scope}.create`, everyProperty(parametersSchema(plan, scope)));
  return Object.fromEntries(found.map((f) => [f.at.join("."), { name: `${owner}-sensitive-sample-operation`, key: f.at.join(".") }]));
}

function parametersSchema(plan: Plan, scope: "service_instance" | "service_binding"): unknown {
  const s = plan.schemas?.[scope];
  const create = isObject(s) ? s.create : undefined;
  return isObject(create) ? create.parameters : undefined;
}

/** Values for the instance's templates; `binding` is what the bind template sees besides. */
function sampleValues(plan: Plan, service: Json, namespace: string): { values: RenderValues; binding: Json; bindingSensitive: Json } {
  const operations = [{ id: "sample-operation", action: "provision", at: "2000-01-01T00:00:00.000Z" }];
  const instance = {
    apiVersion: RECORD_API_VERSION,
    kind: "ServiceInstance",
    metadata: { name: "sample-instance", namespace },
    spec: {
      instanceId: "sample-instance",
      serviceId: plan.serviceId,
      planId: plan.id,
      clusterId: "sample-cluster",
      organizationGuid: "sample-organization",
      spaceGuid: "sample-space",
      context: { platform: "sample" },
      parameters: sampleParameters(parametersSchema(plan, "service_instance")),
    },
    status: { operations },
  };
  const binding = {
    apiVersion: RECORD_API_VERSION,
    kind: "ServiceBinding",
    metadata: { name: "sample-binding", namespace },
    spec: {
      bindingId: "sample-binding",
      instanceId: "sample-instance",
      serviceId: plan.serviceId,
      planId: plan.id,
      parameters: sampleParameters(parametersSchema(plan, "service_binding")),
    },
    status: { operations: [{ ...operations[0], action: "bind" }] },
  };
  const values = { service, plan: plan.raw, instance, bindings: [binding], sensitive: sampleSensitive(plan, "service_instance", "sample-instance") };
  return { values, binding, bindingSensitive: sampleSensitive(plan, "service_binding", "sample-binding") };
}

/** `catalog/x.yaml#spec.templates[0]` → file and path of the template. */
function located(p: Problem): Problem {
  const hash = p.file.indexOf("#");
  if (hash === -1) return p;
  const inTemplate = p.path ? `${p.path}: ` : "";
  return { file: p.file.slice(0, hash), path: p.file.slice(hash + 1), message: `${inTemplate}${p.message}` };
}

function renderProblems(e: unknown, plan: Plan): Problem[] {
  if (!(e instanceof RenderError)) throw e;
  const listed = e.data.problems;
  if (Array.isArray(listed)) return (listed as Problem[]).map(located);
  const source = typeof e.data.source === "string" ? e.data.source : plan.file;
  return [located({ file: source, path: "", message: e.message })];
}

/** The provisioned objects the `sources` template names, under its keys ({} when it fails). */
async function sampleSources(plan: Plan, values: RenderValues, objects: Json[]): Promise<Json> {
  if (!hasTemplate(plan.templates, "sources")) return {};
  let refs: unknown;
  try {
    refs = parse(await renderText({ action: "sources", templates: plan.templates, values, planName: plan.name }));
  } catch {
    return {};
  }
  if (!isObject(refs)) return {};
  const out: Json = {};
  for (const [key, ref] of Object.entries(refs)) {
    if (!isObject(ref) || ["service", "plan", "instance", "binding", "bindings"].includes(key)) continue;
    const found = objects.find((o) => o.apiVersion === ref.apiVersion && o.kind === ref.kind && isObject(o.metadata) && o.metadata.name === ref.name);
    if (found !== undefined) out[key] = structuredClone(found);
  }
  return out;
}

async function samplePlanProblems(plan: Plan, service: Json, namespace: string): Promise<Problem[]> {
  const { values, binding, bindingSensitive } = sampleValues(plan, service, namespace);
  const labels = { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_INSTANCE]: "sample-instance" };
  const problems: Problem[] = [];
  const attempt = async (fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (e) {
      problems.push(...renderProblems(e, plan));
    }
  };
  let provisioned: Json[] = [];
  for (const action of ["provision", "update", "bind"]) {
    if (!hasTemplate(plan.templates, action)) continue;
    const bind = action === "bind";
    await attempt(async () => {
      const bindValues = { ...values, binding, sensitive: bindingSensitive };
      // As the broker does: bind sees the instance's objects named by `sources` (materialize).
      const sources = bind ? await sampleSources(plan, bindValues, provisioned) : {};
      const manifests = await render({
        action,
        templates: plan.templates,
        values: bind ? { ...sources, ...bindValues } : values,
        defaultNamespace: namespace,
        labels: bind ? { ...labels, [LABEL_BINDING]: "sample-binding" } : labels,
        planName: plan.name,
      });
      if (action === "provision") provisioned = manifests.map((m) => m.object);
    });
  }
  if (hasTemplate(plan.templates, "clusterSelector")) {
    await attempt(async () => {
      const selector = (await renderText({ action: "clusterSelector", templates: plan.templates, values, planName: plan.name })).trim();
      try {
        parseLabelSelector(selector);
      } catch (e) {
        const t = plan.templates.find((x) => x.action === "clusterSelector")!;
        const reason = e instanceof Error ? e.message : String(e);
        const message = `plan ${plan.name}: template clusterSelector renders ${JSON.stringify(selector)}, not a label selector: ${reason}`;
        problems.push(located({ file: t.source, path: "", message }));
      }
    });
  }
  return problems.map((p) => ({ ...p, message: `with sample inputs: ${p.message}` }));
}

export async function templateProblems(catalog: Catalog, clusters: readonly ClusterEntry[]): Promise<ValidationProblem[]> {
  const namespace = clusters[0]?.namespace ?? DEFAULT_INSTANCE_NAMESPACE;
  const out: ValidationProblem[] = [];
  for (const service of catalog.services) {
    for (const plan of service.plans) {
      let compiles = true;
      for (const t of plan.templates) {
        // The engine of `type` (render's registry) checks the template; an unknown type is an error.
        const found = await compileCheck([t], plan.name);
        out.push(...found.map(error));
        if (found.length > 0) compiles = false;
      }
      if (compiles) out.push(...(await samplePlanProblems(plan, service.raw, namespace)).map(error));
    }
  }
  return out;
}
