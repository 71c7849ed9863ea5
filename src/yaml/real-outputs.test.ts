import * as fs from "node:fs/promises";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import type { Catalog, PlanTemplate } from "../catalog/index.js";
import { render, sfServiceBinding, sfServiceInstance, type Manifest, type RenderValues } from "../render/index.js";
import { MANIFEST_STYLE, manifestYaml } from "../render/yaml-output.js";
import { keyOf, LABEL_BINDING, LABEL_INSTANCE, LABEL_MANAGED_BY, MANAGED_BY, newBindingRecord, newInstanceRecord, recordYaml } from "../repo/index.js";
import { RECORD_STYLE } from "../repo/records.js";
import { loadExampleCatalog } from "../../test/support/example-catalog.js";
import { libraryManifestYaml, libraryRecordYaml } from "../../test/support/yaml-oracle.js";
import { emitYaml } from "./index.js";

/**
 * What the broker really writes, written by the emitter and by the library before it
 * (test/support/yaml-oracle.ts): the example catalog's plans, Service Fabrik's sample plan and
 * objects, the Zalando plan of the renderer's tests, and records as the broker and the import
 * build them. Every byte must be the library's, and the emitter must answer nearly all of them
 * itself (the fallback is for what the broker does not write).
 */

const SF = fileURLToPath(new URL("../catalog/testdata/service-fabrik/", import.meta.url));
const ZALANDO = fileURLToPath(new URL("../render/testdata/zalando-postgres-plan.yaml", import.meta.url));
const NAMESPACE = "gitops-broker-instances";
const INSTANCE_ID = "0304b210-fcfd-11e8-a31b-b6001f10c97f";

let catalog: Catalog;
beforeAll(async () => {
  catalog = await loadExampleCatalog();
});

const seen = { manifests: 0, manifestFallbacks: 0, objects: 0, objectFallbacks: 0, records: 0, recordFallbacks: 0 };
afterAll(() => {
  const { manifests, manifestFallbacks, objects, objectFallbacks, records, recordFallbacks } = seen;
  console.log(`emitter fallbacks: rendered manifests ${manifestFallbacks} of ${manifests}, other objects ${objectFallbacks} of ${objects}, records ${recordFallbacks} of ${records}`);
});

/** A rendered manifest (its `yaml` as render wrote it), or another object written as one (`yaml` absent). */
function checkManifest(object: Record<string, unknown>, yaml?: string): void {
  const rendered = yaml !== undefined;
  if (rendered) seen.manifests++;
  else seen.objects++;
  const emitted = emitYaml(object, MANIFEST_STYLE);
  if (emitted === undefined) {
    if (rendered) seen.manifestFallbacks++;
    else seen.objectFallbacks++;
  } else expect(emitted).toBe(libraryManifestYaml(object));
  if (yaml === undefined) yaml = manifestYaml(object);
  expect(yaml).toBe(libraryManifestYaml(object));
}

function checkRecord(record: Parameters<typeof recordYaml>[0]): void {
  seen.records++;
  const emitted = emitYaml(record, RECORD_STYLE);
  if (emitted === undefined) seen.recordFallbacks++;
  else expect(emitted).toBe(libraryRecordYaml(record));
  expect(recordYaml(record)).toBe(libraryRecordYaml(record));
}

function instanceRecord(planId: string, serviceId: string, parameters?: Record<string, unknown>) {
  return newInstanceRecord(
    {
      instanceId: INSTANCE_ID,
      serviceId,
      planId,
      clusterId: "local",
      namespace: NAMESPACE,
      organizationGuid: "org-1",
      spaceGuid: "space-1",
      context: { platform: "cloudfoundry", organization_guid: "org-1", space_guid: "space-1", instance_name: "my db", organization_name: "Org 1" },
      ...(parameters === undefined ? {} : { parameters }),
      maintenanceInfo: { version: "1.0.0", description: "PostgreSQL 16.4: security fixes" },
      originatingIdentity: { platform: "cloudfoundry", value: { user_id: "683ea748-3092-4ff4-b656-39cacc4d5360" } },
    },
    { id: "5e4e2b8c-6a59-4b1c-9a34-1d2f3e4a5b6c", action: "provision", at: "2026-11-29T10:00:00.123Z", planId, ...(parameters === undefined ? {} : { parameters }) },
  );
}

function bindingRecord(bindingId: string, planId: string, serviceId: string) {
  return newBindingRecord(
    {
      bindingId,
      instanceId: INSTANCE_ID,
      serviceId,
      planId,
      namespace: NAMESPACE,
      context: { platform: "kubernetes", namespace: "apps", clusterid: "c-1" },
      bindResource: { app_guid: "a-1" },
      appGuid: "a-1",
      expiresAt: "2026-12-29T10:00:00Z",
      renewBefore: "2026-12-22T10:00:00Z",
      instancePatches: [{ target: { apiVersion: "acid.zalan.do/v1", kind: "postgresql", name: `pg-${INSTANCE_ID}` }, patch: { spec: { users: { [bindingId]: [] } } } }],
    },
    { id: `op-${bindingId}`, action: "bind", at: "2026-11-29T10:00:01.000Z" },
  );
}

