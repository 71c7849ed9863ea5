import { describe, expect, it } from "vitest";
import { sensitiveParameters, withoutSensitiveParameters, type Plan } from "./index.js";

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

const SCHEMA = {
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  definitions: { secret: { type: "string", writeOnly: true } },
  properties: {
    adminPassword: { type: "string", writeOnly: true },
    size: { type: "integer" },
    db: { type: "object", properties: { password: { type: "string", format: "password" }, name: { type: "string" } } },
    users: { type: "array", items: { type: "object", properties: { token: { $ref: "#/definitions/secret" } } } },
    tls: { allOf: [{ properties: { key: { $ref: "#/definitions/secret" } } }] },
  },
  patternProperties: { "^x-": { writeOnly: true } },
  additionalProperties: { type: "object", additionalProperties: { format: "password" } },
};

describe("sensitiveParameters", () => {
  it("finds writeOnly and format: password values at any depth, only where present", () => {
    const plan = planWith(SCHEMA);
    expect(sensitiveParameters(plan, "service_instance.create", { size: 1, db: { name: "d" } })).toEqual([]);
    expect(
      sensitiveParameters(plan, "service_instance.create", {
        adminPassword: "a",
        size: 1,
        db: { password: "p", name: "d" },
        users: [{ token: "t0" }, {}, { token: "t2" }],
        tls: { key: "k" },
        "x-api": "x",
        extra: { "odd key": "s" },
      }),
    ).toEqual([
      { path: "parameters.adminPassword", marker: "writeOnly", at: ["adminPassword"] },
      { path: "parameters.db.password", marker: "format: password", at: ["db", "password"] },
      { path: "parameters.users[0].token", marker: "writeOnly", at: ["users", 0, "token"] },
      { path: "parameters.users[2].token", marker: "writeOnly", at: ["users", 2, "token"] },
      { path: "parameters.tls.key", marker: "writeOnly", at: ["tls", "key"] },
      { path: 'parameters["x-api"]', marker: "writeOnly", at: ["x-api"] },
      { path: 'parameters.extra["odd key"]', marker: "format: password", at: ["extra", "odd key"] },
    ]);
  });

  it("looks only at the schema asked for, and ends on recursive $refs", () => {
    const plan = planWith({ properties: { pw: { writeOnly: true } } }, "service_binding.create");
    expect(sensitiveParameters(plan, "service_instance.create", { pw: "x" })).toEqual([]);
    expect(sensitiveParameters(plan, "service_binding.create", { pw: "x" })).toEqual([{ path: "parameters.pw", marker: "writeOnly", at: ["pw"] }]);
    const loop = planWith({ definitions: { a: { $ref: "#/definitions/a" } }, $ref: "#/definitions/a", properties: { n: { $ref: "#" } } });
    expect(sensitiveParameters(loop, "service_instance.create", { n: { n: {} } })).toEqual([]);
  });
});

describe("withoutSensitiveParameters", () => {
  it("leaves sensitive members out and nulls sensitive array elements, without touching the input", () => {
    const plan = planWith(SCHEMA);
    const input = { adminPassword: "a", size: 1, db: { password: "p", name: "d" }, users: [{ token: "t" }] };
    expect(withoutSensitiveParameters(plan, ["service_instance.create", "service_instance.update"], input)).toEqual({
      size: 1,
      db: { name: "d" },
      users: [{}],
    });
    const arrays = planWith({ properties: { keys: { items: { writeOnly: true } } } });
    expect(withoutSensitiveParameters(arrays, ["service_instance.create"], { keys: ["a", "b"] })).toEqual({ keys: [null, null] });
    expect(input.adminPassword).toBe("a");
  });
});
