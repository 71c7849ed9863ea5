import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { OSB_BASES } from "../support/osb-client.js";
import { commitCount, expectOsbError, headMessage, provisionBody, samplePlans, type SamplePlans } from "./helpers.js";

/**
 * Never a wrong OSB answer (ADR 0012), on one broker in commit mode: the answers that depend on
 * the API version the platform speaks.
 */

// Every test runs at /v2 and at each of Service Fabrik's platform routes (ADR 0025).
describe.each(OSB_BASES)("OSB exactness at %s", (base) => {
  let h: Harness;
  let plans: SamplePlans;

  beforeAll(async () => {
    h = await startHarness({ osbBase: base });
    plans = await samplePlans(h.osb);
  });
  afterAll(async () => {
    await h?.close();
  });

  const ASYNC = { accepts_incomplete: "true" };

  describe("maintenance_info before OSB 2.15, and as an empty object", () => {
    it("ignores maintenance_info at 2.13 and 2.14, whatever it holds: the field does not exist there", async () => {
      const cases: [string, unknown][] = [["2.13", {}], ["2.14", {}], ["2.14", { version: 1 }], ["2.14", { version: "0.0.1-stale" }], ["2.14", "not an object"]];
      for (const [i, [version, mi]] of cases.entries()) {
        const id = `mi-old-${i}`;
        const res = await h.osb.provision(id, provisionBody(plans.serviceId, plans.medium.id, { maintenance_info: mi }), { query: ASYNC, version });
        expect({ id, status: res.status }).toEqual({ id, status: 202 });
        const patched = await h.osb.update(id, { service_id: plans.serviceId, maintenance_info: mi, parameters: { storageGB: 20 } }, { query: ASYNC, version });
        expect({ id, status: patched.status }).toEqual({ id, status: 202 });
      }
    });

    it("accepts maintenance_info {} at 2.15 and later as no maintenance_info (Service Fabrik issue #1324)", async () => {
      for (const version of ["2.15", "2.17"]) {
        const id = `mi-empty-${version}`;
        const res = await h.osb.provision(id, provisionBody(plans.serviceId, plans.medium.id, { maintenance_info: {} }), { query: ASYNC, version });
        expect(res.status).toBe(202);
        const fetched = await h.osb.getInstance(id);
        expect(fetched.status).toBe(200);
        expect(fetched.body.maintenance_info).toBeUndefined();
        const patched = await h.osb.update(id, { service_id: plans.serviceId, maintenance_info: {} }, { query: ASYNC, version });
        expect(patched.status).toBe(200); // nothing changed
      }
    });

    it("still checks maintenance_info at 2.15 and later", async () => {
      const before = await commitCount(h.remoteDir);
      const stale = provisionBody(plans.serviceId, plans.medium.id, { maintenance_info: { version: "0.0.1-stale" } });
      expectOsbError(await h.osb.provision("mi-new", stale, { query: ASYNC, version: "2.15" }), 422, /maintenance_info\.version 0\.0\.1-stale/, "MaintenanceInfoConflict");
      const malformed = provisionBody(plans.serviceId, plans.medium.id, { maintenance_info: { version: 1 } });
      expectOsbError(await h.osb.provision("mi-new", malformed, { query: ASYNC, version: "2.16" }), 400, /maintenance_info\.version must be a non-empty string/);
      expect(await commitCount(h.remoteDir)).toBe(before);
    });
  });

  describe("the fields of OSB 2.16 and 2.17, and their absence before", () => {
    const plansAt = async (version: string) =>
      ((await h.osb.catalog({ version })).body.services as { plans: Record<string, unknown>[] }[]).flatMap((s) => s.plans);

    it("lists a plan's binding_rotatable at 2.17 only", async () => {
      expect((await plansAt("2.17")).map((p) => p.binding_rotatable)).toEqual([true, true]);
      for (const version of ["2.13", "2.15", "2.16"]) expect((await plansAt(version)).some((p) => "binding_rotatable" in p)).toBe(false);
    });

    it("answers instance metadata: labels from 2.16 (provision, update), attributes from 2.17, in GET instance from 2.17", async () => {
      const keys = (body: Record<string, unknown>) => Object.keys((body.metadata as object | undefined) ?? {}).sort();
      for (const [version, expected] of [["2.13", []], ["2.15", []], ["2.16", ["labels"]], ["2.17", ["attributes", "labels"]]] as const) {
        const id = `meta-${version}`;
        const provisioned = await h.osb.provision(id, provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC, version });
        expect({ version, status: provisioned.status, keys: keys(provisioned.body) }).toEqual({ version, status: 202, keys: expected });
        const updated = await h.osb.update(id, { service_id: plans.serviceId, parameters: { storageGB: 30 } }, { query: ASYNC, version });
        expect({ version, status: updated.status, keys: keys(updated.body) }).toEqual({ version, status: 202, keys: expected });
        const fetched = await h.osb.getInstance(id, { version });
        expect({ version, keys: keys(fetched.body) }).toEqual({ version, keys: version === "2.17" ? expected : [] });
      }
      expect((await h.osb.getInstance("meta-2.17")).body.metadata).toMatchObject({ labels: { "gitops-broker.io/plan": "medium" }, attributes: { "postgresql-version": "16" } });
    });

    it("answers binding metadata: expires_at from 2.16, renew_before from 2.17; rotates from 2.17, ignores predecessor_binding_id before", async () => {
      const id = "rot-versions";
      const ids = { service_id: plans.serviceId, plan_id: plans.medium.id };
      expect((await h.osb.provision(id, provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC })).status).toBe(202);
      for (const [version, expected] of [["2.13", []], ["2.15", []], ["2.16", ["expires_at"]], ["2.17", ["expires_at", "renew_before"]]] as const) {
        const bound = await h.osb.bind(id, `b-${version}`, { ...ids, predecessor_binding_id: "b-2.13" }, { version });
        const rotated = version === "2.17";
        expect({ version, status: bound.status, keys: Object.keys((bound.body.metadata as object | undefined) ?? {}) }).toEqual({ version, status: 201, keys: expected });
        expect({ version, subject: await headMessage(h.remoteDir).then((m) => m.split("\n", 1)[0]) }).toEqual({
          version,
          subject: `bind postgresql/medium instance ${id} binding b-${version}${rotated ? ", successor of b-2.13" : ""}`,
        });
        const fetched = await h.osb.getBinding(id, `b-${version}`, { version });
        expect({ version, keys: Object.keys((fetched.body.metadata as object | undefined) ?? {}) }).toEqual({ version, keys: expected });
      }
    });

    it("checks GET's service_id / plan_id hints from 2.16, ignores them before", async () => {
      const id = "hints";
      expect((await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
      const wrong = { service_id: plans.serviceId, plan_id: plans.medium.id };
      for (const version of ["2.14", "2.15"]) expect((await h.osb.getInstance(id, { query: wrong, version })).status).toBe(200);
      for (const version of ["2.16", "2.17"]) expectOsbError(await h.osb.getInstance(id, { query: wrong, version }), 400, /^plan_id .* does not match instance hints: expected small/);
      expect((await h.osb.getInstance(id, { query: { service_id: plans.serviceId, plan_id: plans.small.id } })).status).toBe(200);
    });
  });

  describe("last_operation of something that never existed", () => {
    it("answers 404 from 2.16 on and 410 before, for instances and bindings", async () => {
      for (const [version, status] of [["2.13", 410], ["2.15", 410], ["2.16", 404], ["2.17", 404]] as const) {
        const instance = await h.osb.call("GET", `${h.osb.base}/service_instances/never-was/last_operation`, undefined, { version });
        expectOsbError(instance, status, /^instance never-was does not exist$/);
        const binding = await h.osb.call("GET", `${h.osb.base}/service_instances/never-was/service_bindings/nor-this/last_operation`, undefined, { version });
        expectOsbError(binding, status, /^binding nor-this of instance never-was does not exist$/);
      }
    });

    it("answers a completed delete with its operation's state, not 404", async () => {
      const ids = { service_id: plans.serviceId, plan_id: plans.medium.id };
      expect((await h.osb.provision("gone-1", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC })).status).toBe(202);
      const deleted = await h.osb.deprovision("gone-1", { ...ids, ...ASYNC });
      expect(deleted.status).toBe(202);
      const polled = await h.osb.lastOperation("gone-1", { operation: deleted.body.operation as string });
      expect({ status: polled.status, state: polled.body.state }).toEqual({ status: 200, state: "succeeded" });
      // A second DELETE of the deleted instance: 410, as the spec says for deprovisioning.
      expectOsbError(await h.osb.deprovision("gone-1", { ...ids, ...ASYNC }), 410, /instance gone-1 does not exist/);
    });
  });
});
