import * as fs from "node:fs/promises";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { tempDirTree, type TempDirTree } from "../../test/support/dir-tree.js";
import { loadCatalog, parseApiVersion, toOsbCatalog, type Catalog, type Plan, type Service } from "./index.js";

const SF = fileURLToPath(new URL("./testdata/service-fabrik/", import.meta.url));
const EXAMPLES = fileURLToPath(new URL("../../examples/catalog/", import.meta.url));

let repo: TempDirTree;
beforeEach(async () => {
  repo = await tempDirTree("osb-catalog-");
});
afterEach(async () => {
  await repo.remove();
});

async function exampleCatalog(): Promise<Catalog> {
  await fs.cp(EXAMPLES, path.join(repo.root, "catalog"), { recursive: true });
  const { catalog, problems } = await loadCatalog(repo.tree);
  expect(problems).toEqual([]);
  return catalog;
}

async function sfCatalog(): Promise<Catalog> {
  for (const name of ["sfservice-postgresql.yaml", "sfplan-postgresql-v9.6-xxsmall.yaml"]) {
    await repo.write({ [`catalog/${name}`]: await fs.readFile(path.join(SF, name)) });
  }
  const { catalog, problems } = await loadCatalog(repo.tree);
  expect(problems).toEqual([]);
  return catalog;
}

const parameters = (minGB: number, maxGB: number, defaultGB: number) => ({
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  additionalProperties: false,
  properties: {
    version: { description: "PostgreSQL major version (default 16)", type: "string", enum: ["14", "15", "16", "17"] },
    storageGB: {
      description: `Disk size in GB (default ${defaultGB}); it can grow, never shrink`,
      type: "integer",
      minimum: minGB,
      maximum: maxGB,
    },
  },
});

