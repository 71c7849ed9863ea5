import * as fs from "node:fs/promises";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { tempDirTree, type TempDirTree } from "../../test/support/dir-tree.js";
import { CatalogError } from "../errors/index.js";
import { loadCatalog, validateParameters, type Plan } from "./index.js";

const SF = fileURLToPath(new URL("./testdata/service-fabrik/", import.meta.url));
const EXAMPLES = fileURLToPath(new URL("../../examples/catalog/", import.meta.url));

let repo: TempDirTree;
beforeEach(async () => {
  repo = await tempDirTree("parameters-");
});
afterEach(async () => {
  await repo.remove();
});

async function examplePlan(name: string): Promise<Plan> {
  await fs.cp(EXAMPLES, path.join(repo.root, "catalog"), { recursive: true });
  const { catalog, problems } = await loadCatalog(repo.tree);
  expect(problems).toEqual([]);
  const plan = catalog.services[0]?.plans.find((p) => p.name === name);
  if (!plan) throw new Error(`no plan ${name}`);
  return plan;
}

/** A plan as other components build them in tests, with one parameters schema. */
function planWith(parameters: Record<string, unknown>, key = "service_instance.create"): Plan {
  const [scope, action] = key.split(".") as [string, string];
  return {
    id: "p",
    name: "p",
    description: "p",
    serviceId: "s",
    schemas: { [scope]: { [action]: { parameters } } },
    async: false,
    asyncBinding: false,
    context: {},
    templates: [],
    file: "catalog/p.yaml",
    raw: {},
  };
}

describe("validateParameters", () => {
  it("accepts parameters that match the plan's schema", async () => {
    const small = await examplePlan("small");
    expect(validateParameters(small, "service_instance.create", { version: "17", storageGB: 20 })).toEqual([]);
    expect(validateParameters(small, "service_instance.update", { storageGB: 8 })).toEqual([]);
  });

  it("names the failing path and what is wrong", async () => {
    const medium = await examplePlan("medium");
    const problems = validateParameters(medium, "service_instance.create", { version: 16, storageGB: 10.5, size: "xl" });

    expect(problems).toEqual([
      { file: "request", path: "parameters.size", message: "is not allowed" },
      { file: "request", path: "parameters.version", message: "must be string" },
      { file: "request", path: "parameters.version", message: 'must be one of "14", "15", "16", "17"' },
      { file: "request", path: "parameters.storageGB", message: "must be integer" },
      { file: "request", path: "parameters.storageGB", message: "must be >= 20" },
    ]);
  });

  it("reports a missing required property at `parameters` (Service Fabrik's draft-06 schema)", async () => {
    for (const name of ["sfservice-postgresql.yaml", "sfplan-postgresql-v9.6-xxsmall.yaml"]) {
      await repo.write({ [`catalog/${name}`]: await fs.readFile(path.join(SF, name)) });
    }
    const { catalog } = await loadCatalog(repo.tree);
    const plan = catalog.planById("39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88")!;

    expect(validateParameters(plan, "service_instance.create", { foo: "bar" })).toEqual([]);
    expect(validateParameters(plan, "service_instance.create", {})).toEqual([
      { file: "request", path: "parameters", message: "must have required property 'foo'" },
    ]);
    // Absent parameters are checked as {} on create ...
    expect(validateParameters(plan, "service_instance.create", undefined)).toEqual([
      { file: "request", path: "parameters", message: "must have required property 'foo'" },
    ]);
    // ... and anything goes where the plan has no schema.
    expect(validateParameters(plan, "service_binding.create", { any: 1 })).toEqual([]);
  });

  it("leaves an update without parameters alone (they stay as they are)", () => {
    const plan = planWith({ $schema: "http://json-schema.org/draft-07/schema#", required: ["a"] }, "service_instance.update");
    expect(validateParameters(plan, "service_instance.update", undefined)).toEqual([]);
    expect(validateParameters(plan, "service_instance.update", {})).toEqual([
      { file: "request", path: "parameters", message: "must have required property 'a'" },
    ]);
  });

  it("locates errors inside lists and odd property names", () => {
    const plan = planWith({
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: {
        users: { type: "array", items: { type: "object", properties: { name: { type: "string", pattern: "^[a-z]+$" } } } },
        "max-connections": { type: "integer" },
      },
    });
    expect(validateParameters(plan, "service_instance.create", { users: [{ name: "ok" }, { name: "No" }], "max-connections": "x" })).toEqual([
      { file: "request", path: "parameters.users[1].name", message: 'must match pattern "^[a-z]+$"' },
      { file: "request", path: 'parameters["max-connections"]', message: "must be integer" },
    ]);
  });

  it("takes draft-04 schemas, boolean exclusiveMaximum included", () => {
    const plan = planWith({
      $schema: "http://json-schema.org/draft-04/schema#",
      id: "http://example.com/create.json",
      type: "object",
      properties: { replicas: { type: "integer", minimum: 1, maximum: 5, exclusiveMaximum: true } },
    });
    expect(validateParameters(plan, "service_instance.create", { replicas: 4 })).toEqual([]);
    expect(validateParameters(plan, "service_instance.create", { replicas: 5 })).toEqual([
      { file: "request", path: "parameters.replicas", message: "must be < 5" },
    ]);
  });

  it("checks formats", () => {
    const plan = planWith({
      $schema: "http://json-schema.org/draft-07/schema#",
      properties: { contact: { type: "string", format: "email" } },
    });
    expect(validateParameters(plan, "service_instance.create", { contact: "not an address" })).toEqual([
      { file: "request", path: "parameters.contact", message: 'must match format "email"' },
    ]);
  });

  it("throws CatalogError for a schema that cannot be used", () => {
    const plan = planWith({ $schema: "https://json-schema.org/draft/2020-12/schema" });
    const thrown = ((): unknown => {
      try {
        validateParameters(plan, "service_instance.create", {});
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(thrown).toBeInstanceOf(CatalogError);
    expect((thrown as CatalogError).problems).toEqual([
      {
        file: "catalog/p.yaml",
        path: "spec.schemas.service_instance.create.parameters",
        message: '$schema "https://json-schema.org/draft/2020-12/schema" is not supported (use draft-04, draft-06 or draft-07)',
      },
    ]);
  });
});
