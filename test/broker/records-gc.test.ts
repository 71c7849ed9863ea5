import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InstanceHistory } from "../../src/broker/index.js";
import { runHistory } from "../../src/cli/history.js";
import { startBroker } from "../../src/cli/serve.js";
import { silentLogger } from "../../src/log/index.js";
import { instanceRecordDir, readInstance } from "../../src/repo/index.js";
import { CREDENTIALS, startHarness, testConfig, type Harness } from "../support/broker-harness.js";
import { osbClient } from "../support/osb-client.js";
import { manualTicker } from "../support/ticker.js";
import { commitCount, expectOsbError, headMessage, provisionBody, remoteFiles, samplePlans, type SamplePlans } from "./helpers.js";

/**
 * Records GC (ADR 0018) in the real broker: OSB requests over HTTP, the real writer pushing to a
 * smart-HTTP remote, the collector's timer driven by hand and its clock moved 91 days ahead.
 */

const DAY = 86_400_000;
let clockOffset = 0;
const ticker = manualTicker();
let h: Harness;
let plans: SamplePlans;
let ids: { service_id: string; plan_id: string };

/** A broker on its own data dir that ran before the GC: restarted after it. */
const RESTARTED = "broker-restarted";

async function startRestartable() {
  const broker = await startBroker(testConfig(h.root, RESTARTED, h.remoteUrl), { version: "test", logger: silentLogger() });
  return { broker, osb: osbClient(broker.url, CREDENTIALS) };
}

