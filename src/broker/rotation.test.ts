import { describe, expect, it } from "vitest";
import type { Plan } from "../catalog/index.js";
import { RECORD_API_VERSION, type BindingRecord } from "../repo/index.js";
import type { BindBody } from "./request-body.js";
import { bindingMetadata, successorRequest } from "./rotation.js";

const plan = { id: "p", name: "p", templates: [], context: {}, raw: {} } as unknown as Plan;

function predecessor(spec: Partial<BindingRecord["spec"]> = {}): BindingRecord {
  return {
    apiVersion: RECORD_API_VERSION,
    kind: "ServiceBinding",
    metadata: { name: "b-1", namespace: "ns" },
    spec: { bindingId: "b-1", instanceId: "i", serviceId: "s", planId: "p", ...spec },
    status: { operations: [{ id: "o", action: "bind", at: "2026-11-29T00:00:00.000Z" }] },
  };
}

const rotation: BindBody = {
  serviceId: "s",
  planId: "p",
  context: undefined,
  parameters: undefined,
  bindResource: undefined,
  appGuid: undefined,
  predecessorBindingId: "b-1",
};

describe("a successor's request", () => {
  it("takes what the rotation leaves out from the predecessor", () => {
    const from = predecessor({ parameters: { role: "reader" }, bindResource: { app_guid: "a" }, appGuid: "a", context: { platform: "cloudfoundry" } });
    expect(successorRequest(plan, rotation, from)).toEqual({
      ...rotation,
      parameters: { role: "reader" },
      bindResource: { app_guid: "a" },
      appGuid: "a",
      context: { platform: "cloudfoundry" },
    });
  });

  it("keeps what the rotation sends", () => {
    const from = predecessor({ parameters: { role: "reader" }, bindResource: { app_guid: "a" } });
    const sent = { ...rotation, parameters: { role: "writer" }, bindResource: { app_guid: "b" } };
    expect(successorRequest(plan, sent, from)).toMatchObject({ parameters: { role: "writer" }, bindResource: { app_guid: "b" } });
  });

  it("asks for the parameters again when the predecessor's sensitive ones are sealed", () => {
    const from = predecessor({ sensitiveParameters: { password: "b-1-sensitive", "users.0.token": "b-1-sensitive" } });
    expect(() => successorRequest(plan, rotation, from)).toThrow(
      /^predecessor_binding_id b-1: its sensitive parameters \(password, users\.0\.token\) are kept encrypted and cannot be carried over: send the parameters with the rotation$/,
    );
    expect(successorRequest(plan, { ...rotation, parameters: { password: "new" } }, from).parameters).toEqual({ password: "new" });
  });
});

describe("a binding's OSB metadata", () => {
  const bound = predecessor({ expiresAt: "2027-02-27T00:00:00.000Z", renewBefore: "2027-01-28T00:00:00.000Z" });

  it("has expires_at from 2.16 and renew_before from 2.17", () => {
    expect(bindingMetadata(bound, { major: 2, minor: 15 })).toBeUndefined();
    expect(bindingMetadata(bound, { major: 2, minor: 16 })).toEqual({ expires_at: "2027-02-27T00:00:00.000Z" });
    expect(bindingMetadata(bound, { major: 2, minor: 17 })).toEqual({ expires_at: "2027-02-27T00:00:00.000Z", renew_before: "2027-01-28T00:00:00.000Z" });
  });

  it("is absent for a binding without expiry", () => {
    expect(bindingMetadata(predecessor(), { major: 2, minor: 17 })).toBeUndefined();
  });
});
