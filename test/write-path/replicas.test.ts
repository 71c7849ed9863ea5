import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fsck } from "../support/git-fixtures.js";
import { PROCESS_TEST_TIMEOUT_MS, stopProcesses } from "../support/processes.js";
import { spawnBroker, type BrokerProcess } from "./broker-process.js";
import { committed, counts, history, instanceRecords, mergeCount, samplePlans, send, startRemote, type Remote, type SamplePlans, type Sent } from "./fixture.js";

/**
 * Active-active: three broker processes write to one remote at the same time, coordinated by
 * nothing but Git (rejected pushes, re-runs on the new tip).
 */

const REPLICAS = 3;
// Sizes of the workload: enough for every kind of race below (each replica's requests are sent at
// once, so its pushes overlap the others'; the test asserts that pushes were rejected and re-run).
const OWN = 20;
const SHARED = 6;
/** Instances every replica updates and binds; the last 3 get a shared binding id and are deprovisioned too. */
const TOUCHED = 10;
/** Deprovisioned by every replica: the last 3 touched, and 2 that only the deprovisions race for. */
const DEPROVISIONED = 5;
const BASE_INSTANCES = TOUCHED + DEPROVISIONED - 3;
const OPERATIONS = OWN + SHARED + 2 * TOUCHED + DEPROVISIONED;

let remote: Remote;
let brokers: BrokerProcess[] = [];
let plans: SamplePlans;

beforeAll(async () => {
  remote = await startRemote("write-path-replicas-");
  brokers = await Promise.all(
    Array.from({ length: REPLICAS }, (_, i) => spawnBroker({ dataDir: path.join(remote.root, `broker-${i}`), remoteUrl: remote.url })),
  );
  plans = await samplePlans(brokers[0]!.osb);
}, PROCESS_TEST_TIMEOUT_MS);

afterAll(async () => {
  await Promise.all(brokers.map((b) => b.stop()));
  await stopProcesses();
  await remote?.close();
}, PROCESS_TEST_TIMEOUT_MS);

function provisionBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { service_id: plans.serviceId, plan_id: plans.small, organization_guid: "org", space_guid: "space", ...extra };
}

/** OPERATIONS operations for replica `r`: its own instances and bindings, and ids every replica touches. */
function workload(r: number): { kind: Sent["kind"]; instanceId: string; bindingId?: string; body: Record<string, unknown> }[] {
  const ops: ReturnType<typeof workload> = [];
  for (let i = 0; i < OWN; i++) ops.push({ kind: "provision", instanceId: `r${r}-p${i}`, body: provisionBody() });
  // Shared ids: the same body from every replica (one 201, then 200), or a different one (409).
  for (let i = 0; i < SHARED; i++) {
    ops.push({ kind: "provision", instanceId: `shared-${i}`, body: provisionBody(i % 2 === 0 ? {} : { parameters: { storageGB: r + 1 } }) });
  }
  for (let i = 0; i < TOUCHED; i++) {
    // A context unique to the request: every acknowledged update is a change, hence a commit.
    ops.push({ kind: "update", instanceId: `base-${i}`, body: { service_id: plans.serviceId, context: { platform: "test", request: `r${r}-u${i}` } } });
  }
  for (let i = 0; i < TOUCHED; i++) {
    const bindingId = i < TOUCHED - 3 ? `r${r}-b${i}` : `shared-b${i}`;
    ops.push({ kind: "bind", instanceId: `base-${i}`, bindingId, body: { service_id: plans.serviceId, plan_id: plans.small } });
  }
  // Deprovisions race with each other, and with updates and binds of the last ones touched.
  for (let i = 0; i < DEPROVISIONED; i++) ops.push({ kind: "deprovision", instanceId: `base-${TOUCHED - 3 + i}`, body: { plan_id: plans.small } });
  return ops;
}

describe("three broker processes on one remote", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it(`${REPLICAS} x ${OPERATIONS} concurrent operations: each acknowledged one exactly once, linear, fsck-clean`, async () => {
    const base = await Promise.all(
      Array.from({ length: BASE_INSTANCES }, (_, i) => send(brokers[i % REPLICAS]!.osb, { kind: "provision", instanceId: `base-${i}` }, provisionBody(), plans)),
    );
    expect(base.map((s) => s.reply?.status)).toEqual(base.map(() => 201));
    const before = (await history(remote.dir)).length;

    const sent = (
      await Promise.all(
        brokers.map((broker, r) => Promise.all(workload(r).map(({ body, ...op }) => send(broker.osb, op, body, plans)))),
      )
    ).flat();

    // Every request got an answer: 2xx, or an OSB error for a lost race.
    const statuses = counts(sent.map((s) => `${s.kind} ${String(s.reply?.status)}`));
    for (const [key] of statuses) expect(key, JSON.stringify([...statuses])).toMatch(/^(provision (200|201|409)|update (200|404)|bind (200|201|404)|deprovision (200|410))$/);
    for (const s of sent.filter((x) => (x.reply?.status ?? 0) >= 400)) {
      expect(s.reply!.body, `${s.kind} ${s.instanceId}`).toMatchObject({ description: expect.any(String) });
    }
    // The shared ids: one replica created each, the others saw it.
    for (let i = 0; i < SHARED; i++) {
      const replies = sent.filter((s) => s.kind === "provision" && s.instanceId === `shared-${i}`).map((s) => s.reply!.status);
      expect(replies.filter((status) => status === 201), `shared-${i}: ${replies.join(",")}`).toHaveLength(1);
    }
    // The deprovisions of one instance: one replica removed it, the others found it gone.
    for (let i = 0; i < DEPROVISIONED; i++) {
      const id = `base-${TOUCHED - 3 + i}`;
      const replies = sent.filter((s) => s.kind === "deprovision" && s.instanceId === id).map((s) => s.reply!.status);
      expect(replies.sort(), id).toEqual([200, ...Array.from({ length: REPLICAS - 1 }, () => 410)]);
    }

    const log = await history(remote.dir);
    expect(await mergeCount(remote.dir)).toBe(0);
    for (const [i, c] of log.entries()) expect(c.parents).toEqual(i === log.length - 1 ? [] : [log[i + 1]!.oid]);
    // Exactly the acknowledged changes, each once; nothing that was refused.
    const identities = log.slice(0, log.length - before).map((c) => c.trailers["Request-Identity"] ?? "");
    expect([...counts(identities).values()].every((n) => n === 1)).toBe(true);
    expect(new Set(identities)).toEqual(new Set(sent.filter(committed).map((s) => s.identity)));

    // The records agree: each operation they list was acknowledged, once.
    const acknowledged = new Set(sent.filter(committed).map((s) => s.identity));
    const records = await instanceRecords(remote.dir);
    for (let r = 0; r < REPLICAS; r++) {
      for (let i = 0; i < OWN; i++) {
        const record = records.get(`r${r}-p${i}`);
        expect(record?.status.operations.map((o) => acknowledged.has(o.requestIdentity ?? "")), `r${r}-p${i}`).toEqual([true]);
      }
    }
    // The replicas did race: pushes were rejected and re-run on the tip another replica pushed.
    const rejected = brokers.flatMap((b) => b.logs).filter((l) => l.msg === "push rejected, retrying on the new remote tip");
    expect(rejected.length).toBeGreaterThan(0);
    await fsck(remote.dir);
    for (let i = 0; i < REPLICAS; i++) await fsck(path.join(remote.root, `broker-${i}`, "work.git"));
  });
});