describe("toOsbCatalog", () => {
  it("serves the example catalog at 2.17 with exactly the OSB fields", async () => {
    const body = toOsbCatalog(await exampleCatalog(), { major: 2, minor: 17 });

    // Key order matters too: it is the order of the JSON body.
    expect(JSON.stringify(body, null, 2)).toBe(
      JSON.stringify(
        {
          services: [
            {
              name: "postgresql",
              id: "4de30cf9-a981-48c9-9acf-909805db46bc",
              description: "PostgreSQL clusters managed by the Zalando postgres operator",
              tags: ["postgresql", "relational", "sql"],
              bindable: true,
              instances_retrievable: true,
              bindings_retrievable: true,
              metadata: {
                displayName: "PostgreSQL",
                longDescription:
                  "A PostgreSQL cluster per service instance, run by the Zalando postgres operator. Each binding gets its own database user; the operator keeps its password in a Kubernetes Secret next to the cluster.",
                providerDisplayName: "gitops-broker",
                documentationUrl: "https://postgres-operator.readthedocs.io/",
              },
              plan_updateable: true,
              plans: [
                {
                  id: "3e517a96-85f4-42fe-b798-a84ba877f984",
                  name: "medium",
                  description: "PostgreSQL primary and replica, 1 CPU / 4 GB RAM each, 20-100 GB disk",
                  metadata: {
                    displayName: "Medium",
                    bullets: ["2 servers (primary and streaming replica)", "1 CPU, 4 GB RAM each", "20-100 GB disk (parameter storageGB, default 20)"],
                  },
                  free: false,
                  schemas: {
                    service_instance: { create: { parameters: parameters(20, 100, 20) }, update: { parameters: parameters(20, 100, 20) } },
                  },
                  maximum_polling_duration: 3600,
                  maintenance_info: { version: "1.0.0", description: "PostgreSQL cluster with two servers" },
                  binding_rotatable: true,
                },
                {
                  id: "55a0d659-3419-4ed1-adf3-19f9d0f5ba4b",
                  name: "small",
                  description: "One PostgreSQL server, 0.5 CPU / 1 GB RAM, 1-20 GB disk",
                  metadata: {
                    displayName: "Small",
                    bullets: ["1 server, no replica", "0.5 CPU, 1 GB RAM", "1-20 GB disk (parameter storageGB, default 5)"],
                  },
                  free: true,
                  schemas: {
                    service_instance: { create: { parameters: parameters(1, 20, 5) }, update: { parameters: parameters(1, 20, 5) } },
                  },
                  binding_rotatable: true,
                },
              ],
            },
          ],
        },
        null,
        2,
      ),
    );
  });

  it("omits the fields a 2.13 platform does not know", async () => {
    const body = toOsbCatalog(await exampleCatalog(), { major: 2, minor: 13 });
    const [service] = body.services as Record<string, unknown>[];
    const [medium] = service?.plans as Record<string, unknown>[];

    expect(Object.keys(service ?? {})).toEqual(["name", "id", "description", "tags", "bindable", "metadata", "plan_updateable", "plans"]);
    expect(Object.keys(medium ?? {})).toEqual(["id", "name", "description", "metadata", "free", "schemas"]);
  });

  it("adds instances/bindings_retrievable at 2.14 and plan-level fields at 2.15", async () => {
    const catalog = await sfCatalog();
    const at = (minor: number) => {
      const [service] = toOsbCatalog(catalog, { major: 2, minor }).services as Record<string, unknown>[];
      return { service: Object.keys(service ?? {}), plan: Object.keys((service?.plans as object[])[0] ?? {}) };
    };

    expect(at(12).plan).not.toContain("schemas");
    expect(at(13).service).not.toContain("instances_retrievable");
    expect(at(14).service).toEqual(expect.arrayContaining(["instances_retrievable", "bindings_retrievable"]));
    expect(at(14).plan).not.toContain("plan_updateable");
    expect(at(15).plan).toContain("plan_updateable");
  });

  it("adds binding_rotatable at 2.17 only, when the plan declares it (also false)", async () => {
    const catalog = await exampleCatalog();
    const plansAt = (minor: number) => ((toOsbCatalog(catalog, { major: 2, minor }).services as Record<string, unknown>[])[0]?.plans ?? []) as Record<string, unknown>[];
    expect(plansAt(17).map((p) => p.binding_rotatable)).toEqual([true, true]);
    for (const minor of [13, 15, 16]) expect(plansAt(minor).map((p) => Object.hasOwn(p, "binding_rotatable"))).toEqual([false, false]);
  });

  it("leaves binding_rotatable out for a plan that does not declare it", async () => {
    expect(JSON.stringify(toOsbCatalog(await sfCatalog(), { major: 2, minor: 17 }))).not.toContain("binding_rotatable");
  });

  it("writes Service Fabrik's camelCase fields in OSB snake_case and keeps SF-only fields out", async () => {
    const body = toOsbCatalog(await sfCatalog(), { major: 2, minor: 17 });
    const [service] = body.services as Record<string, unknown>[];
    const [plan] = service?.plans as Record<string, unknown>[];

    expect(service).toMatchObject({
      instances_retrievable: true,
      bindings_retrievable: true,
      plan_updateable: true,
      requires: [],
      dashboard_client: {
        id: "postgresql-dashboard-client-id",
        secret: "postgresql-dashboard-client-secret",
        redirect_uri: "https://sap.com/",
      },
    });
    expect(Object.keys(plan ?? {})).toEqual(["id", "name", "description", "metadata", "free", "bindable", "plan_updateable", "schemas"]);
    const text = JSON.stringify(body);
    for (const sfOnly of ["context", "templates", "manager", "serviceId", "planUpdatable", "dashboardClient", "redirectUri", "Retrievable"]) {
      expect(text).not.toContain(`${sfOnly}"`);
    }
  });

  it("emits allow_context_updates from 2.15 and leaves unset optional fields out", () => {
    const plan: Plan = {
      id: "p",
      name: "p",
      description: "plan",
      serviceId: "s",
      maintenanceInfo: { version: "2.0.0" },
      async: false,
      asyncBinding: false,
      context: { secret: "stays in the broker" },
      templates: [],
      file: "catalog/s.yaml",
      raw: {},
    };
    const service: Service = {
      id: "s",
      name: "s",
      description: "service",
      bindable: false,
      instancesRetrievable: false,
      bindingsRetrievable: false,
      allowContextUpdates: true,
      planUpdateable: false,
      dashboardClient: { id: "client", secret: "secret" },
      plans: [plan],
      file: "catalog/s.yaml",
      raw: {},
    };
    const catalog: Catalog = { services: [service], serviceById: () => service, planById: () => plan };

    expect(toOsbCatalog(catalog, { major: 2, minor: 15 })).toEqual({
      services: [
        {
          name: "s",
          id: "s",
          description: "service",
          bindable: false,
          instances_retrievable: false,
          bindings_retrievable: false,
          allow_context_updates: true,
          dashboard_client: { id: "client", secret: "secret" },
          plan_updateable: false,
          plans: [{ id: "p", name: "p", description: "plan", maintenance_info: { version: "2.0.0" } }],
        },
      ],
    });
    expect(JSON.stringify(toOsbCatalog(catalog, { major: 2, minor: 14 }))).not.toContain("allow_context_updates");
  });

  it("returns copies: changing the body leaves the catalog alone", async () => {
    const catalog = await exampleCatalog();
    const body = toOsbCatalog(catalog, { major: 2, minor: 17 });
    const [service] = body.services as { metadata: Record<string, unknown>; plans: { schemas: Record<string, unknown> }[] }[];
    service!.metadata.displayName = "changed";
    delete service!.plans[0]!.schemas.service_instance;

    const again = JSON.stringify(toOsbCatalog(catalog, { major: 2, minor: 17 }));
    expect(again).toContain('"displayName":"PostgreSQL"');
    expect(again).toContain('"service_instance"');
  });
});

describe("parseApiVersion", () => {
  it.each([
    ["2.17", { major: 2, minor: 17 }],
    ["2.13", { major: 2, minor: 13 }],
    [" 2.9 ", { major: 2, minor: 9 }],
    ["3.0", { major: 3, minor: 0 }],
  ])("reads %j", (header, expected) => {
    expect(parseApiVersion(header)).toEqual(expected);
  });

  it.each([undefined, "", "2", "2.", "v2.17", "2.17.1", "two.seventeen", "2.x"])("rejects %j", (header) => {
    expect(parseApiVersion(header)).toBeNull();
  });
});
