import { createHmac } from "node:crypto";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { runValidate } from "../../src/cli/validate.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { stringify } from "yaml";
import { clusterRegistryPath, instanceManifestDir } from "../../src/repo/index.js";
import { git, gitLog, pushExternalCommit } from "../support/git-fixtures.js";
import { CREDENTIALS } from "../support/broker-harness.js";
import type { OsbClient } from "../support/osb-client.js";
import { storeForNewInstance } from "../../src/stores/index.js";
import { registryFile, startStoresHarness, STORE_CLUSTERS, type StoresHarness } from "../support/stores.js";
import { commitCount, expectOsbError, provisionBody, readyz, remoteFiles, samplePlans, type SamplePlans } from "../broker/helpers.js";

/**
 * Stores (ADR 0027), with real remotes over smart HTTP (see test/support/stores.ts): cluster
 * `local` in the control repository, `eu-1` in store eu, `us-1` in store us.
 */

let s: StoresHarness;
let plans: SamplePlans;

const WEBHOOK_SECRET = "stores-webhook-secret";
let clockOffset = 0;

beforeAll(async () => {
  s = await startStoresHarness({
    configure: (config) => void (config.webhook.secret = WEBHOOK_SECRET),
    // Records GC's clock, moved past the retention by the GC test (the last).
    records: { now: () => new Date(Date.now() + clockOffset) },
  });
  plans = await samplePlans(s.h.osb);
}, 120_000);

afterAll(async () => {
  await s?.close();
});

const body = () => provisionBody(plans.serviceId, plans.small.id);

/**
 * New instances `<prefix>-<n>` until each repository holds one (a new id's store is a hash of it,
 * ADR 0027); by the repository holding each. The others provisioned on the way stay.
 */
async function spread(prefix: string, osb: OsbClient = s.h.osb): Promise<Record<"control" | "eu" | "us", string>> {
  const placed: Partial<Record<"control" | "eu" | "us", string>> = {};
  for (let n = 0; Object.keys(placed).length < 3 && n < 60; n++) {
    const id = `${prefix}-${n}`;
    expect((await osb.provision(id, body())).status).toBe(201);
    const [holder] = await s.holders(id);
    placed[holder as "control" | "eu" | "us"] ??= id;
  }
  expect(Object.keys(placed).sort()).toEqual(["control", "eu", "us"]);
  return placed as Record<"control" | "eu" | "us", string>;
}

const eventually = (assertion: () => Promise<void>) => vi.waitFor(assertion, { timeout: 60_000, interval: 50 });

function overrideFile(instanceId: string): string {
  return stringify({
    apiVersion: "gitops-broker.io/v1alpha1",
    kind: "Override",
    description: "three replicas",
    target: { apiVersion: "acid.zalan.do/v1", kind: "postgresql", name: `pg-${instanceId}` },
    patch: { spec: { numberOfInstances: 3 } },
  });
}

