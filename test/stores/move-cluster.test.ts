import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { runMove } from "../../src/cli/admin-commands.js";
import { runMoveCluster } from "../../src/cli/move-cluster.js";
import { bindingRecordPath, clusterRegistryPath, moveFencePath } from "../../src/repo/index.js";
import { readRemoteFile } from "../support/git-fixtures.js";
import { CREDENTIALS } from "../support/broker-harness.js";
import { storeForNewInstance } from "../../src/stores/index.js";
import { startStoresHarness, STORE_CLUSTERS, type StoresHarness } from "../support/stores.js";
import { commitCount, provisionBody, remoteFiles, samplePlans, type SamplePlans } from "../broker/helpers.js";
import type { OsbReply } from "../support/osb-client.js";

/**
 * `gitops-broker move-cluster` (ADR 0027): cluster eu-1 moves from store eu to store us while a
 * platform keeps binding, unbinding and provisioning on it, retrying a 503 as OSB platforms do.
 * Every acknowledged operation must be in store us afterwards, nothing lost, nothing twice.
 */

let s: StoresHarness;
let plans: SamplePlans;
let config: string;

beforeAll(async () => {
  s = await startStoresHarness();
  plans = await samplePlans(s.h.osb);
  config = await s.configFile();
}, 120_000);

afterAll(async () => {
  await s?.close();
});

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  const chunks = { out: [] as Buffer[], err: [] as Buffer[] };
  out.on("data", (c: Buffer) => chunks.out.push(c));
  err.on("data", (c: Buffer) => chunks.err.push(c));
  const code = await runMoveCluster([...args, "--config", config], out, err);
  return { code, out: Buffer.concat(chunks.out).toString(), err: Buffer.concat(chunks.err).toString() };
}

/** An OSB call retried while it answers 503 (as a platform does on Retry-After), within a ceiling. */
async function retried(call: () => Promise<OsbReply>): Promise<OsbReply> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const reply = await call();
    if (reply.status !== 503 || Date.now() > deadline) return reply;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** POST /admin/clusters/{id}/move on the serving broker: its own write queues, never starved by its own stream. */
