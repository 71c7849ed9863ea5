import * as fs from "node:fs/promises";
import { Ajv } from "ajv";
import addFormats from "ajv-formats";
import { describe, expect, it } from "vitest";

/** The schema files users point their editors at; records are written by the broker. */
const DIR = new URL("../../repo-layout/schemas/", import.meta.url);

async function strictAjv(): Promise<Ajv> {
  const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false });
  addFormats.default(ajv);
  for (const name of await fs.readdir(DIR)) {
    ajv.addSchema(JSON.parse(await fs.readFile(new URL(name, DIR), "utf8")) as object, name);
  }
  return ajv;
}

const instance = {
  apiVersion: "gitops-broker.io/v1alpha1",
  kind: "ServiceInstance",
  metadata: { name: "0304b210-fcfd-11e8-a31b-b6001f10c97f", namespace: "gitops-broker-instances" },
  spec: {
    instanceId: "0304b210-fcfd-11e8-a31b-b6001f10c97f",
    serviceId: "4de30cf9-a981-48c9-9acf-909805db46bc",
    planId: "55a0d659-3419-4ed1-adf3-19f9d0f5ba4b",
    clusterId: "local",
    organizationGuid: "org",
    spaceGuid: "space",
    context: { platform: "cloudfoundry" },
    parameters: { storageGB: 10 },
    maintenanceInfo: { version: "1.0.0" },
    originatingIdentity: { platform: "cloudfoundry", value: { user_id: "u" } },
  },
  status: {
    operations: [
      { id: "op-1", action: "provision", at: "2024-05-01T10:00:00Z", planId: "55a0d659-3419-4ed1-adf3-19f9d0f5ba4b", parameters: { storageGB: 10 } },
      { id: "op-2", action: "update", at: "2024-05-02T10:00:00.123+02:00", requestIdentity: "req-2" },
    ],
  },
};

const binding = {
  apiVersion: "gitops-broker.io/v1alpha1",
  kind: "ServiceBinding",
  metadata: { name: "de3dd272-fcfc-11e8-a31b-b6001f10c97f", namespace: "gitops-broker-instances" },
  spec: {
    bindingId: "de3dd272-fcfc-11e8-a31b-b6001f10c97f",
    instanceId: "0304b210-fcfd-11e8-a31b-b6001f10c97f",
    serviceId: "4de30cf9-a981-48c9-9acf-909805db46bc",
    planId: "55a0d659-3419-4ed1-adf3-19f9d0f5ba4b",
    bindResource: { app_guid: "app" },
    appGuid: "app",
  },
  status: { deleted: true, operations: [{ id: "b-1", action: "bind", at: "2024-05-01T10:00:00Z" }, { id: "b-2", action: "unbind", at: "2024-05-03T10:00:00Z" }] },
};

describe("repo-layout/schemas", () => {
  it("are strict draft-07 schemas", async () => {
    const ajv = await strictAjv();
    for (const name of await fs.readdir(DIR)) {
      expect(ajv.getSchema(name), name).toBeTypeOf("function");
    }
  });

  it("accept the records the broker writes", async () => {
    const ajv = await strictAjv();
    const validateInstance = ajv.getSchema("instance-record.schema.json")!;
    const validateBinding = ajv.getSchema("binding-record.schema.json")!;
    expect(validateInstance(instance), JSON.stringify(validateInstance.errors)).toBe(true);
    expect(validateBinding(binding), JSON.stringify(validateBinding.errors)).toBe(true);
  });

  it("accept a binding's patches of its instance's objects (ADR 0017), and only with a target and a patch", async () => {
    const validateBinding = (await strictAjv()).getSchema("binding-record.schema.json")!;
    const target = { apiVersion: "acid.zalan.do/v1", kind: "postgresql", name: "sapcp-db-1" };
    const withPatches = (instancePatches: unknown) => ({ ...binding, spec: { ...binding.spec, instancePatches } });
    expect(validateBinding(withPatches([{ target, patch: { spec: { users: { "b-1": ["superuser"] } } } }])), JSON.stringify(validateBinding.errors)).toBe(true);
    expect(validateBinding(withPatches([{ target: { ...target, namespace: "other" }, patch: {} }]))).toBe(true);
    expect(validateBinding(withPatches([{ target: { apiVersion: "v1", kind: "Secret" }, patch: [] }]))).toBe(false);
    expect(validateBinding.errors?.map((e) => `${e.instancePath} ${e.message}`)).toEqual([
      "/spec/instancePatches/0/target must have required property 'name'",
      "/spec/instancePatches/0/patch must be object",
    ]);
  });

  it("reject records with a wrong action, a bad timestamp or an unknown field", async () => {
    const ajv = await strictAjv();
    const validateInstance = ajv.getSchema("instance-record.schema.json")!;
    const bad = {
      ...instance,
      spec: { ...instance.spec, credentials: { password: "no" } },
      status: { operations: [{ id: "x", action: "bind", at: "yesterday" }] },
    };

    expect(validateInstance(bad)).toBe(false);
    expect(validateInstance.errors?.map((e) => `${e.instancePath} ${e.message}`)).toEqual([
      "/spec must NOT have additional properties",
      "/status/operations/0/action must be equal to one of the allowed values",
      '/status/operations/0/at must match format "date-time"',
    ]);
  });

  it("accept both cluster kinds through the top-level schema", async () => {
    const ajv = await strictAjv();
    const validate = ajv.getSchema("cluster.schema.json")!;
    expect(validate({ apiVersion: "gitops-broker.io/v1alpha1", kind: "Cluster", metadata: { name: "local" } })).toBe(true);
    expect(validate({ apiVersion: "resource.servicefabrik.io/v1alpha1", kind: "SFCluster", metadata: { name: "1" }, spec: { secretRef: "s" } })).toBe(true);
    expect(validate({ apiVersion: "resource.servicefabrik.io/v1alpha1", kind: "Cluster", metadata: { name: "x" } })).toBe(false);
  });
});
