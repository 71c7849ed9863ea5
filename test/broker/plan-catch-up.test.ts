import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { pushExternalCommit } from "../support/git-fixtures.js";
import { provisionBody, remoteHead, samplePlans } from "./helpers.js";
import { commitsIn, editedPlan, filesWith, MEDIUM, postgresql, provisionTemplate, SMALL } from "./reconcile-support.js";
import { restartable, type Restartable } from "./restart-support.js";

/**
 * ADR 0012, plan changes merged while no broker ran: a plan with autoUpdateInstances changed
 * while the broker was down. The restarted broker finds in Git which instances were not rendered
 * since the plan's current version came in, and re-renders exactly those, through the
 * reconciler's queue. Real restarts: the same data directory and smart-HTTP remote.
 */

let r: Restartable;

beforeEach(async () => {
  r = await restartable(await filesWith(({ small }) => (small.spec.autoUpdateInstances = true)));
});

afterEach(async () => {
  await r.close();
});

/** Plan small (autoUpdateInstances) with `n` database servers. */
async function smallWith(n: number): Promise<string> {
  return editedPlan(r.remoteDir, SMALL, (p) => {
    const t = provisionTemplate(p);
    t.content = t.content.replace(/numberOfInstances: \d+/, `numberOfInstances: ${n}`);
  });
}

describe("plan changes merged while the broker was down (ADR 0012)", () => {
  it("are applied after the restart to exactly the instances rendered before them, one commit each", async () => {
    let { osb } = await r.start();
    const plans = await samplePlans(osb);
    for (const id of ["a-1", "a-2", "gone-1"]) expect((await osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    expect((await osb.provision("m-1", provisionBody(plans.serviceId, plans.medium.id), { query: { accepts_incomplete: "true" } })).status).toBe(202);
    expect((await osb.deprovision("gone-1", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(200);
    const mediumBefore = await postgresql(r.remoteDir, "m-1");
    await r.stop();

    // While it is down: small gets two servers (medium, without autoUpdateInstances, five).
    const change = await pushExternalCommit(
      r.remoteDir,
      { [SMALL]: await smallWith(2), [MEDIUM]: await editedPlan(r.remoteDir, MEDIUM, (p) => (p.spec.context.numberOfInstances = 5)) },
      "small: two servers; medium: five",
    );

    const restarted = await r.start();
    osb = restarted.osb;
    await restarted.broker.reconciler.idle();
    const after = await commitsIn(r.remoteDir, `${change}..main`);
    expect(after.map((c) => c.subject).sort()).toEqual(["re-render postgresql/small instance a-1", "re-render postgresql/small instance a-2"]);
    for (const c of after) {
      expect(c.trailers).toEqual({ Reason: "plan-changed", "Plan-Commit": change, "Instance-Id": c.subject.split(" ").pop(), "Broker-Version": "gitops-broker/test" });
    }
    expect((await postgresql(r.remoteDir, "a-1")).spec.numberOfInstances).toBe(2);
    expect((await postgresql(r.remoteDir, "a-2")).spec.numberOfInstances).toBe(2);
    expect(await postgresql(r.remoteDir, "m-1")).toEqual(mediumBefore);

    // Provisioned after the change, then a restart: everything is rendered from the current
    // version, so nothing is re-rendered again.
    expect((await osb.provision("b-1", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    const settled = await remoteHead(r.remoteDir);
    await r.stop();
    const again = await r.start();
    // The start's own catch-up, and one more by hand: neither finds anything to re-render.
    await again.broker.reconciler.idle();
    expect(await again.broker.reconciler.catchUp()).toBe(0);
    await again.broker.reconciler.idle();
    expect(await remoteHead(r.remoteDir)).toBe(settled);
  });

  it("a re-render the running broker had not done yet is done by the next start, citing the change", async () => {
    const started = await r.start((config) => {
      // One re-render at a time, one per minute: the second is still queued when the broker
      // stops, however loaded the machine. The stop ends that pause (it does not wait it out).
      config.reconcile = { maxPerSecond: 1 / 60, batchSize: 1, retrySeconds: 30 };
    });
    let { broker } = started;
    const plans = await samplePlans(started.osb);
    for (const id of ["q-1", "q-2"]) expect((await started.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    const change = await pushExternalCommit(r.remoteDir, { [SMALL]: await smallWith(3) }, "small: three servers");
    await broker.writer.refresh();
    // The first re-render is pushed; the second waits for the rate.
    for (let i = 0; i < 600 && (await commitsIn(r.remoteDir, `${change}..main`)).length === 0; i++) await new Promise((x) => setTimeout(x, 100));
    const first = await commitsIn(r.remoteDir, `${change}..main`);
    expect(first).toHaveLength(1);
    await r.stop(); // queued re-renders are dropped

    ({ broker } = await r.start());
    await broker.reconciler.idle();
    const all = await commitsIn(r.remoteDir, `${change}..main`);
    expect(all.map((c) => c.trailers["Instance-Id"]).sort()).toEqual(["q-1", "q-2"]);
    expect(all.every((c) => c.trailers["Plan-Commit"] === change)).toBe(true);
    for (const id of ["q-1", "q-2"]) expect((await postgresql(r.remoteDir, id)).spec.numberOfInstances).toBe(3);
  });

  it("overrides merged or removed while the broker was down are applied after the restart", async () => {
    const started = await r.start();
    const plans = await samplePlans(started.osb);
    for (const id of ["o-1", "o-2", "o-3"]) expect((await started.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    const override = (n: number) =>
      stringify({
        apiVersion: "gitops-broker.io/v1alpha1",
        kind: "Override",
        target: { apiVersion: "acid.zalan.do/v1", kind: "postgresql", name: "pg-o-2" },
        patch: { spec: { numberOfInstances: n } },
      });
    // o-2's override is applied while the broker runs.
    await pushExternalCommit(r.remoteDir, { "overrides/o-2/replicas.yaml": override(4) }, "o-2: four servers");
    await started.broker.writer.refresh();
    await started.broker.reconciler.idle();
    expect((await postgresql(r.remoteDir, "o-2")).spec.numberOfInstances).toBe(4);
    await r.stop();

    // While it is down: o-1 gets an override, o-2's is removed.
    const added = await pushExternalCommit(r.remoteDir, { "overrides/o-1/replicas.yaml": override(3).replace("pg-o-2", "pg-o-1") }, "o-1: three servers");
    const removed = await pushExternalCommit(r.remoteDir, { "overrides/o-2": null }, "o-2: back to one");

    const restarted = await r.start();
    await restarted.broker.reconciler.idle();
    const after = await commitsIn(r.remoteDir, `${removed}..main`);
    expect(after.map((c) => [c.trailers["Instance-Id"], c.trailers.Reason, c.trailers["Override-Commit"]]).sort()).toEqual([
      ["o-1", "override-changed", added],
      ["o-2", "override-changed", removed],
    ]);
    expect((await postgresql(r.remoteDir, "o-1")).spec.numberOfInstances).toBe(3);
    expect((await postgresql(r.remoteDir, "o-2")).spec.numberOfInstances).toBe(1);
    expect((await postgresql(r.remoteDir, "o-3")).spec.numberOfInstances).toBe(1);
  });
});
