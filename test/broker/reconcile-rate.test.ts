import { performance } from "node:perf_hooks";
import { afterAll, describe, expect, it, vi } from "vitest";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { pushExternalCommit } from "../support/git-fixtures.js";
import { provisionBody, samplePlans } from "./helpers.js";
import { countCommits, editedPlan, filesWith, provisionTemplate, SMALL } from "./reconcile-support.js";
import { EVENT_CEILING_MS, PROCESS_TEST_TIMEOUT_MS } from "../support/processes.js";

let h: Harness | undefined;
afterAll(async () => {
  await h?.close();
});

const N = 100;
const PER_SECOND = 40;

describe("mass re-render", () => {
  it("is rate-limited and batched, and an OSB provision during it is acknowledged long before it ends", async () => {
    h = await startHarness({
      files: await filesWith(({ small }) => (small.spec.autoUpdateInstances = true)),
      configure: (c) => (c.reconcile = { maxPerSecond: PER_SECOND, batchSize: 4, retrySeconds: 30 }),
    });
    const plans = await samplePlans(h.osb);
    const ids = Array.from({ length: N }, (_, i) => `mass-${i}`);
    const replies = await Promise.all(ids.map((id) => h!.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))));
    expect(replies.map((r) => r.status)).toEqual(ids.map(() => 201));

    const edited = await editedPlan(h.remoteDir, SMALL, (p) => {
      const t = provisionTemplate(p);
      t.content = t.content.replace("numberOfInstances: 1", "numberOfInstances: 2");
    });
    await pushExternalCommit(h.remoteDir, { [SMALL]: edited }, "small: two servers");
    const started = performance.now();
    await h.broker.writer.refresh();
    // The mass re-render is under way...
    await vi.waitFor(async () => expect(await countCommits(h!.remoteDir, "^re-render ")).toBeGreaterThanOrEqual(8), { timeout: EVENT_CEILING_MS, interval: 200 });

    // ...and a provision queues behind at most one batch of it (batchSize 4; one more may have
    // been counted late), so it is acknowledged long before the mass re-render ends.
    const doneBefore = await countCommits(h.remoteDir, "^re-render ");
    const res = await h.osb.provision("during", provisionBody(plans.serviceId, plans.small.id));
    expect(res.status).toBe(201);
    const doneWhenAcknowledged = await countCommits(h.remoteDir, "^re-render ");
    expect(doneWhenAcknowledged).toBeLessThan(N);
    expect(doneWhenAcknowledged - doneBefore).toBeLessThanOrEqual(8);

    await h.broker.reconciler.idle();
    const elapsed = performance.now() - started;
    expect(await countCommits(h.remoteDir, "^re-render ")).toBe(N);
    // 100 re-renders at 40 per second take at least 2.5 s (the first batch goes at once).
    expect(elapsed).toBeGreaterThanOrEqual(((N - 4) / PER_SECOND) * 1000);
    // The instance provisioned during the re-render was rendered from the new plan and is not re-rendered.
    expect(await countCommits(h.remoteDir, "^re-render postgresql/small instance during$")).toBe(0);
    // 200 commits and pushes: minutes on a loaded machine (a ceiling for a hang, not a budget).
  }, PROCESS_TEST_TIMEOUT_MS);
});
