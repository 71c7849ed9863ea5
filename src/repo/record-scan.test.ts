import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { scanInstanceRecord, type ScannedInstance } from "./record-scan.js";
import { RECORD_API_VERSION, recordYaml, type InstanceRecord, type OperationEntry } from "./records.js";

/** What the summary would take from the parsed record. */
function parsed(text: string): ScannedInstance {
  const r = parse(text) as InstanceRecord;
  return {
    instanceId: r.spec.instanceId,
    clusterId: r.spec.clusterId,
    planId: r.spec.planId,
    deleted: Boolean(r.status.deleted),
    ...(typeof r.spec.organizationGuid === "string" ? { organizationGuid: r.spec.organizationGuid } : {}),
    ...(typeof r.spec.spaceGuid === "string" ? { spaceGuid: r.spec.spaceGuid } : {}),
    ...(typeof r.spec.context?.subaccount_id === "string" ? { subaccountId: r.spec.context.subaccount_id } : {}),
    operations: r.status.operations.map((o) => ({ action: o.action, at: o.at })),
  };
}

/** A small deterministic generator (no Math.random: a failure must be reproducible). */
function generator(seed: number) {
  let s = seed;
  const next = () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  return { pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!, chance: (p: number) => next() < p };
}

/** Strings that YAML writes plain, quoted, as block scalars or escaped. */
const AWKWARD = ["local", "c-1.eu10", "123", "1e3", "true", "null", "~", "0x1F", "yes", "a: b", "a #b", "#x", "- x", "'q'", '"dq"',
  "line\nbreak", " lead", "trail ", "", "ümlaut", "{x}", "[x]", "*ref", "&anchor", "!tag", "%p", "@at", "`tick", "clusterId: evil"];
/** Organization, space and subaccount ids: GUIDs, and some that YAML quotes (drawn from their own generator). */
const TENANTS = ["org-1", "7b2b4d1e-7a4f-4c7e-9d2e-3f6a1b2c3d4e", "0e5a", "123", "true", "a: b"];
const tenants = generator(7);
/** OSB metadata of a record (status.labels, status.attributes; label keys with a prefix), from its own generator too. */
const metadata = generator(11);
const KEYS = ["a", "clusterId", "planId", "deleted", "action", "at", "with space", "x.y", "-dash", "operations", "spec"];

function randomValue(g: ReturnType<typeof generator>, depth: number): unknown {
  if (depth > 2 || g.chance(0.5)) return g.pick([...AWKWARD, 1, 2.5, false, null]);
  if (g.chance(0.5)) return Array.from({ length: 1 + Math.floor(depth) }, () => randomValue(g, depth + 1));
  return Object.fromEntries(Array.from({ length: 2 }, () => [g.pick(KEYS), randomValue(g, depth + 1)]));
}

function randomRecord(g: ReturnType<typeof generator>): InstanceRecord {
  const operations: OperationEntry<"provision" | "update" | "deprovision">[] = Array.from({ length: 1 + Math.floor(g.chance(0.5) ? 3 : 0) }, (_, i) => ({
    id: `op-${i}`,
    action: g.pick(["provision", "update", "deprovision"] as const),
    at: g.pick(["2026-01-02T00:00:00.000Z", "2026-01-03T10:00:00Z", "123"]),
    ...(g.chance(0.3) ? { parameters: randomValue(g, 0) as Record<string, unknown> } : {}),
    ...(g.chance(0.3) ? { originatingIdentity: { platform: "cloudfoundry", value: { user_id: g.pick(AWKWARD) } } } : {}),
  }));
  return {
    apiVersion: RECORD_API_VERSION,
    kind: "ServiceInstance",
    metadata: { name: "x", namespace: "ns" },
    spec: {
      instanceId: "x",
      serviceId: "svc",
      planId: g.pick(["p1", "55a0d659-3419-4ed1-adf3-19f9d0f5ba4b", "123", "true", "a: b"]),
      clusterId: g.pick(["local", "c-1.eu10", "007", "null", "line\nbreak"]),
      ...(g.chance(0.4) ? { parameters: randomValue(g, 0) as Record<string, unknown> } : {}),
      ...(tenants.chance(0.5) ? { organizationGuid: tenants.pick(TENANTS), spaceGuid: tenants.pick(TENANTS) } : {}),
      ...(g.chance(0.3) ? { context: { platform: "kubernetes", namespace: g.pick(AWKWARD), ...(tenants.chance(0.5) ? { subaccount_id: tenants.pick(TENANTS) } : {}) } } : {}),
    },
    status: {
      ...(g.chance(0.3) ? { deleted: g.chance(0.5) } : {}),
      operations,
      ...(metadata.chance(0.3) ? { labels: { "gitops-broker.io/cluster": metadata.pick(["local", "c-1.eu10", "007", "a: b"]), plan: metadata.pick(["small", "true", "#x"]) } } : {}),
      ...(metadata.chance(0.3) ? { attributes: { "postgresql-version": metadata.pick(["16", "9.6", "x"]), "deleted": metadata.pick([true, "yes"]) } } : {}),
    },
  };
}