beforeAll(async () => {
  h = await startHarness({
    configure: (config) => {
      config.records.gcBatchSize = 2;
    },
    records: { now: () => new Date(Date.now() + clockOffset), delay: (ms) => ticker.delay(ms) },
  });
  plans = await samplePlans(h.osb);
  ids = { service_id: plans.serviceId, plan_id: plans.small.id };
  const ok = (status: number, expected: number) => expect(status).toBe(expected);
  ok((await h.osb.provision("gc-1", provisionBody(plans.serviceId, plans.small.id))).status, 201);
  ok((await h.osb.bind("gc-1", "gc-app", ids)).status, 201);
  ok((await h.osb.deprovision("gc-1", ids)).status, 200);
  for (const id of ["gc-2", "gc-3"]) {
    ok((await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status, 201);
    ok((await h.osb.deprovision(id, ids)).status, 200);
  }
  ok((await h.osb.provision("gc-live", provisionBody(plans.serviceId, plans.small.id))).status, 201);
  // A broker that clones the remote with the records, then stops.
  const before = await startRestartable();
  try {
    ok((await before.osb.getInstance("gc-live")).status, 200);
  } finally {
    await before.broker.close();
  }
});
afterAll(async () => {
  await h?.close();
});

async function recordFiles(id: string): Promise<string[]> {
  return remoteFiles(h.remoteDir, instanceRecordDir(id));
}

function trailerBlock(message: string): string {
  return message.trim().split("\n\n").at(-1)!;
}

describe("records GC in the broker", () => {
  it("keeps the records of deprovisioned instances within records.retentionDays", async () => {
    const commits = await commitCount(h.remoteDir);
    await ticker.tick();
    expect(await commitCount(h.remoteDir)).toBe(commits);
    expect(await recordFiles("gc-1")).toHaveLength(2); // instance.yaml and the binding's record
  });

  it("after the retention, removes them oldest first, at most gcBatchSize per commit and one commit per interval", async () => {
    clockOffset = 91 * DAY;
    const commits = await commitCount(h.remoteDir);
    await ticker.tick();
    expect(await commitCount(h.remoteDir)).toBe(commits + 1);
    const first = await headMessage(h.remoteDir);
    expect(first.split("\n", 1)[0]).toMatch(/^gc: remove 2 records of instances deprovisioned before \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(trailerBlock(first)).toBe(["Reason: records-gc", "Retention-Days: 90", "Instance-Id: gc-1", "Instance-Id: gc-2", "Broker-Version: gitops-broker/test"].join("\n"));
    expect(await recordFiles("gc-1")).toEqual([]);
    expect(await recordFiles("gc-2")).toEqual([]);
    expect(await recordFiles("gc-3")).toHaveLength(1);

    await ticker.tick();
    expect(await commitCount(h.remoteDir)).toBe(commits + 2);
    expect(trailerBlock(await headMessage(h.remoteDir))).toMatch(/^Reason: records-gc\nRetention-Days: 90\nInstance-Id: gc-3\nBroker-Version: /);
    expect(await recordFiles("gc-3")).toEqual([]);

    await ticker.tick();
    expect(await commitCount(h.remoteDir)).toBe(commits + 2);
    expect(await recordFiles("gc-live")).toHaveLength(1);
    expect(ticker.waits.every((ms) => ms === 60_000)).toBe(true);
  });

  it("answers for a collected id as for one never seen: DELETE 410, GET 404, last_operation 404 (410 before OSB 2.16)", async () => {
    expectOsbError(await h.osb.deprovision("gc-1", ids), 410, /instance gc-1 does not exist/);
    expectOsbError(await h.osb.getInstance("gc-1"), 404, /instance gc-1 does not exist/);
    expectOsbError(await h.osb.lastOperation("gc-1"), 404, /instance gc-1 does not exist/);
    expectOsbError(await h.osb.call("GET", "/v2/service_instances/gc-1/last_operation", undefined, { version: "2.15" }), 410, /does not exist/);
    expectOsbError(await h.osb.getBinding("gc-1", "gc-app"), 404, /binding gc-app of instance gc-1 does not exist/);
    expectOsbError(await h.osb.bindingLastOperation("gc-1", "gc-app"), 404, /does not exist/);
    expectOsbError(await h.osb.unbind("gc-1", "gc-app", ids), 410, /binding gc-app of instance gc-1 does not exist/);
  });

  it("gitops-broker history and the history endpoint still show the collected instance's whole timeline, the GC commit last", async () => {
    const actions = (history: InstanceHistory) => history.entries.filter((e) => e.action !== "re-render").map((e) => e.action + (e.bindingId ? ` ${e.bindingId}` : ""));
    const res = await fetch(new URL("/admin/instances/gc-1/history", h.broker.url), {
      headers: { authorization: `Basic ${Buffer.from(`${CREDENTIALS.username}:${CREDENTIALS.password}`).toString("base64")}` },
    });
    expect(res.status).toBe(200);
    const history = (await res.json()) as InstanceHistory;
    expect(history.current).toBeNull();
    expect(actions(history)).toEqual(["provision", "bind gc-app", "deprovision", "gc"]);
    const gc = history.entries.at(-1)!;
    expect(gc).toMatchObject({ by: "broker", trailers: { Reason: "records-gc", "Instance-Id": ["gc-1", "gc-2"] } });

    const dir = path.join(h.root, "cli");
    await mkdir(dir, { recursive: true });
    const config = path.join(dir, "config.yaml");
    await writeFile(config, `git:\n  remote: ${h.remoteUrl}\nlog:\n  level: error\n`);
    const run = async (args: string[]) => {
      let stdout = "";
      let stderr = "";
      const sink = (append: (s: string) => void) =>
        new Writable({
          write(chunk: Buffer, _encoding, done) {
            append(chunk.toString());
            done();
          },
        });
      const code = await runHistory(
        [...args, "--config", config, "--data-dir", path.join(dir, "data")],
        sink((s) => (stdout += s)),
        sink((s) => (stderr += s)),
      );
      return { code, stdout, stderr };
    };
    const json = await run(["gc-1", "--json"]);
    expect(json).toMatchObject({ code: 0, stderr: "" });
    expect(actions(JSON.parse(json.stdout) as InstanceHistory)).toEqual(["provision", "bind gc-app", "deprovision", "gc"]);
    const text = await run(["gc-1"]);
    expect(text.code).toBe(0);
    expect(text.stdout.split("\n", 1)[0]).toBe("instance gc-1 (key gc-1): no record at the tip (removed by records GC)");
    expect(text.stdout).toMatch(/ gc {2}by \(no originating identity\)/);
  });

  it("a broker that cloned the records before the GC restarts on the collected tip", async () => {
    const restarted = await startRestartable();
    try {
      expect((await restarted.osb.getInstance("gc-live")).status).toBe(200);
      expectOsbError(await restarted.osb.getInstance("gc-2"), 404, /instance gc-2 does not exist/);
      expect(await readInstance(restarted.broker.writer.snapshot(), "gc-2")).toBeNull();
    } finally {
      await restarted.broker.close();
    }
  });

  it("provisions a collected id anew", async () => {
    expect((await h.osb.provision("gc-1", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    expect((await h.osb.getInstance("gc-1")).status).toBe(200);
    const record = await readInstance(h.broker.writer.snapshot(), "gc-1");
    expect(record?.status.operations.map((o) => o.action)).toEqual(["provision"]);
  });

  it("leaves a record that another replica provisioned again after this broker's scan read it", async () => {
    clockOffset = 91 * DAY;
    expect((await h.osb.provision("gc-race", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    expect((await h.osb.deprovision("gc-race", ids)).status).toBe(200);
    const replica = await h.startReplica("broker-2");
    expect((await replica.osb.provision("gc-race", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    // This broker has not fetched since: its tip still has the deprovisioned record, past the retention on its clock.
    expect((await readInstance(h.broker.writer.snapshot(), "gc-race"))?.status.deleted).toBe(true);
    const commits = await commitCount(h.remoteDir);

    await ticker.tick();
    expect(await commitCount(h.remoteDir)).toBe(commits);
    expect((await headMessage(h.remoteDir)).split("\n", 1)[0]).toMatch(/^provision .* instance gc-race$/);
    expect(await recordFiles("gc-race")).toHaveLength(1);
    expect((await h.osb.getInstance("gc-race")).status).toBe(200);
  });
});
