import * as fs from "node:fs/promises";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { tempDirTree, type TempDirTree } from "../../test/support/dir-tree.js";
import { loadCatalog } from "./index.js";

const SF = fileURLToPath(new URL("./testdata/service-fabrik/", import.meta.url));
const EXAMPLES = fileURLToPath(new URL("../../examples/catalog/", import.meta.url));

const SF_SERVICE_ID = "24731fb8-7b84-5f57-914f-c3d55d793dd4";
const SF_PLAN_ID = "39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88";
const EXAMPLE_SERVICE_ID = "4de30cf9-a981-48c9-9acf-909805db46bc";

let repo: TempDirTree;
beforeEach(async () => {
  repo = await tempDirTree("catalog-");
});
afterEach(async () => {
  await repo.remove();
});

async function copySf(...names: string[]): Promise<void> {
  for (const name of names) {
    await repo.write({ [`catalog/${name}`]: await fs.readFile(path.join(SF, name)) });
  }
}

async function copyExamples(): Promise<void> {
  await fs.cp(EXAMPLES, path.join(repo.root, "catalog"), { recursive: true });
}

/** A valid Plan document for the example service, with overrides of its spec. */
function planYaml(spec: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: "gitops-broker.io/v1alpha1",
    kind: "Plan",
    spec: {
      id: "extra-plan",
      name: "extra",
      description: "an extra plan",
      serviceId: EXAMPLE_SERVICE_ID,
      templates: [{ action: "provision", type: "handlebars", content: "{}" }],
      ...spec,
    },
  });
}

describe("loadCatalog: Service Fabrik input", () => {
  it("loads the SFService and SFPlan fixtures unchanged, gotemplate templates as they are", async () => {
    await copySf("sfservice-postgresql.yaml", "sfplan-postgresql-v9.6-xxsmall.yaml");
    const { catalog, problems } = await loadCatalog(repo.tree);

    expect(problems).toEqual([]);
    const service = catalog.serviceById(SF_SERVICE_ID);
    expect(service).toMatchObject({
      name: "postgresql",
      bindable: true,
      instancesRetrievable: true,
      bindingsRetrievable: true,
      planUpdateable: true,
      tags: ["postgresql"],
      requires: [],
      dashboardClient: {
        id: "postgresql-dashboard-client-id",
        secret: "postgresql-dashboard-client-secret",
        redirect_uri: "https://sap.com/",
      },
      file: "catalog/sfservice-postgresql.yaml",
    });
    // The description anchor is reused as metadata.longDescription.
    expect(service?.metadata?.longDescription).toBe(service?.description);

    const plan = catalog.planById(SF_PLAN_ID);
    expect(service?.plans).toEqual([plan]);
    expect(plan).toMatchObject({
      name: "v9.6-xxsmall",
      serviceId: SF_SERVICE_ID,
      free: true,
      bindable: true,
      planUpdateable: true,
      async: true,
      asyncBinding: false,
      context: { namePrefix: "sapcp", version: 9.6, diskGB: 20 },
    });
    expect(plan?.templates.map((t) => [t.action, t.type, t.source])).toEqual([
      ["sources", "gotemplate", "catalog/sfplan-postgresql-v9.6-xxsmall.yaml#spec.templates[0]"],
      ["status", "gotemplate", "catalog/sfplan-postgresql-v9.6-xxsmall.yaml#spec.templates[1]"],
      ["provision", "gotemplate", "catalog/sfplan-postgresql-v9.6-xxsmall.yaml#spec.templates[2]"],
      ["bind", "gotemplate", "catalog/sfplan-postgresql-v9.6-xxsmall.yaml#spec.templates[3]"],
      ["unbind", "gotemplate", "catalog/sfplan-postgresql-v9.6-xxsmall.yaml#spec.templates[4]"],
    ]);
    expect(plan?.templates[3]?.content).toContain("{{- $_ := set $users $bindingID (list \"superuser\") }}");
    // raw is the document as written, with the anchors resolved (templates see plan.spec.*).
    expect(plan?.raw).toMatchObject({ kind: "SFPlan", metadata: { labels: { serviceId: SF_SERVICE_ID, planId: SF_PLAN_ID } } });
  });

  it("reports the original broker's records as documents that do not belong in catalog/", async () => {
    await copySf("sfservice-postgresql.yaml", "sfplan-postgresql-v9.6-xxsmall.yaml", "sfserviceinstance.yaml");
    const { catalog, problems } = await loadCatalog(repo.tree);

    expect(problems).toEqual([
      {
        file: "catalog/sfserviceinstance.yaml",
        path: "kind",
        message: '"SFServiceInstance" is not a catalog document (expected SFService, Service, SFPlan or Plan)',
      },
    ]);
    expect(catalog.services).toHaveLength(1);
  });
});

