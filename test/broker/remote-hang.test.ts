/**
 * The control repository's remote hangs for 90 s (a TCP proxy that accepts connections and never
 * answers): every request of every kind is answered within git.pushTimeoutSeconds plus the stated
 * margin, measured from the client, including writes queued behind a hung push and their
 * retries; a write answered 503 is never written later; the broker carries on when the remote
 * answers again. The real broker (in process, port 0) on a real remote over smart HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBroker, type RunningBroker } from "../../src/cli/serve.js";
import { silentLogger } from "../../src/log/index.js";
import { CREDENTIALS, testConfig } from "../support/broker-harness.js";
import { createTempDir, revParse } from "../support/git-fixtures.js";
import { startHangProxy, type HangProxy } from "../support/hang-proxy.js";
import { osbClient, type OsbClient } from "../support/osb-client.js";
import { expectBoundedAnswers, roundsDuring } from "../support/remote-hang.js";
import { history, startRemote, type Remote } from "../write-path/fixture.js";
import { provisionBody, readyz, samplePlans, type SamplePlans } from "./helpers.js";

const PUSH_TIMEOUT_SECONDS = 5;
const HANG_MS = Number(process.env.HANG_MS ?? 90_000);

let remote: Remote;
let proxy: HangProxy;
let broker: RunningBroker;
let osb: OsbClient;
let plans: SamplePlans;

beforeAll(async () => {
  remote = await startRemote("gitops-broker-remote-hang-");
  proxy = await startHangProxy(remote.server.port);
  const root = await createTempDir("gitops-broker-remote-hang-data-");
  broker = await startBroker(
    testConfig(root, "broker", `http://127.0.0.1:${proxy.port}/${remote.url.split("/").pop()}`, { pushTimeoutSeconds: PUSH_TIMEOUT_SECONDS, activityTimeoutSeconds: 2 }),
    { version: "test", logger: silentLogger() },
  );
  osb = osbClient(broker.url, CREDENTIALS);
  plans = await samplePlans(osb);
}, 120_000);

afterAll(async () => {
  proxy?.setHanging(false);
  await broker?.close();
  await proxy?.close();
  await remote?.close();
});

describe("a control repository whose remote hangs for 90 s", () => {
  it("answers every kind of request within its bound, writes nothing it answered 503, and carries on after", async () => {
    const body = provisionBody(plans.serviceId, plans.small.id);
    for (const id of ["hang-existing", "hang-doomed"]) expect((await osb.provision(id, body)).status).toBe(201);
    expect((await osb.bind("hang-existing", "hang-b", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(201);
    const tip = await revParse(remote.dir, "main");

    proxy.setHanging(true);
    const answers = await roundsDuring(
      osb,
      (round) => ({ serviceId: plans.serviceId, planId: plans.small.id, existing: "hang-existing", binding: "hang-b", doomed: "hang-doomed", newId: `hang-new-${round}` }),
      HANG_MS,
      3_000,
    );
    expect((await readyz(broker.url)).status).toBe(503);
    proxy.setHanging(false);

    expect(proxy.hungConnections).toBeGreaterThan(0);
    expectBoundedAnswers(answers, PUSH_TIMEOUT_SECONDS, /the Git remote of the control repository/);
    // A round of 10 requests every 3 s (at least half of them went out on a loaded machine).
    expect(answers.length).toBeGreaterThanOrEqual((HANG_MS / 3_000) * 5);

    // When the remote answers again, the next write goes through without a restart; nothing
    // answered 503 was written, then or later: one commit on top of the tip before the hang.
    expect((await osb.provision("hang-after", body)).status).toBe(201);
    const commits = await history(remote.dir);
    const since = commits.slice(0, commits.findIndex((c) => c.oid === tip));
    expect(since.map((c) => c.subject)).toEqual([expect.stringMatching(/^provision .* instance hang-after$/)]);
  }, HANG_MS + 120_000);
});