async function renderChecked(templates: PlanTemplate[], action: string, values: RenderValues, planName: string, bindingKey?: string): Promise<Manifest[]> {
  const labels = { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_INSTANCE]: keyOf(INSTANCE_ID), ...(bindingKey === undefined ? {} : { [LABEL_BINDING]: bindingKey }) };
  const manifests = await render({ action, templates, values, defaultNamespace: NAMESPACE, labels, planName });
  for (const m of manifests) checkManifest(m.object, m.yaml);
  return manifests;
}

describe("the emitter on what the broker writes", () => {
  it("examples/catalog: every plan's manifests for instances with and without parameters and bindings, and their records", async () => {
    let count = 0;
    for (const plan of catalog.services.flatMap((s) => s.plans)) {
      for (const parameters of [undefined, { version: "15", storageGB: 10 }, { version: "17", storageGB: 100 }]) {
        const instance = instanceRecord(plan.id, plan.serviceId, parameters);
        const bindings = ["b-1", "de3dd272-fcfc-11e8-a31b-b6001f10c97f"].map((id) => bindingRecord(id, plan.id, plan.serviceId));
        for (const b of [[], bindings.slice(0, 1), bindings]) {
          const values = { service: catalog.services[0]!.raw, plan: plan.raw, instance, bindings: b } as unknown as RenderValues;
          count += (await renderChecked(plan.templates, "provision", values, plan.name)).length;
        }
        checkRecord(instance);
        for (const b of bindings) checkRecord(b);
        checkRecord({ ...instance, status: { ...instance.status, labels: { tier: "small", "app.kubernetes.io/part-of": "db" }, attributes: { dashboard: "https://db.example/x?y=1" } } });
      }
    }
    expect(count).toBeGreaterThan(0);
  });

  it("Service Fabrik's sample plan and objects, and the Zalando plan", async () => {
    const sfPlan = parse(await fs.readFile(path.join(SF, "sfplan-postgresql-v9.6-xxsmall.yaml"), "utf8")) as { spec: { id: string; serviceId: string; templates: Omit<PlanTemplate, "source">[] } };
    const sfService = parse(await fs.readFile(path.join(SF, "sfservice-postgresql.yaml"), "utf8")) as Record<string, unknown>;
    const templates = sfPlan.spec.templates.map((t, i) => ({ ...t, source: `catalog/sfplan.yaml#spec.templates[${i}]` }));
    const instance = instanceRecord(sfPlan.spec.id, sfPlan.spec.serviceId, { foo: "bar", size: 1000000 });
    const binding = bindingRecord("b-1", sfPlan.spec.id, sfPlan.spec.serviceId);
    const values = { service: sfService, plan: sfPlan, instance, bindings: [binding] } as unknown as RenderValues;
    const provisioned = await renderChecked(templates, "provision", values, "v9.6-xxsmall");
    let count = provisioned.length;
    // The bind templates read the instance's rendered postgresql object.
    const bindValues = { ...values, binding, postgresql: provisioned[0]!.object } as unknown as RenderValues;
    for (const action of ["bind", "unbind"]) count += (await renderChecked(templates, action, bindValues, "v9.6-xxsmall", "b-1")).length;
    checkManifest(sfServiceInstance(instance as unknown as Record<string, unknown>));
    checkManifest(sfServiceBinding(binding as unknown as Record<string, unknown>));
    for (const file of await fs.readdir(SF)) {
      if (!file.endsWith(".yaml")) continue;
      for (const doc of parseAllDocuments(await fs.readFile(path.join(SF, file), "utf8"))) checkManifest(doc.toJS() as Record<string, unknown>);
    }

    const zalando = parse(await fs.readFile(ZALANDO, "utf8")) as { spec: { templates: Omit<PlanTemplate, "source">[] } };
    const zTemplates = zalando.spec.templates.map((t, i) => ({ ...t, source: `zalando.yaml#spec.templates[${i}]` }));
    const zValues = { service: { spec: { name: "postgresql" } }, plan: zalando, instance, bindings: [binding] } as unknown as RenderValues;
    for (const action of ["provision", "update"]) count += (await renderChecked(zTemplates, action, zValues, "v15-small")).length;
    count += (await renderChecked(zTemplates, "bind", { ...zValues, binding } as unknown as RenderValues, "v15-small", "b-1")).length;
    expect(count).toBeGreaterThan(3);
    // All of it is the emitter's own: a fallback is for what the broker does not write (the
    // SFPlan's multi-line templates).
    expect(seen.manifestFallbacks).toBe(0);
    expect(seen.objectFallbacks).toBeLessThanOrEqual(1);
    expect(seen.recordFallbacks).toBe(0);
  });
});