describe("loadCatalog: the example catalog", () => {
  it("loads with no problems, resolving the template file", async () => {
    await copyExamples();
    const { catalog, problems } = await loadCatalog(repo.tree);

    expect(problems).toEqual([]);
    expect(catalog.services.map((s) => s.name)).toEqual(["postgresql"]);
    const service = catalog.serviceById(EXAMPLE_SERVICE_ID);
    expect(service?.plans.map((p) => [p.name, p.async])).toEqual([
      ["medium", true],
      ["small", false],
    ]);

    const [medium, small] = service?.plans ?? [];
    expect(medium?.maintenanceInfo).toEqual({ version: "1.0.0", description: "PostgreSQL cluster with two servers" });
    expect(medium?.maximumPollingDuration).toBe(3600);
    expect(medium?.templates[0]).toEqual({
      action: "provision",
      type: "handlebars",
      content: await fs.readFile(path.join(EXAMPLES, "templates/postgresql.hbs"), "utf8"),
      source: "catalog/templates/postgresql.hbs",
    });
    const liveStatus = [
      ["sources", "handlebars", "catalog/templates/postgresql-sources.hbs"],
      ["status", "handlebars", "catalog/templates/postgresql-status.hbs"],
      ["metadata", "handlebars", "catalog/templates/postgresql-metadata.hbs"],
    ];
    expect(medium?.templates.slice(1).map((t) => [t.action, t.type, t.source])).toEqual(liveStatus);
    expect(small?.templates.map((t) => [t.action, t.type, t.source])).toEqual([
      ["provision", "handlebars", "catalog/postgresql/plans/small.yaml#spec.templates[0]"],
      ...liveStatus,
    ]);
    expect(small?.templates[0]?.content).toContain("kind: postgresql");
  });
});

