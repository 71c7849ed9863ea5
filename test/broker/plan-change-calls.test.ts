import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { bindingRecordPath, instanceManifestDir, instanceRecordPath } from "../../src/repo/index.js";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { readRemoteFile } from "../support/git-fixtures.js";
import { expectOsbError, headMessage, provisionBody, remoteFiles, samplePlans, unchangedRemote, type SamplePlans } from "./helpers.js";

/**
 * Every call a platform makes after a plan change, in its order: provision, bind, update to
 * another plan, then GET, update, unbind and deprovision naming the instance's current plan (as
 * Cloud Foundry and Service Manager do), also for a binding made before the change. The plan it
 * was bound with is accepted too; a plan that is neither is a 400 that commits nothing.
 */

const ASYNC = { accepts_incomplete: "true" };

// Service Manager's route and /v2: the same answers.
describe.each(["/v2", "/sm/v2"])("a platform's calls after a plan change, at %s", (base) => {
  let h: Harness;
  let plans: SamplePlans;

  beforeAll(async () => {
    h = await startHarness({ osbBase: base });
    plans = await samplePlans(h.osb);
  });
  afterAll(async () => {
    await h?.close();
  });

  const unchanged = <T>(fn: () => Promise<T>): Promise<T> => unchangedRemote(h.remoteDir, fn);

  /** provision on small, bind `bindingId`, update to medium; returns the ids of the current plan. */
  async function boundThenMoved(id: string, bindingId: string): Promise<{ current: Record<string, string>; old: Record<string, string> }> {
    const old = { service_id: plans.serviceId, plan_id: plans.small.id };
    const current = { service_id: plans.serviceId, plan_id: plans.medium.id };
    expect((await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    expect((await h.osb.bind(id, bindingId, { ...old, bind_resource: { app_guid: "app-1" } })).status).toBe(201);
    const moved = await h.osb.update(id, { ...current, previous_values: { plan_id: plans.small.id, service_id: plans.serviceId } }, { query: ASYNC });
    expect(moved.status).toBe(202);
    expect((await h.osb.lastOperation(id, { operation: moved.body.operation as string, ...current })).body).toMatchObject({ state: "succeeded" });
    return { current, old };
  }

  it("unbinds a binding made before the change with the instance's current plan, then deprovisions", async () => {
    const id = "moved-1";
    const { current } = await boundThenMoved(id, "b-before");

    const unbound = await h.osb.unbind(id, "b-before", { ...current, ...ASYNC });
    expect({ status: unbound.status, body: unbound.body }).toEqual({ status: 200, body: {} });
    expect(await headMessage(h.remoteDir)).toMatch(new RegExp(`^unbind postgresql/medium instance ${id} binding b-before\n`));
    expect(parse((await readRemoteFile(h.remoteDir, "main", bindingRecordPath(id, "b-before"))) ?? "").status).toMatchObject({ deleted: true });
    const manifests = await remoteFiles(h.remoteDir, instanceManifestDir("local", id));
    const texts = await Promise.all(manifests.map((f) => readRemoteFile(h.remoteDir, "main", f)));
    expect(texts.join("\n")).not.toContain("b-before");
    // Sent again: gone, with either plan.
    expectOsbError(await unchanged(() => h.osb.unbind(id, "b-before", { ...current, ...ASYNC })), 410, /binding b-before of instance moved-1 does not exist/);

    const deleted = await h.osb.deprovision(id, { ...current, ...ASYNC });
    expect(deleted.status).toBe(202);
    expect((await h.osb.lastOperation(id, { operation: deleted.body.operation as string, ...current })).body).toMatchObject({ state: "succeeded" });
    expect(await remoteFiles(h.remoteDir, instanceManifestDir("local", id))).toEqual([]);
    expect(parse((await readRemoteFile(h.remoteDir, "main", instanceRecordPath(id))) ?? "").status).toMatchObject({ deleted: true });
  });

  it("unbinds with the plan the binding was made with too", async () => {
    const id = "moved-2";
    const { old } = await boundThenMoved(id, "b-old-plan");
    const unbound = await h.osb.unbind(id, "b-old-plan", { ...old, ...ASYNC });
    expect(unbound.status).toBe(200);
    expect(await headMessage(h.remoteDir)).toMatch(/^unbind postgresql\/medium instance moved-2 binding b-old-plan\n/);
  });

  it("GET instance and GET binding take the current plan as hint (and the binding its bind-time plan)", async () => {
    const id = "moved-3";
    const { current, old } = await boundThenMoved(id, "b-get");
    const instance = await h.osb.getInstance(id, { query: current });
    expect({ status: instance.status, plan: instance.body.plan_id }).toEqual({ status: 200, plan: plans.medium.id });
    for (const query of [current, old, { plan_id: plans.medium.id }, {}]) {
      const binding = await h.osb.getBinding(id, "b-get", { query });
      expect({ query, status: binding.status }).toEqual({ query, status: 200 });
    }
    // The instance no longer has the old plan: the change succeeded.
    expectOsbError(
      await h.osb.getInstance(id, { query: old }),
      400,
      new RegExp(`^plan_id ${plans.small.id} does not match instance moved-3: expected medium \\(${plans.medium.id}\\), its plan$`),
      "BadRequest",
    );
  });

  it("updates after the change, naming the current plan as plan_id and previous plan", async () => {
    const id = "moved-4";
    const { current } = await boundThenMoved(id, "b-upd");
    const res = await h.osb.update(
      id,
      { ...current, parameters: { storageGB: 40 }, previous_values: { plan_id: plans.medium.id, service_id: plans.serviceId } },
      { query: ASYNC },
    );
    expect(res.status).toBe(202);
    expect(await headMessage(h.remoteDir)).toMatch(/^update postgresql\/medium instance moved-4\n/);
    // The binding made on small keeps its database user through the update.
    const manifests = await remoteFiles(h.remoteDir, instanceManifestDir("local", id));
    const texts = await Promise.all(manifests.map((f) => readRemoteFile(h.remoteDir, "main", f)));
    expect(texts.join("\n")).toContain("b-upd: []");
    expect((await h.osb.getInstance(id, { query: current })).body).toMatchObject({ plan_id: plans.medium.id, parameters: { storageGB: 40 } });
  });

  it("answers 400 for a plan that is neither, or another service, and commits nothing", async () => {
    const id = "moved-5";
    const { current } = await boundThenMoved(id, "b-neither");
    const neither = { service_id: plans.serviceId, plan_id: "no-such-plan" };
    expectOsbError(
      await unchanged(() => h.osb.unbind(id, "b-neither", { ...neither, ...ASYNC })),
      400,
      new RegExp(
        `^plan_id no-such-plan does not match binding b-neither of instance moved-5: expected medium \\(${plans.medium.id}\\), its plan, ` +
          `or small \\(${plans.small.id}\\), the plan it was bound with$`,
      ),
      "BadRequest",
    );
    expectOsbError(await unchanged(() => h.osb.unbind(id, "b-neither", { ...current, service_id: "other-service", ...ASYNC })), 400, /^service_id other-service does not match the service of binding b-neither of instance moved-5/);
    expectOsbError(await unchanged(() => h.osb.deprovision(id, { ...neither, ...ASYNC })), 400, /^plan_id no-such-plan does not match instance moved-5: expected medium/);
    expectOsbError(await unchanged(() => h.osb.deprovision(id, { service_id: plans.serviceId, plan_id: plans.small.id, ...ASYNC })), 400, /^plan_id .* does not match instance moved-5/);
    expectOsbError(await h.osb.getInstance(id, { query: neither }), 400, /^plan_id no-such-plan does not match instance moved-5/);
    expectOsbError(await h.osb.getBinding(id, "b-neither", { query: neither }), 400, /^plan_id no-such-plan does not match binding b-neither/);
    expectOsbError(await h.osb.getBinding(id, "b-neither", { query: { plan_id: "" } }), 400, /^fetch binding: query parameter plan_id must be a non-empty string$/);
    // Before OSB 2.16 GET has no such parameters: ignored.
    expect((await h.osb.getInstance(id, { query: neither, version: "2.15" })).status).toBe(200);
    // And the binding is still there, unbound with the current plan.
    expect((await h.osb.unbind(id, "b-neither", { ...current, ...ASYNC })).status).toBe(200);
  });
});