async function adminMove(clusterId: string, body: Record<string, unknown>): Promise<{ status: number; body: Record<string, any> }> {
  const res = await fetch(new URL(`/admin/clusters/${clusterId}/move`, s.h.broker.url), {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Basic ${Buffer.from(`${CREDENTIALS.username}:${CREDENTIALS.password}`).toString("base64")}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

const counts = () => Promise.all(["control", "eu", "us"].map((n) => commitCount(s.dirOf(n))));

describe("move-cluster", () => {
  it("`gitops-broker move` of an instance to a cluster of another store is refused before it runs, naming both stores; nothing committed", async () => {
    // An id of store us (a new id's store is a hash of it, ADR 0027), so that cluster eu-1 gets no instance here.
    const clusters = STORE_CLUSTERS.map((c) => ({ id: c.id, schedulable: true }));
    const storeOf = (id: string) => STORE_CLUSTERS.find((c) => c.id === id)?.store ?? "control";
    const onUs = Array.from({ length: 64 }, (_, n) => `xs-${n}`).find((x) => storeForNewInstance(x, clusters, storeOf) === "us")!;
    expect((await s.h.osb.provision(onUs, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    const before = await counts();
    const out = new PassThrough();
    const err = new PassThrough();
    const said: Buffer[] = [];
    err.on("data", (c: Buffer) => said.push(c));
    const code = await runMove([onUs, "eu-1", "--yes", "--config", config], out, err);
    expect(code).toBe(1);
    expect(Buffer.concat(said).toString()).toMatch(
      new RegExp(`^move refused: instance ${onUs} is in store us and the instances of cluster eu-1 are in store eu: an instance moves only between clusters of one repository`),
    );
    expect(await counts()).toEqual(before);
    expect(await s.holders(onUs)).toEqual(["us"]);
  });

  it("moves a cluster to another store under load (the serving broker's endpoint), then --finish (the command) empties the old store: nothing acknowledged lost", async () => {
    const body = provisionBody(plans.serviceId, plans.small.id);
    // New instances until two are in store eu (a new id's store is a hash of it).
    const onEu: string[] = [];
    for (let n = 0; onEu.length < 2 && n < 60; n++) {
      expect((await s.h.osb.provision(`mv-${n}`, body)).status).toBe(201);
      if ((await s.holders(`mv-${n}`)).includes("eu")) onEu.push(`mv-${n}`);
    }
    expect(onEu).toHaveLength(2);

    // A dry run commits nothing and says what moves.
    const before = await counts();
    const dry = await cli(["eu-1", "--to", "us"]);
    expect(dry.code, dry.err).toBe(0);
    expect(dry.out).toMatch(new RegExp(`cluster eu-1: eu -> us, ${onEu.length} instance\\(s\\)`));
    expect(dry.out).toMatch(/dry run: nothing committed/);
    expect(await counts()).toEqual(before);

    // Load on the moving cluster while the move runs: binds on its instances.
    const acknowledged: { id: string; binding: string }[] = [];
    let stop = false;
    const load = (async () => {
      for (let n = 0; !stop; n++) {
        const id = onEu[n % onEu.length]!;
        const binding = `lb-${n}`;
        const reply = await retried(() => s.h.osb.bind(id, binding, { service_id: plans.serviceId, plan_id: plans.small.id }));
        expect(reply.status, JSON.stringify(reply.body)).toBe(201);
        acknowledged.push({ id, binding });
      }
    })();
    let moved: { status: number; body: Record<string, any> };
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      moved = await adminMove("eu-1", { to: "us" });
      // A few more after the switch, routed by the fence or the registry.
      await new Promise((resolve) => setTimeout(resolve, 300));
    } finally {
      stop = true;
      await load;
    }
    expect(moved!.status, JSON.stringify(moved!.body)).toBe(200);
    expect(moved!.body).toMatchObject({ clusterId: "eu-1", from: "eu", to: "us", stage: "finish" });
    expect((moved!.body.steps as { step: string; store: string; commit: string | null }[]).map((x) => [x.step, x.store, x.commit !== null])).toEqual([
      ["copy", "us", true],
      ["fence", "eu", true],
      ["catch-up", "us", expect.any(Boolean)],
      ["fence", "eu", true],
      ["switch", "control", true],
    ]);
    expect(acknowledged.length).toBeGreaterThan(0);

    // The registry names store us; store eu holds the fence, state moved.
    const registry = parse((await readRemoteFile(s.dirOf("control"), "main", clusterRegistryPath("eu-1")))!) as { spec: { store?: string } };
    expect(registry.spec.store).toBe("us");
    const fence = parse((await readRemoteFile(s.dirOf("eu"), "main", moveFencePath("eu-1")))!) as { spec: { to: string; state: string } };
    expect(fence.spec).toEqual({ to: "us", state: "moved" });

    // Every acknowledged bind is in store us, and the broker answers for it.
    for (const { id, binding } of acknowledged) {
      const record = await s.recordIn(s.dirOf("us"), id);
      expect(record, id).not.toBeNull();
      expect((await s.h.osb.getBinding(id, binding)).status, `${id}/${binding}`).toBe(200);
    }
    // New operations on the cluster land in store us only.
    const eu = await commitCount(s.dirOf("eu"));
    expect((await s.h.osb.bind(onEu[0]!, "after-move", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(201);
    expect(await commitCount(s.dirOf("eu"))).toBe(eu);
    expect(await remoteFiles(s.dirOf("us"))).toContain(bindingRecordPath(onEu[0]!, "after-move"));

    // --finish empties store eu of the cluster (its fence stays), and a fresh replica serves it all from us.
    const finished = await cli(["eu-1", "--to", "us", "--finish"]);
    expect(finished.code, finished.err).toBe(0);
    expect(finished.out).toMatch(/^remove\s+eu\s+[0-9a-f]{40}/m);
    const left = await remoteFiles(s.dirOf("eu"));
    expect(left.filter((f) => f.startsWith("clusters/eu-1/") || f.startsWith("instances/"))).toEqual([]);
    expect(left).toContain(moveFencePath("eu-1"));
    const fresh = await s.h.startReplica("after-finish");
    for (const id of onEu) {
      expect((await fresh.osb.getInstance(id)).status).toBe(200);
      expect(await s.holders(id)).toEqual(["us"]);
    }
    expect((await fresh.osb.deprovision(onEu[0]!, { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(200);
    // Running it again changes nothing.
    const again = await cli(["eu-1", "--to", "us", "--finish"]);
    expect(again.code).toBe(0);
    expect(again.out).toMatch(/next: nothing left to do/);
  }, 240_000);

  it("refuses an unknown store and a cluster already there, committing nothing", async () => {
    const before = await counts();
    const unknown = await cli(["local", "--to", "nowhere"]);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(/store nowhere is not configured/);
    const there = await cli(["local", "--to", "control", "--yes"]);
    expect(there.code).toBe(1);
    expect(there.err).toMatch(/cluster local is in the control repository already/);
    expect(await counts()).toEqual(before);
  });
});