describe("scanInstanceRecord", () => {
  it("answers what the YAML parser reads, for every record the broker writes that it answers at all", () => {
    const g = generator(42);
    let answered = 0;
    for (let i = 0; i < 3000; i++) {
      const text = recordYaml(randomRecord(g));
      const scanned = scanInstanceRecord(text);
      if (scanned === undefined) continue;
      answered++;
      expect(scanned, text).toEqual(parsed(text));
    }
    // Most records take the fast path (the test would prove nothing if the scan gave up on all).
    expect(answered).toBeGreaterThan(1500);
  });

  it("answers for a record as the broker writes it for a plain provision", () => {
    const text = recordYaml({
      apiVersion: RECORD_API_VERSION,
      kind: "ServiceInstance",
      metadata: { name: "i-1", namespace: "ns" },
      spec: { instanceId: "i-1", serviceId: "s", planId: "p", clusterId: "local", parameters: { size: "small", replicas: 2 } },
      status: { operations: [{ id: "o1", action: "provision", at: "2026-01-01T00:00:00.000Z", planId: "p" }, { id: "o2", action: "update", at: "2026-01-02T00:00:00.000Z" }] },
    });
    expect(scanInstanceRecord(text)).toEqual({
      instanceId: "i-1",
      clusterId: "local",
      planId: "p",
      deleted: false,
      operations: [{ action: "provision", at: "2026-01-01T00:00:00.000Z" }, { action: "update", at: "2026-01-02T00:00:00.000Z" }],
    });
  });

  it("answers for a record with the OSB metadata the sample plans give (label keys with a prefix)", () => {
    const text = recordYaml({
      apiVersion: RECORD_API_VERSION,
      kind: "ServiceInstance",
      metadata: { name: "i-1", namespace: "ns" },
      spec: { instanceId: "i-1", serviceId: "s", planId: "p", clusterId: "local" },
      status: {
        operations: [{ id: "o1", action: "provision", at: "2026-01-01T00:00:00.000Z", planId: "p" }],
        labels: { "gitops-broker.io/cluster": "local", "gitops-broker.io/plan": "small" },
        attributes: { "postgresql-version": "16" },
      },
    });
    expect(scanInstanceRecord(text)).toEqual({ instanceId: "i-1", clusterId: "local", planId: "p", deleted: false, operations: [{ action: "provision", at: "2026-01-01T00:00:00.000Z" }] });
  });

  const HAND_WRITTEN: Record<string, string> = {
    "a comment": "spec:\n  clusterId: a # moved\n  planId: p\nstatus:\n  operations:\n    - action: provision\n      at: t\n",
    "a comment line": "# edited\nspec:\n  clusterId: a\n  planId: p\nstatus:\n  operations: []\n",
    "a flow mapping": "spec: { clusterId: a, planId: p }\nstatus:\n  operations: []\n",
    "a block scalar": "spec:\n  clusterId: |\n    a\n  planId: p\nstatus:\n  operations: []\n",
    "an anchor": "spec:\n  clusterId: &c a\n  planId: *c\nstatus:\n  operations: []\n",
    "a multi-line plain scalar": "spec:\n  clusterId: a\n    b\n  planId: p\nstatus:\n  operations: []\n",
    "CRLF line ends": "spec:\r\n  clusterId: a\r\n  planId: p\r\nstatus:\r\n  operations: []\r\n",
    "sequence items at the key's indent": "spec:\n  clusterId: a\n  planId: p\nstatus:\n  operations:\n  - action: provision\n    at: t\n",
    "a duplicate key": "spec:\n  clusterId: a\n  planId: p\n  clusterId: b\nstatus:\n  operations: []\n",
    "a tab": "spec:\n\tclusterId: a\n",
    "deleted as a string": "spec:\n  clusterId: a\n  planId: p\nstatus:\n  deleted: yes\n  operations: []\n",
    "no operations": "spec:\n  clusterId: a\n  planId: p\nstatus: {}\n",
    "a document marker": "---\nspec:\n  clusterId: a\n  planId: p\nstatus:\n  operations: []\n",
  };
  for (const [what, text] of Object.entries(HAND_WRITTEN)) {
    it(`leaves a record with ${what} to the parser`, () => {
      expect(scanInstanceRecord(text)).toBeUndefined();
    });
  }

  it("reads the organization, space and the context's subaccount_id, not look-alikes elsewhere", () => {
    const text = recordYaml({
      apiVersion: RECORD_API_VERSION,
      kind: "ServiceInstance",
      metadata: { name: "i-1", namespace: "ns" },
      spec: {
        instanceId: "i-1",
        serviceId: "s",
        planId: "p",
        clusterId: "local",
        organizationGuid: "org-1",
        spaceGuid: "space-1",
        context: { platform: "sapcp", subaccount_id: "sub-1", nested: { subaccount_id: "evil" } },
        parameters: { organizationGuid: "evil", subaccount_id: "evil" },
      },
      status: { operations: [{ id: "o1", action: "provision", at: "2026-01-01T00:00:00.000Z" }] },
    });
    expect(scanInstanceRecord(text)).toMatchObject({ organizationGuid: "org-1", spaceGuid: "space-1", subaccountId: "sub-1" });
    expect(scanInstanceRecord(text)).toEqual(parsed(text));
  });

  it("reads quoted values and ignores look-alike keys deeper in the record", () => {
    const text = [
      "spec:",
      "  instanceId: i-9",
      '  clusterId: "123"',
      "  planId: 'p 1'",
      "  parameters:",
      "    clusterId: evil",
      "status:",
      "  operations:",
      "    - id: o",
      "      action: provision",
      "      at: 2026-01-01T00:00:00Z",
      "      parameters:",
      "        action: deprovision",
      "",
    ].join("\n");
    expect(scanInstanceRecord(text)).toEqual(parsed(text));
    expect(scanInstanceRecord(text)?.clusterId).toBe("123");
  });
});
