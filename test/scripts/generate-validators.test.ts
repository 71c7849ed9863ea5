import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import { describe, expect, it } from "vitest";
import { generate, MODULES } from "../../scripts/generate-validators.mjs";

/**
 * The precompiled validators (ADR 0020): the committed modules are what the schemas generate now,
 * and they judge documents as ajv compiling the same schema at run time does, verbose errors
 * (the failing schema, its parent, the data) included.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** The committed module of `spec`, as the broker imports it. */
async function committed(spec: (typeof MODULES)[number]): Promise<Record<string, ValidateFunction>> {
  const module = (await import(pathToFileURL(path.join(ROOT, spec.file)).href)) as { validators: Record<string, ValidateFunction> };
  return module.validators;
}

/** The same schemas compiled the way the broker did before they were precompiled. */
async function compiledAtRunTime(spec: (typeof MODULES)[number]): Promise<Record<string, ValidateFunction>> {
  const ajv = new Ajv(spec.options);
  if (spec.formats) addFormats.default(ajv);
  for (const file of spec.schemas) ajv.addSchema(JSON.parse(await readFile(path.join(ROOT, file), "utf8")) as object);
  return Object.fromEntries(Object.entries(spec.exports).map(([name, ref]) => [name, ajv.getSchema(ref)!]));
}

/** Documents that break many rules at once: wrong types, unknown keys, bad formats, missing keys. */
const SAMPLES: unknown[] = [
  {},
  null,
  "text",
  [1, 2],
  { apiVersion: "v9", kind: "Nope", metadata: { name: "UPPER_case", labels: { a: 1 } }, spec: { planId: "", extra: true } },
  {
    apiVersion: "gitops-broker.io/v1alpha1",
    kind: "ServiceInstance",
    metadata: { name: "i-1", namespace: "ns" },
    spec: { instanceId: "i-1", serviceId: "s", planId: "p", clusterId: "Bad Cluster", sensitiveParameters: { "a..b": "X" } },
    status: { operations: [{ id: "", action: "explode", at: "yesterday", maintenanceInfo: {} }] },
  },
  { listen: { host: "", port: 70000 }, http: "fast", dataDir: 3, git: { remote: 5, branch: "" }, auth: { mode: "magic" }, log: { level: "loud" } },
];

describe("precompiled validators", () => {
  it("are what scripts/generate-validators.mjs makes of the schemas now", async () => {
    for (const { file, text } of await generate()) {
      expect(await readFile(path.join(ROOT, file), "utf8"), `${file} is stale: run npm run generate`).toBe(text);
    }
  });

  it("accept and refuse what the schemas compiled at run time do, with the same errors", async () => {
    let refused = 0;
    for (const spec of MODULES) {
      const expected = await compiledAtRunTime(spec);
      const generated = await committed(spec);
      expect(Object.keys(generated).sort()).toEqual(Object.keys(expected).sort());
      for (const [name, validate] of Object.entries(expected)) {
        for (const sample of SAMPLES) {
          const valid = validate(sample);
          const errors: ErrorObject[] | null | undefined = validate.errors;
          expect(generated[name]!(sample), `${spec.file} ${name}`).toBe(valid);
          expect(generated[name]!.errors, `${spec.file} ${name}`).toEqual(errors);
          if (!valid) refused += 1;
        }
      }
    }
    expect(refused).toBeGreaterThan(40);
  });
});
