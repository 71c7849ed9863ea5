import { readdir, mkdir } from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fsck, installPreReceiveHook } from "../support/git-fixtures.js";
import { PROCESS_TEST_TIMEOUT_MS, stopProcesses, waitUntil } from "../support/processes.js";
import { spawnBroker, type BrokerProcess } from "./broker-process.js";
import { counts, history, instanceRecords, loadAndKill, samplePlans, send, startRemote, type Remote, type SamplePlans, type Sent } from "./fixture.js";

/**
 * kill -9 of a broker under load, again and again on the same data directory: before, during and
 * after pushes. Acknowledged operations must all be on the remote, once; requests that got no
 * answer are retried and answered as OSB says (the same instance exists: 200; it does not: 201/202).
 */

const CLIENTS = 8;

let remote: Remote;
let gate: string;
let dataDir: string;
let plans: SamplePlans;
let live: BrokerProcess | undefined;

beforeAll(async () => {
  remote = await startRemote("write-path-kill-");
  gate = path.join(remote.root, "gate");
  await mkdir(gate);
  // Every push announces itself and takes a little longer, so kills can land in the middle of one.
  await installPreReceiveHook(remote.dir, `touch ${gate}/in-push-$$\nsleep 0.1\nrm -f ${gate}/in-push-$$\n`);
  dataDir = path.join(remote.root, "broker");
}, PROCESS_TEST_TIMEOUT_MS);

afterAll(async () => {
  await live?.stop();
  // Whatever a failed or timed-out round left running, before its directories go.
  await stopProcesses();
  await remote?.close();
}, PROCESS_TEST_TIMEOUT_MS);

/** Resolves when the `nth` push (counted from the call) is in flight on the remote. */
async function pushInFlight(nth: number): Promise<void> {
  const seen = new Set<string>();
  await waitUntil(
    async () => {
      for (const name of await readdir(gate)) if (name.startsWith("in-push-")) seen.add(name);
      return seen.size >= nth;
    },
    `push ${nth} in flight`,
    { intervalMs: 2 },
  );
}

/** When to kill: a delay after the load starts, right after the first acknowledgement, or during the nth push. */
type KillPoint = { delayMs: number } | { afterFirstAck: true } | { duringPush: number };

// Each round costs a broker start. The fixed delays land somewhere in the first requests (on a
// loaded machine all before the first push); the windows the test asserts are hit by the points
// tied to events: the pushes in flight carry requests that get no answer (committed), the
// requests queued behind them get none either (lost).
const KILL_POINTS: KillPoint[] = [
  { delayMs: 0 },
  { delayMs: 200 },
  { delayMs: 900 },
  { afterFirstAck: true },
  { duringPush: 1 },
  { duringPush: 3 },
  { duringPush: 6 },
];

function provisionBody(n: number): Record<string, unknown> {
  // Every third one is the asynchronous plan (202 with an operation).
  return { service_id: plans.serviceId, plan_id: n % 3 === 0 ? plans.medium : plans.small, organization_guid: "org", space_guid: "space" };
}

/** Load on a broker until it is killed at `point`; every request sent, answered or not. */
function loadUntilKill(broker: BrokerProcess, round: number, point: KillPoint): Promise<Sent[]> {
  return loadAndKill(broker, plans, {
    clients: CLIENTS,
    provision: (c, n) => ({ instanceId: `k${round}-c${c}-${n}`, body: provisionBody(n) }),
    until: async (progress) => {
      if ("afterFirstAck" in point) await waitUntil(() => progress.acked, "a first acknowledgement");
      else if ("duringPush" in point) await pushInFlight(point.duringPush);
      else await sleep(point.delayMs);
    },
  });
}

describe("kill -9 under load", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it(`loses and duplicates nothing over ${KILL_POINTS.length} kills; retried requests are answered per OSB`, async () => {
    const sent: Sent[] = [];
    for (const [round, point] of KILL_POINTS.entries()) {
      const broker = await spawnBroker({ dataDir, remoteUrl: remote.url, keepLogs: false });
      plans ??= await samplePlans(broker.osb);
      sent.push(...(await loadUntilKill(broker, round, point)));
    }
    const answered = sent.filter((s) => s.reply !== undefined);
    const unanswered = sent.filter((s) => s.reply === undefined);
    // A killed broker gives no answer; one that answered acknowledged (nothing else can fail here).
    expect(answered.map((s) => s.reply!.status).filter((status) => status !== 201 && status !== 202)).toEqual([]);
    expect(answered.length).toBeGreaterThan(20);
    expect(unanswered.length).toBeGreaterThan(0);

    // A replacement on the same data directory starts from what the kills left behind.
    live = await spawnBroker({ dataDir, remoteUrl: remote.url });
    const beforeRetries = await history(remote.dir);
    const acknowledged = new Set(answered.map((s) => s.identity));
    const inHistory = counts(beforeRetries.map((c) => c.trailers["Request-Identity"] ?? ""));
    for (const s of answered) expect(inHistory.get(s.identity), `${s.instanceId} was acknowledged`).toBe(1);

    // Platforms retry what got no answer, and may retry what did: same id, same body.
    const before = await instanceRecords(remote.dir);
    const outcomes = { committedUnanswered: 0, lostUnanswered: 0 };
    const retries = [...unanswered, ...answered.filter((_, i) => i % 10 === 0)];
    const replies = await Promise.all(
      retries.map((s) => send(live!.osb, { kind: "provision", instanceId: s.instanceId }, provisionBody(Number(s.instanceId.split("-").pop())), plans)),
    );
    for (const [i, s] of retries.entries()) {
      const existed = before.has(s.instanceId);
      if (s.reply === undefined) outcomes[existed ? "committedUnanswered" : "lostUnanswered"] += 1;
      if (existed) expect(replies[i]!.reply?.status, `retry of ${s.instanceId}, which exists`).toBe(200);
      else expect([201, 202], `retry of ${s.instanceId}, which does not exist`).toContain(replies[i]!.reply?.status);
    }
    // Both crash windows were hit: killed after the push carrying a request, and before it.
    expect(outcomes.committedUnanswered).toBeGreaterThan(0);
    expect(outcomes.lostUnanswered).toBeGreaterThan(0);

    // Once per instance: one provision commit and one provision in each record, none lost.
    const log = await history(remote.dir);
    const provisions = counts(log.filter((c) => c.subject.startsWith("provision ")).map((c) => c.trailers["Instance-Id"] ?? ""));
    const records = await instanceRecords(remote.dir);
    for (const s of sent) {
      expect(provisions.get(s.instanceId), s.instanceId).toBe(1);
      const operations = records.get(s.instanceId)?.status.operations ?? [];
      expect(operations.map((o) => o.action), s.instanceId).toEqual(["provision"]);
      if (acknowledged.has(s.identity)) expect(operations[0]!.requestIdentity).toBe(s.identity);
    }
    for (const [i, c] of log.entries()) expect(c.parents).toEqual(i === log.length - 1 ? [] : [log[i + 1]!.oid]);
    await fsck(remote.dir);
    await fsck(path.join(dataDir, "work.git"));
  });
});
