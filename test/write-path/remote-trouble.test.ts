import { rm } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installPreReceiveHook, revParse } from "../support/git-fixtures.js";
import { PROCESS_TEST_TIMEOUT_MS, stopProcesses } from "../support/processes.js";
import { spawnBroker, type BrokerProcess } from "./broker-process.js";
import { history, samplePlans, send, startRemote, type Remote, type SamplePlans } from "./fixture.js";

/**
 * The remote goes away, answers 503, or refuses a push in a hook: the broker answers 503 with
 * Retry-After and an OSB body once `git.pushTimeoutSeconds` is over, writes nothing half, says
 * what the remote said, and carries on by itself when the remote is back.
 */

const PUSH_TIMEOUT_SECONDS = 2;

let remote: Remote;
let broker: BrokerProcess;
let plans: SamplePlans;

beforeAll(async () => {
  remote = await startRemote("write-path-trouble-");
  broker = await spawnBroker({ dataDir: path.join(remote.root, "broker"), remoteUrl: remote.url, pushTimeoutSeconds: PUSH_TIMEOUT_SECONDS });
  plans = await samplePlans(broker.osb);
}, PROCESS_TEST_TIMEOUT_MS);

afterAll(async () => {
  await broker?.stop();
  await stopProcesses();
  await remote?.close();
}, PROCESS_TEST_TIMEOUT_MS);

function provision(instanceId: string) {
  const body = { service_id: plans.serviceId, plan_id: plans.small, organization_guid: "org", space_guid: "space" };
  return send(broker.osb, { kind: "provision", instanceId }, body, plans);
}

/** Provisions `instanceId` during an outage: 503 after the bound, nothing written anywhere. */
async function provisionDuringOutage(instanceId: string, said: RegExp): Promise<void> {
  const tip = await revParse(remote.dir, "main");
  const started = performance.now();
  const { reply } = await provision(instanceId);
  const elapsed = performance.now() - started;

  expect(reply?.status).toBe(503);
  expect(Number(reply?.headers.get("retry-after"))).toBeGreaterThan(0);
  expect(reply?.body).toEqual({ description: expect.stringMatching(said) });
  // Not before the bound; and an answer at all means the broker gave up by itself, since the
  // remote stays down until it answered (no upper bound in wall-clock time: a loaded machine is slow).
  expect(elapsed).toBeGreaterThanOrEqual(PUSH_TIMEOUT_SECONDS * 1000);
  expect((await broker.osb.call("GET", "/readyz")).status).toBe(503);
  // Nothing half-written: not on the remote, not in the broker's view, not on its local branch.
  expect(await revParse(remote.dir, "main")).toBe(tip);
  expect(await revParse(path.join(remote.root, "broker", "work.git"), "refs/heads/main")).toBe(tip);
  // "Does not exist" is only said from a view known to be current (ADR 0012): with the remote
  // down the broker cannot confirm it, so polling answers 503 too, not 404 or 410.
  expect((await broker.osb.lastOperation(instanceId)).status).toBe(503);
}

/** After the outage, without a restart: the next request and the retry of the failed one succeed. */
async function recovers(failed: string, next: string): Promise<void> {
  // Confirmed with the remote: the failed provision never happened (404 at OSB 2.17).
  expect((await broker.osb.lastOperation(failed)).status).toBe(404);
  expect((await provision(next)).reply?.status).toBe(201);
  expect((await provision(failed)).reply?.status).toBe(201);
  expect((await broker.osb.call("GET", "/readyz")).status).toBe(200);
  const provisioned = (await history(remote.dir)).filter((c) => c.subject.startsWith("provision ")).map((c) => c.trailers["Instance-Id"]);
  expect(provisioned.filter((id) => id === failed || id === next)).toEqual([failed, next]);
}

describe("remote trouble", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("remote down (connection refused): 503 + Retry-After after the bound, then recovery without restart", async () => {
    await remote.server.stop();
    try {
      await provisionDuringOutage("down-1", /could not be reached.*(Failed to connect|Couldn't connect)/s);
    } finally {
      await remote.server.start();
    }
    await recovers("down-1", "down-2");
  });

  it("remote answering 503: the same, with the remote's answer in the description", async () => {
    remote.server.setAvailable(false);
    try {
      await provisionDuringOutage("unavailable-1", /could not be reached.*503/s);
    } finally {
      remote.server.setAvailable(true);
    }
    await recovers("unavailable-1", "unavailable-2");
  });

  it("a push refused by a pre-receive hook: the hook's message in the OSB description and in the logs", async () => {
    const message = "policy: org org has reached its instance quota";
    await installPreReceiveHook(remote.dir, `echo "${message}" >&2\nexit 1\n`);
    try {
      const { reply } = await provision("refused-1");
      expect(reply?.status).toBe(503);
      expect(reply?.body).toEqual({ description: `the Git remote of the control repository refused the change: ${message}` });
      // Log lines come through a pipe, the answer through a socket: wait for them.
      await broker.waitForLog((l) => l.msg === "push refused by the remote" && l.remoteMessage === message);
      // The error middleware logs the 503 with its description (the remote's message) and cause.
      const logged = await broker.waitForLog((l) => l.status === 503 && l.path === "/v2/service_instances/refused-1" && l.msg !== "request");
      expect(logged.msg).toBe(`the Git remote of the control repository refused the change: ${message}`);
    } finally {
      await rm(path.join(remote.dir, "hooks", "pre-receive"));
    }
    expect((await provision("refused-2")).reply?.status).toBe(201);
    expect((await history(remote.dir)).map((c) => c.trailers["Instance-Id"])).not.toContain("refused-1");
  });
});
