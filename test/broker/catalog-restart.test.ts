import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pushExternalCommit, readRemoteFile } from "../support/git-fixtures.js";
import { expectOsbError, provisionBody, samplePlans, type SamplePlans } from "./helpers.js";
import { editedPlan, filesWith, SMALL } from "./reconcile-support.js";
import { restartable, type Restartable } from "./restart-support.js";

/**
 * ADR 0012, the last good catalog survives a restart: a broker restarted on a catalog with
 * problems serves the last good catalog, which it finds in the branch's history (Git is its only
 * store), as a broker that had kept running would have kept it. Real restarts: the same data
 * directory and smart-HTTP remote.
 */

const LARGE = "catalog/postgresql/plans/large.yaml";

let r: Restartable;
let remoteDir: string;
let seeded: string;

beforeEach(async () => {
  r = await restartable(await filesWith(() => undefined));
  ({ remoteDir, seeded } = r);
});

afterEach(async () => {
  await r.close();
});

/** (Re)start the broker on its one data directory, with metrics on port 0. */
const start = () =>
  r.start((config) => {
    config.metrics.listen = { host: "127.0.0.1", port: 0 };
  });
const stop = () => r.stop();

function planNames(body: unknown): string[] {
  const services = (body as { services: { plans: { name: string }[] }[] }).services;
  return services.flatMap((s) => s.plans.map((p) => p.name)).sort();
}

async function metric(url: string, name: string): Promise<string[]> {
  const text = await (await fetch(url)).text();
  return text.split("\n").filter((l) => l.startsWith(name));
}

/** A copy of plan small under a new id and name: a plan that was never good when it is broken. */
async function largePlan(): Promise<string> {
  return editedPlan(remoteDir, SMALL, (p) => {
    p.spec.id = "5f2a0a8e-7d0c-4c59-9d0e-3c1b7f0e2a11";
    p.spec.name = "large";
  });
}

describe("restart on a catalog with problems (ADR 0012)", () => {
  it("serves the last good catalog from history: the plan in use stays, its instances and new provisions work", async () => {
    let { osb } = await start();
    const plans: SamplePlans = await samplePlans(osb);
    expect((await osb.provision("in-use-1", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    await stop();

    // While the broker is down: plan small breaks (its YAML no longer parses), and a plan that
    // was never good arrives broken.
    const large = await largePlan();
    const brokenSmall = `${(await editedPlan(remoteDir, SMALL, () => undefined)).replace("spec:", "spec: [")}\n`;
    await pushExternalCommit(remoteDir, { [SMALL]: brokenSmall }, "small: a typo");
    const broken = await pushExternalCommit(remoteDir, { [LARGE]: large.replace("spec:", "spec:\n  bogus: [") }, "large: new plan, broken");

    ({ osb } = await start());
    const catalog = await osb.catalog();
    expect(catalog.status).toBe(200);
    // The last good catalog: small and medium as they were; large was never good, so it is absent.
    expect(planNames(catalog.body)).toEqual(["medium", "small"]);
    // The instance of the plan keeps working (was 422), a new provision of it too (was 400).
    expect((await osb.update("in-use-1", { service_id: plans.serviceId, plan_id: plans.small.id, parameters: {} })).status).toBe(200);
    expect((await osb.provision("after-1", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    // A plan that never loaded is not in any good catalog: 400, as for any unknown plan.
    const neverGood = await osb.provision("never-good-1", provisionBody(plans.serviceId, "5f2a0a8e-7d0c-4c59-9d0e-3c1b7f0e2a11"));
    expectOsbError(neverGood, 400, /plan/);

    // Said loudly: /readyz (a warning line naming the commit), the log, the metric.
    // Warnings, not unreadiness: the broker serves, and every replica would fail the same way.
    const ready = await osb.call("GET", "/readyz");
    expect(ready.status).toBe(200);
    const checks = (ready.body as { checks: { name: string; ok: boolean; message?: string; severity?: string }[] }).checks;
    const source = checks.find((c) => c.name === "catalog-source");
    expect(source).toMatchObject({ ok: false, severity: "warning" });
    expect(source?.message).toContain(`last good catalog, of commit ${seeded}, found 2 catalog change(s) back`);
    expect(checks.find((c) => c.name === "repository")).toMatchObject({ ok: false, severity: "warning" });
    expect(checks.find((c) => c.name === "repository")?.message).toMatch(/catalog\/postgresql\/plans\/small\.yaml/);
    const restored = r.logLines.find((l) => typeof l.msg === "string" && l.msg.includes("serving the last good catalog"));
    expect(restored).toMatchObject({ level: 50, commit: broken, catalogCommit: seeded, back: 2 });
    expect(await metric(r.broker!.metricsUrl!, "gitops_broker_catalog_state")).toEqual(
      expect.arrayContaining(['gitops_broker_catalog_state{state="last-good"} 1', 'gitops_broker_catalog_state{state="tip"} 0']),
    );

    // Fixed on the branch: the tip's catalog is served again, large included.
    await pushExternalCommit(remoteDir, { [SMALL]: (await readRemoteFile(remoteDir, seeded, SMALL)) ?? "", [LARGE]: large }, "fix");
    await r.broker!.writer.refresh();
    expect(planNames((await osb.catalog()).body)).toEqual(["large", "medium", "small"]);
    expect(await metric(r.broker!.metricsUrl!, "gitops_broker_catalog_state")).toEqual(expect.arrayContaining(['gitops_broker_catalog_state{state="tip"} 1']));
  });

  it("a catalog change that strands a plan's instances is not taken for the last good catalog", async () => {
    let { osb } = await start();
    const plans = await samplePlans(osb);
    expect((await osb.provision("stranded-1", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    await stop();
    // small removed while it has an instance (loads fine, but strands it), then medium broken.
    await pushExternalCommit(remoteDir, { [SMALL]: null }, "small: removed");
    await pushExternalCommit(remoteDir, { "catalog/postgresql/plans/medium.yaml": "spec: [\n" }, "medium: broken");
    ({ osb } = await start());
    expect(planNames((await osb.catalog()).body)).toEqual(["medium", "small"]);
    expect((await osb.deprovision("stranded-1", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(200);
    const line = r.logLines.find((l) => l.catalogCommit !== undefined);
    expect(line).toMatchObject({ catalogCommit: seeded, back: 2 });
  });
});
