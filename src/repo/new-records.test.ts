import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { newBindingRecord, newInstanceRecord } from "./new-records.js";
import { recordYaml, type OperationEntry } from "./records.js";

const at = "2026-11-29T10:00:00.000Z";
const provision: OperationEntry<"provision"> = { id: "op-1", action: "provision", at, planId: "plan-1" };

describe("newInstanceRecord / newBindingRecord", () => {
  it("writes every field in one order, an absent one as no key, and the key of the id as metadata.name", () => {
    const full = newInstanceRecord(
      {
        instanceId: "Inst_1",
        serviceId: "svc",
        planId: "plan-1",
        clusterId: "east",
        namespace: "sf-x",
        ownNamespace: "sf-x",
        region: "eu10",
        organizationGuid: "org",
        spaceGuid: "space",
        context: { platform: "cloudfoundry" },
        parameters: { size: 1 },
        maintenanceInfo: { version: "1.0.0" },
        originatingIdentity: { platform: "cloudfoundry", value: { user_id: "u" } },
      },
      provision,
    );
    // "Inst_1" is not a DNS-1123 label: its key is its sha224.
    expect(full.metadata).toEqual({ name: createHash("sha224").update("Inst_1").digest("hex"), namespace: "sf-x" });
    expect(Object.keys(full.spec)).toEqual([
      "instanceId",
      "serviceId",
      "planId",
      "clusterId",
      "namespace",
      "region",
      "organizationGuid",
      "spaceGuid",
      "context",
      "parameters",
      "maintenanceInfo",
      "originatingIdentity",
    ]);
    const bare = newInstanceRecord({ instanceId: "i-1", serviceId: "svc", planId: "plan-1", clusterId: "", namespace: "", organizationGuid: undefined, parameters: undefined }, provision);
    expect(bare).toEqual({
      apiVersion: "gitops-broker.io/v1alpha1",
      kind: "ServiceInstance",
      metadata: { name: "i-1", namespace: "" },
      spec: { instanceId: "i-1", serviceId: "svc", planId: "plan-1", clusterId: "" },
      status: { operations: [provision] },
    });
    expect(Object.keys(bare.spec)).toEqual(["instanceId", "serviceId", "planId", "clusterId"]);
  });

  it("a binding record: its fields in one order, patches last", () => {
    const bind: OperationEntry<"bind"> = { id: "op-2", action: "bind", at };
    const record = newBindingRecord(
      {
        bindingId: "b-1",
        instanceId: "i-1",
        serviceId: "svc",
        planId: "plan-1",
        namespace: "ns",
        bindResource: { app_guid: "app" },
        appGuid: "app",
        context: undefined,
        instancePatches: [{ target: { apiVersion: "v1", kind: "ConfigMap", name: "c" }, patch: { data: { b: "1" } } }],
      },
      bind,
    );
    expect(record.metadata).toEqual({ name: "b-1", namespace: "ns" });
    expect(Object.keys(record.spec)).toEqual(["bindingId", "instanceId", "serviceId", "planId", "bindResource", "appGuid", "instancePatches"]);
    expect(recordYaml(record)).not.toContain("context");
  });

  it("a rotation's successor: its predecessor after the plan, its expiry before the patches (ADR 0033)", () => {
    const bind: OperationEntry<"bind"> = { id: "op-3", action: "bind", at };
    const record = newBindingRecord(
      {
        bindingId: "b-2",
        instanceId: "i-1",
        serviceId: "svc",
        planId: "plan-1",
        namespace: "ns",
        predecessorBindingId: "b-1",
        parameters: { role: "reader" },
        expiresAt: "2027-01-01T00:00:00.000Z",
        renewBefore: "2026-12-01T00:00:00.000Z",
      },
      bind,
    );
    expect(Object.keys(record.spec)).toEqual(["bindingId", "instanceId", "serviceId", "planId", "predecessorBindingId", "parameters", "expiresAt", "renewBefore"]);
  });
});
