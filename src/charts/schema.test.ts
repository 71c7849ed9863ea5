import { describe, expect, it } from "vitest";
import { schemaViolations } from "./schema.js";

describe("values.schema.json", () => {
  it("passes values that fit, in 2020-12 by default and in draft-07 when named", () => {
    const schema = { type: "object", required: ["replicas"], properties: { replicas: { type: "integer", minimum: 1 } } };
    expect(schemaViolations([{ chart: "web", schema, values: { replicas: 2 } }])).toBeUndefined();
    expect(schemaViolations([{ chart: "web", schema: { ...schema, $schema: "http://json-schema.org/draft-07/schema#" }, values: { replicas: 2 } }])).toBeUndefined();
    expect(schemaViolations([])).toBeUndefined();
  });

  it("lists every violation per chart under Helm's heading", () => {
    const schema = {
      type: "object",
      required: ["replicas"],
      additionalProperties: false,
      properties: { replicas: { type: "integer" }, mode: { enum: ["a", "b"] }, global: { type: "object" } },
    };
    expect(
      schemaViolations([
        { chart: "web", schema, values: { mode: "c", extra: 1, global: {} } },
        { chart: "sub", values: {}, error: "invalid character 'n' looking for beginning of object key string" },
        { chart: "ok", schema: { type: "object" }, values: {} },
      ]),
    ).toBe(
      "values don't meet the specifications of the schema(s) in the following chart(s):\n" +
        "web:\n- at '': must have required property 'replicas'\n- at '': must NOT have additional properties 'extra'\n- at '/mode': must be equal to one of the allowed values ([\"a\",\"b\"])\n" +
        "sub:\ninvalid character 'n' looking for beginning of object key string\n",
    );
  });
});