describe("loadCatalog: problems", () => {
  it("leaves out a broken file, located by file and path, and loads the rest", async () => {
    await copyExamples();
    await repo.write({
      "catalog/broken.yaml": planYaml({
        bindable: "yes",
        planUpdatabel: true,
        templates: [
          { action: "provision", type: "handlebars", content: "{}" },
          { action: "bind", type: "handlebars", content: "{}", path: "catalog/templates/postgresql.hbs" },
          { action: "unbind", type: "handlebars" },
        ],
      }),
    });
    const { catalog, problems } = await loadCatalog(repo.tree);

    expect(problems).toEqual([
      { file: "catalog/broken.yaml", path: "spec.planUpdatabel", message: "is not allowed" },
      { file: "catalog/broken.yaml", path: "spec.bindable", message: "must be boolean" },
      { file: "catalog/broken.yaml", path: "spec.templates[1]", message: "must have exactly one of 'content', 'contentEncoded', 'path'" },
      { file: "catalog/broken.yaml", path: "spec.templates[2]", message: "must have exactly one of 'content', 'contentEncoded', 'path'" },
    ]);
    expect(catalog.planById("extra-plan")).toBeUndefined();
    expect(catalog.serviceById(EXAMPLE_SERVICE_ID)?.plans.map((p) => p.name)).toEqual(["medium", "small"]);
  });

  it("reports a template path that names no file, and leaves the plan out", async () => {
    await copyExamples();
    await repo.write({
      "catalog/extra.yaml": planYaml({
        templates: [
          { action: "provision", type: "handlebars", path: "catalog/templates/postgresql.hbs" },
          { action: "bind", type: "handlebars", path: "catalog/templates/missing.hbs" },
        ],
      }),
    });
    const { catalog, problems } = await loadCatalog(repo.tree);

    expect(problems).toEqual([
      { file: "catalog/extra.yaml", path: "spec.templates[1].path", message: 'no file "catalog/templates/missing.hbs" in the repository' },
    ]);
    expect(catalog.planById("extra-plan")).toBeUndefined();
  });

  it("rejects template paths that leave the repository", async () => {
    await copyExamples();
    await repo.write({
      "catalog/extra.yaml": planYaml({ templates: [{ action: "provision", type: "handlebars", path: "catalog/../../etc/passwd" }] }),
    });
    const { problems } = await loadCatalog(repo.tree);

    expect(problems).toEqual([
      {
        file: "catalog/extra.yaml",
        path: "spec.templates[0].path",
        message: "must be a repo-relative path without '.' or '..' segments (e.g. catalog/templates/postgresql.hbs)",
      },
    ]);
  });

  it("does not read a template file ending in .yaml as a catalog document", async () => {
    await copyExamples();
    await repo.write({
      "catalog/extra.yaml": planYaml({ templates: [{ action: "provision", type: "handlebars", path: "catalog/templates/cm.yaml" }] }),
      "catalog/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{instance.metadata.name}}\n",
    });
    const { catalog, problems } = await loadCatalog(repo.tree);

    expect(problems).toEqual([]);
    expect(catalog.planById("extra-plan")?.templates[0]?.content).toContain("kind: ConfigMap");
  });

  it("reads multi-document files with anchors and merge keys", async () => {
    await copyExamples();
    await repo.write({
      "catalog/more.yaml": [
        "apiVersion: gitops-broker.io/v1alpha1",
        "kind: Plan",
        "spec:",
        "  id: more-1",
        "  name: more-1",
        "  description: more",
        `  serviceId: ${EXAMPLE_SERVICE_ID}`,
        "  context:",
        "    base: &base {teamId: pg, numberOfInstances: 1}",
        "    merged:",
        "      <<: *base",
        "      numberOfInstances: 3",
        "  templates: []",
        "---",
        planYaml({ id: "more-2", name: "more-2" }),
      ].join("\n"),
    });
    const { catalog, problems } = await loadCatalog(repo.tree);

    expect(problems).toEqual([]);
    expect(catalog.planById("more-1")?.context.merged).toEqual({ teamId: "pg", numberOfInstances: 3 });
    expect(catalog.planById("more-2")?.templates[0]?.source).toBe("catalog/more.yaml#documents[1].spec.templates[0]");
  });

  it("decodes Service Fabrik's contentEncoded templates", async () => {
    await copyExamples();
    const content = "apiVersion: v1\nkind: ConfigMap\n";
    await repo.write({
      "catalog/extra.yaml": planYaml({
        templates: [{ action: "provision", type: "handlebars", contentEncoded: Buffer.from(content).toString("base64") }],
      }),
    });
    const { catalog, problems } = await loadCatalog(repo.tree);

    expect(problems).toEqual([]);
    expect(catalog.planById("extra-plan")?.templates[0]).toMatchObject({ content, source: "catalog/extra.yaml#spec.templates[0]" });
  });

  it("reports duplicate plan ids in every file involved and leaves all of them out", async () => {
    await copyExamples();
    await repo.write({
      "catalog/a.yaml": planYaml({ id: "dup", name: "a" }),
      "catalog/b.yaml": planYaml({ id: "dup", name: "b" }),
    });
    const { catalog, problems } = await loadCatalog(repo.tree);

    expect(problems).toEqual([
      { file: "catalog/a.yaml", path: "spec.id", message: 'duplicate plan id "dup" (also in catalog/b.yaml)' },
      { file: "catalog/b.yaml", path: "spec.id", message: 'duplicate plan id "dup" (also in catalog/a.yaml)' },
    ]);
    expect(catalog.planById("dup")).toBeUndefined();
    expect(catalog.serviceById(EXAMPLE_SERVICE_ID)?.plans).toHaveLength(2);
  });

  it("reports a plan name used twice in one service, and a plan id used again in the same file", async () => {
    await copyExamples();
    const other = planYaml({ id: "other", name: "small" });
    const twice = (name: string) => planYaml({ id: "twice", name });
    await repo.write({ "catalog/extra.yaml": `${other}\n---\n${twice("x")}\n---\n${twice("y")}\n` });
    const { problems } = await loadCatalog(repo.tree);

    expect(problems).toEqual([
      {
        file: "catalog/extra.yaml",
        path: "documents[1].spec.id",
        message: 'duplicate plan id "twice" (also in catalog/extra.yaml#documents[2])',
      },
      {
        file: "catalog/extra.yaml",
        path: "documents[2].spec.id",
        message: 'duplicate plan id "twice" (also in catalog/extra.yaml#documents[1])',
      },
      {
        file: "catalog/extra.yaml",
        path: "documents[0].spec.name",
        message: `duplicate plan name "small" in service "${EXAMPLE_SERVICE_ID}" (also in catalog/postgresql/plans/small.yaml)`,
      },
      {
        file: "catalog/postgresql/plans/small.yaml",
        path: "spec.name",
        message: `duplicate plan name "small" in service "${EXAMPLE_SERVICE_ID}" (also in catalog/extra.yaml#documents[0])`,
      },
    ]);
  });

  it("reports a plan of an unknown service, then the service its file left without plans", async () => {
    await copySf("sfservice-postgresql.yaml");
    await repo.write({ "catalog/orphan.yaml": planYaml({ serviceId: "nope" }) });
    const { catalog, problems } = await loadCatalog(repo.tree);

    expect(problems).toEqual([
      { file: "catalog/orphan.yaml", path: "spec.serviceId", message: 'no service with id "nope" in the catalog' },
      {
        file: "catalog/sfservice-postgresql.yaml",
        path: "spec.id",
        message: 'service "postgresql" has no plans (OSB requires at least one; a plan names it in spec.serviceId)',
      },
    ]);
    expect(catalog.services).toEqual([]);
  });

  it("leaves out the plans of a service whose file has problems", async () => {
    await copyExamples();
    const servicePath = path.join(repo.root, "catalog/postgresql/service.yaml");
    await fs.writeFile(servicePath, (await fs.readFile(servicePath, "utf8")).replace("name: postgresql\n  description", "name: post gresql\n  description"));
    const { catalog, problems } = await loadCatalog(repo.tree);

    expect(problems.map((p) => [p.file, p.path, p.message])).toEqual([
      [
        "catalog/postgresql/service.yaml",
        "spec.name",
        "must be a CLI-friendly name (only letters, digits, periods and hyphens)",
      ],
      ["catalog/postgresql/plans/medium.yaml", "spec.serviceId", `no service with id "${EXAMPLE_SERVICE_ID}" in the catalog`],
      ["catalog/postgresql/plans/small.yaml", "spec.serviceId", `no service with id "${EXAMPLE_SERVICE_ID}" in the catalog`],
    ]);
    expect(catalog.services).toEqual([]);
  });

  it("reads binding rotation and expiry: binding_rotatable in spec or in manager.settings (Service Fabrik's SFPlan keeps it there)", async () => {
    await copySf("sfservice-postgresql.yaml");
    const sfPlan = (await fs.readFile(path.join(SF, "sfplan-postgresql-v9.6-xxsmall.yaml"), "utf8")).replace(
      /^( {2}manager:\n)/m,
      "$1    settings:\n      binding_rotatable: true\n      binding_expires_after_seconds: 3600\n      binding_renew_after_seconds: 1800\n",
    );
    expect(sfPlan).toContain("binding_rotatable: true");
    await repo.write({ "catalog/sfplan.yaml": sfPlan });
    const sf = await loadCatalog(repo.tree);
    expect(sf.problems).toEqual([]);
    expect(sf.catalog.planById(SF_PLAN_ID)).toMatchObject({ bindingRotatable: true, bindingExpiresAfterSeconds: 3600, bindingRenewAfterSeconds: 1800 });

    await repo.remove();
    repo = await tempDirTree("catalog-");
    await copyExamples();
    await repo.write({ "catalog/extra.yaml": planYaml({ binding_rotatable: false }) });
    const { catalog, problems } = await loadCatalog(repo.tree);
    expect(problems).toEqual([]);
    expect(catalog.planById("extra-plan")?.bindingRotatable).toBe(false);
    expect(catalog.planById("55a0d659-3419-4ed1-adf3-19f9d0f5ba4b")).toMatchObject({ bindingRotatable: true });
    expect(catalog.planById("55a0d659-3419-4ed1-adf3-19f9d0f5ba4b")?.bindingExpiresAfterSeconds).toBeUndefined();
  });

  it("reports binding_rotatable in both places, a renewal after the expiry and settings of the wrong type", async () => {
    await copyExamples();
    await repo.write({
      "catalog/both.yaml": planYaml({ id: "both", name: "both", bindingRotatable: true, manager: { settings: { binding_rotatable: true } } }),
      "catalog/late.yaml": planYaml({ id: "late", name: "late", manager: { settings: { binding_expires_after_seconds: 60, binding_renew_after_seconds: 120 } } }),
      "catalog/typed.yaml": planYaml({ id: "typed", name: "typed", manager: { settings: { binding_rotatable: "yes", binding_expires_after_seconds: 0 } } }),
    });
    const { catalog, problems } = await loadCatalog(repo.tree);

    expect(problems.map((p) => [p.file, p.path, p.message])).toEqual([
      ["catalog/both.yaml", "spec.manager.settings.binding_rotatable", "binding_rotatable is declared in spec already: use one of them"],
      ["catalog/late.yaml", "spec.manager.settings.binding_renew_after_seconds", "120 is after binding_expires_after_seconds (60): OSB's renew_before must not be after expires_at"],
      ["catalog/typed.yaml", "spec.manager.settings.binding_rotatable", "must be boolean"],
      ["catalog/typed.yaml", "spec.manager.settings.binding_expires_after_seconds", "must be >= 1"],
    ]);
    for (const id of ["both", "late", "typed"]) expect(catalog.planById(id)).toBeUndefined();
  });

  it("reports a field given in two spellings", async () => {
    await copyExamples();
    await repo.write({ "catalog/extra.yaml": planYaml({ planUpdatable: true, plan_updateable: false }) });
    const { problems } = await loadCatalog(repo.tree);

    expect(problems).toEqual([
      { file: "catalog/extra.yaml", path: "spec.plan_updateable", message: "same field as spec.planUpdatable: use one spelling" },
    ]);
  });

  it("reports parameter schemas that break the OSB rules or are not JSON schemas", async () => {
    await copyExamples();
    const parameters = (p: Record<string, unknown>) => ({ parameters: p });
    await repo.write({
      "catalog/extra.yaml": planYaml({
        schemas: {
          service_instance: {
            create: parameters({ type: "object" }),
            update: parameters({ $schema: "http://json-schema.org/draft-07/schema#", $ref: "https://example.com/schema.json" }),
          },
          service_binding: {
            create: parameters({ $schema: "http://json-schema.org/draft-07/schema#", properties: { a: { type: "strin" } } }),
          },
        },
      }),
    });
    const { problems } = await loadCatalog(repo.tree);

    expect(problems.map((p) => [p.path, p.message.split(":")[0]])).toEqual([
      ["spec.schemas.service_instance.create.parameters", "must declare its JSON schema version in `$schema` (draft-04, draft-06 or draft-07)"],
      ["spec.schemas.service_instance.update.parameters", 'must not contain external references ($ref "https'],
      ["spec.schemas.service_binding.create.parameters", "is not a valid JSON schema"],
    ]);
  });

  it("reports YAML syntax errors and documents that are not mappings", async () => {
    await copyExamples();
    await repo.write({ "catalog/bad.yaml": "spec: [unclosed\n", "catalog/list.yml": "- a\n- b\n" });
    const { catalog, problems } = await loadCatalog(repo.tree);

    expect(problems.map((p) => [p.file, p.path])).toEqual([
      ["catalog/bad.yaml", ""],
      ["catalog/list.yml", ""],
    ]);
    expect(problems[0]?.message).toMatch(/line 2/);
    expect(problems[1]?.message).toBe("must be a mapping (a Service or Plan document)");
    expect(catalog.services).toHaveLength(1);
  });

  it("returns an empty catalog when there is no catalog directory", async () => {
    const { catalog, problems } = await loadCatalog(repo.tree);
    expect(problems).toEqual([]);
    expect(catalog.services).toEqual([]);
    expect(catalog.planById(SF_PLAN_ID)).toBeUndefined();
  });
});
