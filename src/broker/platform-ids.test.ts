import { describe, expect, it } from "vitest";
import { RECORD_API_VERSION, type BindingRecord, type InstanceRecord, type OperationEntry } from "../repo/index.js";
import type { OperationState } from "../status-watcher/index.js";
import { acceptedPlanIds, queryHints } from "./platform-ids.js";

const op = (id: string, action: "provision" | "update" | "deprovision", planId?: string): OperationEntry<typeof action> => ({
  id,
  action,
  at: "2026-11-29T00:00:00.000Z",
  ...(planId ? { planId } : {}),
});

function instance(planId: string, ops: OperationEntry<"provision" | "update" | "deprovision">[]): InstanceRecord {
  return {
    apiVersion: RECORD_API_VERSION,
    kind: "ServiceInstance",
    metadata: { name: "i-1", namespace: "ns" },
    spec: { instanceId: "i-1", serviceId: "svc", planId, clusterId: "c" },
    status: { operations: ops },
  };
}

/** A status watcher that knows the state of each operation by id. */
const status = (states: Record<string, OperationState>) => ({ instanceStatus: (_r: InstanceRecord, o: OperationEntry) => ({ state: states[o.id] ?? "succeeded" }) });

describe("the plans a platform may name for an instance", () => {
  const changed = instance("large", [op("p", "provision", "small"), op("u", "update", "large")]);

  it("is the current plan once a plan change succeeded", () => {
    expect(acceptedPlanIds(status({}), changed)).toEqual(["large"]);
  });

  it.each(["in progress", "failed"] as const)("keeps the plan before a plan change that is %s (the platform still holds it)", (state) => {
    expect(acceptedPlanIds(status({ u: state }), changed)).toEqual(["large", "small"]);
  });

  it("is only the current plan when the latest update changed no plan, or a later operation followed", () => {
    const params = instance("large", [op("p", "provision", "small"), op("u", "update", "large"), op("u2", "update", "large")]);
    expect(acceptedPlanIds(status({ u2: "failed" }), params)).toEqual(["large"]);
    const gone = instance("large", [op("p", "provision", "small"), op("u", "update", "large"), op("d", "deprovision")]);
    expect(acceptedPlanIds(status({ u: "failed", d: "in progress" }), gone)).toEqual(["large"]);
  });

  it("adds the plan a binding was made with", () => {
    const binding = { spec: { planId: "small" } } as BindingRecord;
    expect(acceptedPlanIds(status({}), changed, binding)).toEqual(["large", "small"]);
  });
});

describe("the service_id / plan_id hints of GET", () => {
  it("are read from OSB 2.16 on, each a non-empty string when present", () => {
    expect(queryHints({ service_id: "s", plan_id: "p" }, "fetch instance", { major: 2, minor: 16 })).toEqual({ serviceId: "s", planId: "p" });
    expect(queryHints({}, "fetch instance", { major: 2, minor: 17 })).toEqual({ serviceId: undefined, planId: undefined });
    expect(() => queryHints({ plan_id: "" }, "fetch instance", { major: 2, minor: 17 })).toThrow(/^fetch instance: query parameter plan_id must be a non-empty string$/);
    expect(() => queryHints({ service_id: ["a", "b"] }, "fetch binding", { major: 2, minor: 17 })).toThrow(/service_id must be a non-empty string/);
  });

  it("do not exist before 2.16: ignored", () => {
    expect(queryHints({ plan_id: "" }, "fetch instance", { major: 2, minor: 15 })).toEqual({});
  });
});
