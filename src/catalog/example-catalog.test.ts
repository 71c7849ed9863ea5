import { beforeEach, describe, expect, it } from "vitest";
import { loadExampleCatalog } from "../../test/support/example-catalog.js";
import { renderNow } from "../render/index.js";
import { validateParameters, type Catalog, type Plan } from "./index.js";

/** examples/catalog is what the embedded default serves: its templates must render real resources. */
const NAMESPACE = "gitops-broker-instances";
const INSTANCE_KEY = "0304b210-fcfd-11e8-a31b-b6001f10c97f";

let catalog: Catalog;
beforeEach(async () => {
  catalog = await loadExampleCatalog();
});

function planNamed(name: string): Plan {
  const plan = catalog.services[0]?.plans.find((p) => p.name === name);
  if (!plan) throw new Error(`no plan ${name}`);
  return plan;
}

function renderPostgresql(plan: Plan, parameters: Record<string, unknown> | undefined, bindingKeys: string[]) {
  const instance = {
    apiVersion: "gitops-broker.io/v1alpha1",
    kind: "ServiceInstance",
    metadata: { name: INSTANCE_KEY, namespace: NAMESPACE },
    spec: { instanceId: INSTANCE_KEY, serviceId: plan.serviceId, planId: plan.id, clusterId: "local", ...(parameters ? { parameters } : {}) },
    status: { operations: [] },
  };
  const bindings = bindingKeys.map((name) => ({ kind: "ServiceBinding", metadata: { name, namespace: NAMESPACE }, spec: {} }));
  const manifests = renderNow({
    action: "provision",
    templates: plan.templates,
    values: { service: catalog.services[0]!.raw, plan: plan.raw, instance, bindings },
    defaultNamespace: NAMESPACE,
    labels: {},
    planName: plan.name,
  });
  expect(manifests.map((m) => [m.apiVersion, m.kind, m.name, m.namespace])).toEqual([
    ["acid.zalan.do/v1", "postgresql", `pg-${INSTANCE_KEY}`, NAMESPACE],
  ]);
  return manifests[0]!.object as { spec: Record<string, unknown> };
}

describe("examples/catalog", () => {
  it("small (inline template) renders one server sized by the parameters, a user per binding", () => {
    const small = planNamed("small");
    const parameters = { version: "15", storageGB: 10 };
    expect(validateParameters(small, "service_instance.create", parameters)).toEqual([]);

    const { spec } = renderPostgresql(small, parameters, ["b-1", "de3dd272-fcfc-11e8-a31b-b6001f10c97f"]);
    expect(spec).toMatchObject({
      teamId: "pg",
      numberOfInstances: 1,
      postgresql: { version: "15" },
      volume: { size: "10Gi" },
      databases: { app: "app_owner" },
      users: { app_owner: ["createdb"], "b-1": [], "de3dd272-fcfc-11e8-a31b-b6001f10c97f": [] },
    });
  });

  it("medium (template file) renders two servers with the plan's defaults and no binding users", () => {
    const { spec } = renderPostgresql(planNamed("medium"), undefined, []);
    expect(spec).toMatchObject({
      numberOfInstances: 2,
      postgresql: { version: "16" },
      volume: { size: "20Gi" },
      resources: { requests: { cpu: "500m", memory: "1Gi" }, limits: { cpu: "1", memory: "4Gi" } },
    });
    expect(spec.users).toEqual({ app_owner: ["createdb"] });
  });

  it("binding users are least-privilege in both plans: LOGIN only, no SUPERUSER / CREATEDB / CREATEROLE", () => {
    for (const name of ["small", "medium"]) {
      const { spec } = renderPostgresql(planNamed(name), undefined, ["app-1"]);
      expect(spec.users).toEqual({ app_owner: ["createdb"], "app-1": [] });
    }
  });

  it("rejects parameters outside the plan's limits", () => {
    expect(validateParameters(planNamed("medium"), "service_instance.update", { storageGB: 200, version: "9.6" })).toEqual([
      { file: "request", path: "parameters.version", message: 'must be one of "14", "15", "16", "17"' },
      { file: "request", path: "parameters.storageGB", message: "must be <= 100" },
    ]);
  });
});
