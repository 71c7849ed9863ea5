import { performance } from "node:perf_hooks";
import { afterAll, describe, expect, it, vi } from "vitest";
import { instanceRecordPath, recordYaml } from "../../src/repo/index.js";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { pushExternalCommit } from "../support/git-fixtures.js";
import { provisionBody, samplePlans } from "./helpers.js";
import { countCommits, editedPlan, filesWith, provisionTemplate, SMALL } from "./reconcile-support.js";
import { EVENT_CEILING_MS, PROCESS_TEST_TIMEOUT_MS } from "../support/processes.js";
import { provisionedRecord } from "../support/records.js";

let h: Harness | undefined;
afterAll(async () => {
  await h?.close();
});

// The limit makes N re-renders last at least (N - batchSize) / PER_SECOND s (4.5 s), and N is
// enough that a provision made once 8 are done is acknowledged with many left (it queues behind
// at most one batch), with seconds to spare on a loaded machine.
const N = 40;
const PER_SECOND = 8;

describe("mass re-render", () => {
  it("is rate-limited and batched, and an OSB provision during it is acknowledged long before it ends", async () => {
    // The instances only need to be there: their records come with the remote's first commit
    // (as a restarted broker finds them), not through N provisions. Never rendered, they are not
    // caught up at the start (src/reconcile/catch-up.ts), and each gets its re-render commit below.
    const ids = Array.from({ length: N }, (_, i) => `mass-${i}`);
    const records = Object.fromEntries(ids.map((id) => [instanceRecordPath(id), recordYaml(provisionedRecord(id))]));
    h = await startHarness({
      files: { ...(await filesWith(({ small }) => (small.spec.autoUpdateInstances = true))), ...records },
      configure: (c) => (c.reconcile = { maxPerSecond: PER_SECOND, batchSize: 4, retrySeconds: 30 }),
    });
    const plans = await samplePlans(h.osb);
    expect(plans.small.id).toBe(provisionedRecord("x").spec.planId);
    expect(await countCommits(h.remoteDir, "^re-render ")).toBe(0);

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
    // 40 re-renders at 8 per second take at least 4.5 s (the first batch goes at once).
    expect(elapsed).toBeGreaterThanOrEqual(((N - 4) / PER_SECOND) * 1000);
    // The instance provisioned during the re-render was rendered from the new plan and is not re-rendered.
    expect(await countCommits(h.remoteDir, "^re-render postgresql/small instance during$")).toBe(0);
    // 41 commits and pushes: a minute on a loaded machine (a ceiling for a hang, not a budget).
  }, PROCESS_TEST_TIMEOUT_MS);
});
