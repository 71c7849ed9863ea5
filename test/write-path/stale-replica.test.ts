import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { provisionBody, samplePlans, type SamplePlans } from "../broker/helpers.js";
import { startHarness, type Harness } from "../support/broker-harness.js";
import type { OsbClient } from "../support/osb-client.js";
import { instanceRecords } from "./fixture.js";

/**
 * Two brokers on one smart-HTTP remote, polling once an hour: replica B has not fetched since
 * replica A provisioned. A negative answer ("gone", "not found") is only given from a view known
 * to be current (ADR 0012): B confirms with a fetch before it says so, and answers from the
 * remote instead of orphaning A's instances.
 */

const N = 20;
let h: Harness;
let a: OsbClient;
let b: OsbClient;
let plans: SamplePlans;

beforeAll(async () => {
  h = await startHarness();
  a = h.osb;
  b = (await h.startReplica("broker-2")).osb;
  plans = await samplePlans(a);
});
afterAll(async () => {
  await h?.close();
});

const fetches = () => h.git.requests.filter((r) => r.path.endsWith("/git-upload-pack")).length;
const ids = () => ({ service_id: plans.serviceId, plan_id: plans.small.id });

describe("a replica whose view predates the request", () => {
  it(`provisioned through A, then read, bound and deprovisioned through B: no 404 or 410, nothing orphaned`, async () => {
    const provisioned = await Promise.all(
      Array.from({ length: N }, (_, i) => a.provision(`stale-${i}`, provisionBody(plans.serviceId, plans.small.id))),
    );
    expect(provisioned.map((r) => r.status)).toEqual(provisioned.map(() => 201));

    // B last fetched at its start: each of these would be "does not exist" from its own copy.
    for (let i = 0; i < 5; i++) expect((await b.getInstance(`stale-${i}`)).status).toBe(200);
    for (let i = 5; i < 10; i++) {
      const polled = await b.lastOperation(`stale-${i}`);
      expect({ status: polled.status, state: polled.body.state }).toEqual({ status: 200, state: "succeeded" });
    }
    const bound = await Promise.all(
      Array.from({ length: 5 }, (_, i) => b.bind(`stale-${10 + i}`, `bind-${i}`, { ...ids(), bind_resource: { app_guid: "app" } })),
    );
    expect(bound.map((r) => r.status)).toEqual(bound.map(() => 201));

    const deprovisioned = await Promise.all(Array.from({ length: N }, (_, i) => b.deprovision(`stale-${i}`, ids())));
    expect(deprovisioned.map((r) => r.status)).toEqual(deprovisioned.map(() => 200));
    const records = await instanceRecords(h.remoteDir);
    for (let i = 0; i < N; i++) expect(records.get(`stale-${i}`)?.status.deleted, `stale-${i}`).toBe(true);
  });

  it("an answer from a current view costs no fetch; a true 410 costs one", async () => {
    expect((await b.provision("fresh-1", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    const before = fetches();
    expect((await b.getInstance("fresh-1")).status).toBe(200);
    expect((await b.lastOperation("fresh-1")).status).toBe(200);
    expect((await b.update("fresh-1", { service_id: plans.serviceId, parameters: { storageGB: 20 } })).status).toBe(200);
    expect(fetches()).toBe(before);

    // What really does not exist: B fetches once, then says so (the remote did not move).
    expect((await b.deprovision("never-was", ids())).status).toBe(410);
    expect(fetches() - before).toBe(1);
    expect((await b.getInstance("never-was")).status).toBe(404);
    expect(fetches() - before).toBe(2);
  });
});