describe("stores: two clusters in two stores, one in the control repository", () => {
  it("serves the full OSB lifecycle, each instance's record and manifests in its cluster's store only", async () => {
    const ids = Object.values(await spread("life"));
    const where = new Map<string, string>();
    for (const id of ids) {
      const inControl = await s.recordIn(s.h.remoteDir, id);
      const inEu = await s.recordIn(s.stores.eu.dir, id);
      const inUs = await s.recordIn(s.stores.us.dir, id);
      // Exactly one repository holds the record, the one of the cluster it names.
      expect([inControl, inEu, inUs].filter((r) => r !== null)).toHaveLength(1);
      const record = (inControl ?? inEu ?? inUs)!;
      const cluster = record.spec.clusterId as string;
      where.set(id, cluster);
      const expected = cluster === "local" ? s.h.remoteDir : cluster === "eu-1" ? s.stores.eu.dir : s.stores.us.dir;
      expect(await s.recordIn(expected, id)).not.toBeNull();
      const manifests = (await remoteFiles(expected)).filter((f) => f.startsWith(`${instanceManifestDir(cluster, id)}/`));
      expect(manifests.length).toBeGreaterThan(0);
      for (const other of [s.h.remoteDir, s.stores.eu.dir, s.stores.us.dir].filter((d) => d !== expected)) {
        expect((await remoteFiles(other)).filter((f) => f.includes(`/${id}/`) || f.endsWith(`/${id}`))).toEqual([]);
      }
    }
    expect(new Set(where.values())).toEqual(new Set(["local", "eu-1", "us-1"]));

    for (const id of ids) {
      expect((await s.h.osb.getInstance(id)).status).toBe(200);
      expect((await s.h.osb.lastOperation(id)).body.state).toBe("succeeded");
      const bound = await s.h.osb.bind(id, `${id}-b`, { service_id: plans.serviceId, plan_id: plans.small.id, bind_resource: { app_guid: "app-1" } });
      expect(bound.status).toBe(201);
      expect((await s.h.osb.getBinding(id, `${id}-b`)).status).toBe(200);
      const updated = await s.h.osb.update(id, { service_id: plans.serviceId, parameters: { storageGB: 5 } });
      expect(updated.status, JSON.stringify(updated.body)).toBe(200);
      expect((await s.h.osb.unbind(id, `${id}-b`, { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(200);
      expect((await s.h.osb.deprovision(id, { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(200);
      expect((await s.h.osb.deprovision(id, { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(410);
      // Still only in its own store, now deleted there.
      const cluster = where.get(id)!;
      const dir = cluster === "local" ? s.h.remoteDir : cluster === "eu-1" ? s.stores.eu.dir : s.stores.us.dir;
      expect((await s.recordIn(dir, id))?.status.deleted).toBe(true);
    }
  });

  it("refuses a new id that exists in any store: the same request is 200, another 409, nothing committed", async () => {
    const ids = Object.values(await spread("dup"));
    const counts = async () => Promise.all([s.h.remoteDir, s.stores.eu.dir, s.stores.us.dir].map((d) => commitCount(d)));
    const before = await counts();
    for (const id of ids) {
      expect((await s.h.osb.provision(id, body())).status).toBe(200);
      const other = await s.h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id, { parameters: { storageGB: 5 } }));
      expect(other.status, JSON.stringify(other.body)).toBe(409);
    }
    expect(await counts()).toEqual(before);
  });

  it("answers 404 and 410 only after fetching every store, and a fresh replica reads every store", async () => {
    // Another broker writes into store us; this one has not fetched it since.
    const replica = await s.h.startReplica("replica-reads");
    const seen = await spread("seen", replica.osb);
    const onUs = seen.us;
    // Not 404: the first broker's view of store us is stale, and it fetches before saying so.
    expect((await s.h.osb.getInstance(onUs)).status).toBe(200);
    expect((await s.h.osb.bind(onUs, "late-b", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(201);
    expectOsbError(await s.h.osb.getInstance("never-provisioned"), 404, /never-provisioned/);
    const fresh = await s.h.startReplica("replica-fresh");
    for (const id of Object.values(seen)) expect((await fresh.osb.getInstance(id)).status).toBe(200);
  });

  it("a store that does not answer fails only its own clusters' requests (503), and /readyz stays ready with a warning", async () => {
    const out = await spread("out");
    const onEu = [out.eu];
    const others = [out.control, out.us];
    s.stores.eu.git.setAvailable(false);
    try {
      const bindEu = await s.h.osb.bind(onEu[0]!, "b-out", { service_id: plans.serviceId, plan_id: plans.small.id });
      expect(bindEu.status).toBe(503);
      for (const id of others) {
        expect((await s.h.osb.bind(id, "b-out", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(201);
      }
      // Reads of what is known need no fetch.
      expect((await s.h.osb.getInstance(onEu[0]!)).status).toBe(200);
      const ready = await readyz(s.h.broker.url);
      expect(ready.status).toBe(200);
      const line = ready.body.checks.find((c) => c.name === "store eu");
      expect(line).toMatchObject({ ok: false, severity: "warning" });
    } finally {
      s.stores.eu.git.setAvailable(true);
    }
    // Back: the refused bind can be made now.
    expect((await s.h.osb.bind(onEu[0]!, "b-out", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(201);
  }, 120_000);

  it("replicas racing on every store lose nothing acknowledged and make no duplicates", async () => {
    const a = s.h.osb;
    const b: OsbClient = (await s.h.startReplica("racer")).osb;
    const ids = Array.from({ length: 18 }, (_, i) => `race-${String(i).padStart(2, "0")}`);
    const replies = await Promise.all(ids.flatMap((id) => [a.provision(id, body()), b.provision(id, body())]));
    // Each id: one 201, and the other 200 (same request, already there) or 201 never twice.
    for (const [i, id] of ids.entries()) {
      const pair = [replies[2 * i]!.status, replies[2 * i + 1]!.status].sort();
      expect(pair, `${id} ${JSON.stringify(replies[2 * i]!.body)}`).toEqual([200, 201]);
      const holders = (await Promise.all([s.h.remoteDir, s.stores.eu.dir, s.stores.us.dir].map((d) => s.recordIn(d, id)))).filter((r) => r !== null);
      expect(holders, id).toHaveLength(1);
    }
  }, 180_000);

  it("refuses a registry that moves a cluster to another store while its instances are still in the old one (the last good registry stays)", async () => {
    const placed = (await spread("stay")).eu;
    await pushExternalCommit(s.h.remoteDir, { [clusterRegistryPath("eu-1")]: registryFile({ id: "eu-1", store: "us" }) }, "move eu-1 by hand");
    await s.h.broker.writer.refresh();
    const ready = await readyz(s.h.broker.url);
    expect(ready.status).toBe(200);
    const repository = ready.body.checks.find((c) => c.name === "repository");
    expect(repository?.message).toMatch(/eu-1\.yaml: spec\.store: names store us, but \d+ live instance\(s\) of cluster eu-1 are in store eu/);
    // Still served from store eu.
    expect((await s.h.osb.bind(placed, "b-stay", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(201);
    expect(await s.recordIn(s.stores.us.dir, placed)).toBeNull();
    // Undone, for the tests after this one.
    await pushExternalCommit(s.h.remoteDir, { [clusterRegistryPath("eu-1")]: registryFile({ id: "eu-1", store: "eu" }) }, "undo the hand edit");
    await s.h.broker.writer.refresh();
  });

  it("a new id whose store has no cluster with room is refused 422, naming the store and what to do; no other store's cluster takes it", async () => {
    // The id's store is a function of the id and the registry (ADR 0027): the first id of store eu.
    const clusters = STORE_CLUSTERS.map((c) => ({ id: c.id, schedulable: true }));
    const storeOf = (id: string) => STORE_CLUSTERS.find((c) => c.id === id)?.store ?? "control";
    const id = Array.from({ length: 64 }, (_, n) => `full-${n}`).find((x) => storeForNewInstance(x, clusters, storeOf) === "eu")!;
    await pushExternalCommit(s.h.remoteDir, { [clusterRegistryPath("eu-1")]: registryFile({ id: "eu-1", store: "eu", maxInstances: 0 }) }, "eu-1 full");
    await s.h.broker.writer.refresh();
    try {
      const before = await Promise.all(["control", "eu", "us"].map((n) => commitCount(s.dirOf(n))));
      const reply = await s.h.osb.provision(id, body());
      expectOsbError(
        reply,
        422,
        /^all schedulable clusters are full: eu-1 \(.*\); a new instance is placed only among the clusters of store eu \(eu-1\), the repository its id belongs to, never in another store's .*mark its full clusters unschedulable/,
      );
      expect(await Promise.all(["control", "eu", "us"].map((n) => commitCount(s.dirOf(n))))).toEqual(before);
      expect(await s.holders(id)).toEqual([]);
    } finally {
      await pushExternalCommit(s.h.remoteDir, { [clusterRegistryPath("eu-1")]: registryFile({ id: "eu-1", store: "eu" }) }, "eu-1 has room again");
      await s.h.broker.writer.refresh();
    }
    expect((await s.h.osb.provision(id, body())).status).toBe(201);
    expect(await s.holders(id)).toEqual(["eu"]);
  });

  it("a push event naming a store's repository fetches that store only", async () => {
    // No push runs meanwhile, so every info/refs request is a fetch.
    const fetches = (git: typeof s.stores.eu.git) => git.requests.filter((r) => r.path.endsWith("/info/refs")).length;
    const before = { eu: fetches(s.stores.eu.git), us: fetches(s.stores.us.git) };
    const body = JSON.stringify({ ref: "refs/heads/main", repository: { clone_url: s.stores.eu.url, html_url: s.stores.eu.url.replace(/\.git$/, "") } });
    const res = await fetch(new URL("/admin/webhook", s.h.broker.url), {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "push",
        "x-hub-signature-256": `sha256=${createHmac("sha256", WEBHOOK_SECRET).update(body).digest("hex")}`,
      },
      body,
    });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ refresh: true, store: "eu" });
    const deadline = Date.now() + 30_000;
    while (fetches(s.stores.eu.git) === before.eu && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(fetches(s.stores.eu.git)).toBeGreaterThan(before.eu);
    expect(fetches(s.stores.us.git)).toBe(before.us);
  });

  it("validate checks a store's checkout against the control repository's catalog and registry (--store)", async () => {
    const onEu = (await spread("val")).eu;
    const work = await mkdtemp(path.join(tmpdir(), "gitops-broker-validate-"));
    try {
      const control = path.join(work, "control");
      const eu = path.join(work, "eu");
      await git(["clone", "-q", s.h.remoteDir, control]);
      await git(["clone", "-q", s.stores.eu.dir, eu]);
      const run = async (args: string[]) => {
        const out: string[] = [];
        const err: string[] = [];
        const code = await runValidate(args, { stdout: (t) => out.push(t), stderr: (t) => err.push(t) });
        return { code, out: out.join(""), err: err.join("") };
      };
      const clean = await run([control, "--store", `eu=${eu}`]);
      expect(clean.code, clean.out + clean.err).toBe(0);
      // A hand edit in the store's checkout is drift of the instance there.
      const dir = path.join(eu, instanceManifestDir("eu-1", onEu));
      const [file] = (await readdir(dir)).filter((f) => f.endsWith(".yaml"));
      await writeFile(path.join(dir, file!), `${await readFile(path.join(dir, file!), "utf8")}# edited by hand\n`);
      const drift = await run([control, "--store", `eu=${eu}`]);
      expect(drift.code).toBe(1);
      expect(drift.out).toMatch(new RegExp(`${instanceManifestDir("eu-1", onEu)}/${file!.replace(/\./g, "\\.")}: .*drift`));
      // The control checkout alone does not hold the store's instances.
      expect((await run([control])).code).toBe(0);
      expect((await run([control, "--store", "eu"])).code).toBe(2);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });

  it("history reads every store, and a re-render of an instance in a store is committed there", async () => {
    const onEu = (await spread("hist")).eu;
    expect((await s.h.osb.bind(onEu, "hist-b1", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(201);
    const auth = `Basic ${Buffer.from(`${CREDENTIALS.username}:${CREDENTIALS.password}`).toString("base64")}`;
    const history = await fetch(new URL(`/admin/instances/${onEu}/history`, s.h.broker.url), { headers: { authorization: auth } });
    expect(history.status).toBe(200);
    const entries = ((await history.json()) as { entries: { action: string; commit: string }[] }).entries;
    expect(entries.map((e) => e.action)).toEqual(["provision", "bind"]);
    // Those commits are store eu's.
    const euLog = await gitLog(s.stores.eu.dir);
    for (const e of entries) expect(euLog.map((l) => l.oid)).toContain(e.commit);

    const counts = async () => Promise.all(["control", "eu", "us"].map((n) => commitCount(s.dirOf(n))));
    const before = await counts();
    const rerender = await fetch(new URL("/admin/rerender", s.h.broker.url), {
      method: "POST",
      headers: { authorization: auth, "content-type": "application/json" },
      body: JSON.stringify({ instance_id: onEu }),
    });
    expect(rerender.status).toBe(202);
    await s.h.broker.reconciler.idle();
    // Nothing changed in the plan: an identical render commits nothing, and nowhere else either.
    expect(await counts()).toEqual(before);
    // An override (control repository) changes the render: the re-render commit lands in store eu.
    await pushExternalCommit(s.h.remoteDir, { [`overrides/${onEu}/labels.yaml`]: overrideFile(onEu) }, "override the instance's labels");
    await s.h.broker.writer.refresh();
    await eventually(async () => {
      await s.h.broker.reconciler.idle();
      const after = await counts();
      expect(after[1]).toBe(before[1]! + 1);
    });
    expect((await counts())[2]).toBe(before[2]);
  });

  it("the admin listing spans every store, and records GC collects each store's records with a commit in that store (last: moves the clock)", async () => {
    const ids = Object.values(await spread("gc"));
    const auth = `Basic ${Buffer.from(`${CREDENTIALS.username}:${CREDENTIALS.password}`).toString("base64")}`;
    const listed = await fetch(new URL("/admin/instances?page_size=1000", s.h.broker.url), { headers: { authorization: auth } });
    const page = (await listed.json()) as { instances: { instanceId: string; clusterId: string }[] };
    const clusterOf = new Map(page.instances.map((i) => [i.instanceId, i.clusterId]));
    expect(new Set(ids.map((id) => clusterOf.get(id)))).toEqual(new Set(["eu-1", "local", "us-1"]));

    for (const id of ids) expect((await s.h.osb.deprovision(id, { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(200);
    const before = await Promise.all(["control", "eu", "us"].map((n) => commitCount(s.dirOf(n))));
    clockOffset = 91 * 24 * 3600 * 1000;
    const collected = await s.h.broker.collector.collect();
    for (const id of ids) {
      expect(collected).toContain(id);
      expect(await s.holders(id)).toEqual([]);
    }
    // One GC commit in each repository (each held deprovisioned records), none spanning two.
    const after = await Promise.all(["control", "eu", "us"].map((n) => commitCount(s.dirOf(n))));
    expect(after).toEqual(before.map((n) => n + 1));
  });
});
