import { describe, expect, it } from "vitest";
import { brokerTrailers, readBrokerTrailers } from "./trailers.js";

describe("broker commit trailers", () => {
  it("writes the fields in one fixed order and leaves out absent and empty ones", () => {
    const trailers = brokerTrailers({
      brokerVersion: "gitops-broker/1.0.0",
      overrides: ["overrides/i-1/a.yaml", "overrides/i-1/b.yaml"],
      requestIdentity: "r-1",
      originatingIdentity: { platform: "cloudfoundry", value: { user_id: "u-1" } },
      bindingId: "",
      instanceId: "i-1",
      operation: "op-1",
    });
    expect(Object.entries(trailers)).toEqual([
      ["Operation", "op-1"],
      ["Instance-Id", "i-1"],
      ["Originating-Identity", 'cloudfoundry {"user_id":"u-1"}'],
      ["Request-Identity", "r-1"],
      ["Overrides", "overrides/i-1/a.yaml, overrides/i-1/b.yaml"],
      ["Broker-Version", "gitops-broker/1.0.0"],
    ]);
  });

  it("puts a re-render's reason and cause first and a move's clusters after the instance", () => {
    expect(Object.keys(brokerTrailers({ instanceId: "i", reason: "plan-changed", planCommit: "c", brokerVersion: "v", overrides: [] }))).toEqual([
      "Reason",
      "Plan-Commit",
      "Instance-Id",
      "Broker-Version",
    ]);
    expect(Object.keys(brokerTrailers({ brokerVersion: "v", movedTo: "b", movedFrom: "a", instanceId: "i", overrides: ["o"] }))).toEqual([
      "Instance-Id",
      "Moved-From",
      "Moved-To",
      "Overrides",
      "Broker-Version",
    ]);
  });

  it("reads back what it wrote, and decodes only a well-formed originating identity", () => {
    const written = {
      operation: "op-1",
      instanceId: "i-1",
      bindingId: "b-1",
      originatingIdentity: { platform: "kubernetes", value: { username: "x", groups: ["a"] } },
      requestIdentity: "r-1",
      overrides: ["overrides/i-1/a.yaml"],
      brokerVersion: "v",
    };
    expect(readBrokerTrailers(brokerTrailers(written))).toEqual(written);
    expect(readBrokerTrailers({ "Originating-Identity": "cloudfoundry not-json", Other: "x" })).toEqual({});
    expect(readBrokerTrailers({ "Originating-Identity": "cloudfoundry [1]" })).toEqual({});
  });

  it("writes a rotation's predecessor after the binding, and reads it back", () => {
    const written = { operation: "op-2", instanceId: "i-1", bindingId: "b-2", predecessorBindingId: "b-1", brokerVersion: "v" };
    const trailers = brokerTrailers(written);
    expect(Object.keys(trailers)).toEqual(["Operation", "Instance-Id", "Binding-Id", "Predecessor-Binding-Id", "Broker-Version"]);
    expect(readBrokerTrailers(trailers)).toEqual(written);
  });

  it("writes a records GC commit's reason, retention and one Instance-Id per record, and reads them back as a list", () => {
    const written = { reason: "records-gc", retentionDays: 90, instanceIds: ["i-1", "i-2"], brokerVersion: "v" };
    const trailers = brokerTrailers(written);
    expect(Object.entries(trailers)).toEqual([
      ["Reason", "records-gc"],
      ["Retention-Days", "90"],
      ["Instance-Id", ["i-1", "i-2"]],
      ["Broker-Version", "v"],
    ]);
    expect(readBrokerTrailers(trailers)).toEqual(written);
    // One record: one Instance-Id, still read back as the list of what the GC removed.
    expect(readBrokerTrailers({ Reason: "records-gc", "Retention-Days": "7", "Instance-Id": "i-1" })).toEqual({
      reason: "records-gc",
      retentionDays: 7,
      instanceIds: ["i-1"],
    });
  });

  it("reads a repeated trailer of any other commit by its last value, as git does", () => {
    expect(readBrokerTrailers({ "Instance-Id": ["a", "b"], Operation: ["o-1", "o-2"] })).toEqual({ instanceId: "b", operation: "o-2" });
  });

  it("writes an import commit's source and every instance it imported, and reads them back", () => {
    const trailers = brokerTrailers({ reason: "import", importSource: "service-fabrik https://master:6443", instanceIds: ["a", "b"], brokerVersion: "gitops-broker/1.0.0" });
    expect(trailers).toEqual({ Reason: "import", "Instance-Id": ["a", "b"], "Import-Source": "service-fabrik https://master:6443", "Broker-Version": "gitops-broker/1.0.0" });
    expect(readBrokerTrailers(trailers)).toEqual({ reason: "import", importSource: "service-fabrik https://master:6443", instanceIds: ["a", "b"], brokerVersion: "gitops-broker/1.0.0" });
  });
});
