import { rm } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createBareRemote, createTempDir, gitLog } from "../../test/support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../../test/support/git-http-server.js";
import { manualTicker, type ManualTicker } from "../../test/support/ticker.js";
import { createGitWriter, type GitWriter } from "../gitwriter/index.js";
import { silentLogger } from "../log/index.js";
import { createInstruments, type Labels, type Metrics } from "../metrics/index.js";
import {
  instanceRecordDir,
  readBinding,
  readInstance,
  RECORD_API_VERSION,
  writeBinding,
  writeInstance,
  type BindingRecord,
  type InstanceRecord,
  type OperationEntry,
} from "../repo/index.js";
import { createCommitStatusWatcher, type StatusWatcher } from "../status-watcher/index.js";
import { createRecordsCollector, type RecordsCollector, type RecordsCollectorOptions } from "./records-gc.js";

const DAY = 86_400_000;
/** The collector's clock: 100 days after the first deprovision below. */
const NOW = new Date("2026-04-11T12:00:00.000Z");
const daysBefore = (days: number) => new Date(NOW.getTime() - days * DAY).toISOString();

function record(id: string, ops: [InstanceRecord["status"]["operations"][number]["action"], string][], deleted: boolean): InstanceRecord {
  return {
    apiVersion: RECORD_API_VERSION,
    kind: "ServiceInstance",
    metadata: { name: id, namespace: "gitops-broker-instances" },
    spec: { instanceId: id, serviceId: "svc", planId: "plan", clusterId: id.startsWith("b-") ? "other" : "local" },
    status: { ...(deleted ? { deleted: true } : {}), operations: ops.map(([action, at], i): OperationEntry<typeof action> => ({ id: `${id}-op-${i}`, action, at })) },
  };
}

function deprovisioned(id: string, daysAgo: number): InstanceRecord {
  return record(id, [["provision", daysBefore(daysAgo + 10)], ["deprovision", daysBefore(daysAgo)]], true);
}

function binding(instanceId: string, bindingId: string): BindingRecord {
  return {
    apiVersion: RECORD_API_VERSION,
    kind: "ServiceBinding",
    metadata: { name: bindingId, namespace: "gitops-broker-instances" },
    spec: { bindingId, instanceId, serviceId: "svc", planId: "plan" },
    status: { deleted: true, operations: [{ id: `${bindingId}-op`, action: "bind", at: daysBefore(200) }] },
  };
}

/** A Metrics factory that keeps counter sums and gauge values by name and labels. */
function recordingMetrics(): { metrics: Metrics; value(name: string, labels?: Labels): number | undefined } {
  const values = new Map<string, number>();
  const key = (name: string, labels?: Labels) => `${name}${JSON.stringify(labels ?? {})}`;
  const metrics: Metrics = {
    counter: (name) => ({ inc: (labels, v = 1) => void values.set(key(name, labels), (values.get(key(name, labels)) ?? 0) + v) }),
    gauge: (name) => ({
      set: (v, labels) => void values.set(key(name, labels), v),
      reset: () => {
        for (const k of [...values.keys()]) if (k.startsWith(`${name}{`)) values.delete(k);
      },
    }),
    histogram: () => ({ observe: () => undefined }),
    onCollect: () => undefined,
  };
  return { metrics, value: (name, labels) => values.get(key(name, labels)) };
}

let root: string;
let remote: string;
let http: GitHttpServer;
let writer: GitWriter;
let collector: RecordsCollector | undefined;

beforeEach(async () => {
  root = await createTempDir("gitops-broker-gc-");
  remote = await createBareRemote(path.join(root, "remotes"), "remote.git", { "README.md": "records\n" });
  http = await startGitHttpServer({ root: path.join(root, "remotes") });
  writer = createGitWriter({
    gitdir: path.join(root, "work.git"),
    remoteUrl: http.url("remote.git"),
    branch: "main",
    author: { name: "t", email: "t@example.com" },
    logger: silentLogger(),
  });
  await writer.start();
});
afterEach(async () => {
  await collector?.close();
  collector = undefined;
  await writer.close();
  await http.close();
  await rm(root, { recursive: true, force: true });
});

async function seed(records: InstanceRecord[], bindings: BindingRecord[] = []): Promise<void> {
  await writer.submit(async (draft) => {
    for (const r of records) writeInstance(draft, r);
    for (const b of bindings) writeBinding(draft, b);
    return { commit: { subject: "records", trailers: {} }, result: null };
  });
}

function start(overrides: Partial<RecordsCollectorOptions> & { ticker: ManualTicker }): RecordsCollector {
  const { ticker, ...rest } = overrides;
  collector = createRecordsCollector({
    writer,
    status: createCommitStatusWatcher(),
    logger: silentLogger(),
    brokerVersion: "gitops-broker/test",
    retentionDays: 90,
    intervalMs: 60_000,
    batchSize: 2,
    now: () => NOW,
    delay: (ms) => ticker.delay(ms),
    ...rest,
  });
  collector.start();
  return collector;
}

async function present(id: string): Promise<boolean> {
  return (await readInstance(writer.snapshot(), id)) !== null;
}

describe("records GC", () => {
  it("removes the oldest deprovisioned records past the retention, one commit of at most gcBatchSize per interval, bindings included", async () => {
    await seed(
      [
        deprovisioned("old-1", 100),
        deprovisioned("old-2", 95),
        deprovisioned("b-old-3", 91),
        deprovisioned("recent", 89),
        record("live", [["provision", daysBefore(300)]], false),
        // Deprovisioned, then provisioned again: live, whatever its old deprovision.
        record("again", [["provision", daysBefore(300)], ["deprovision", daysBefore(200)], ["provision", daysBefore(150)]], false),
      ],
      [binding("old-1", "app-1"), binding("old-1", "app-2")],
    );
    const seeded = (await gitLog(remote)).length;
    const ticker = manualTicker();
    const recorded = recordingMetrics();
    start({ ticker, metrics: createInstruments(recorded.metrics).records });

    await ticker.tick();
    const log = await gitLog(remote);
    expect(log.length).toBe(seeded + 1);
    expect(log[0]!.subject).toBe(`gc: remove 2 records of instances deprovisioned before ${daysBefore(90).replace(".000Z", "Z")}`);
    expect(log[0]!.message.split("\n\n").at(-1)).toBe(
      ["Reason: records-gc", "Retention-Days: 90", "Instance-Id: old-1", "Instance-Id: old-2", "Broker-Version: gitops-broker/test"].join("\n"),
    );
    const tip = writer.snapshot();
    expect(await tip.list(instanceRecordDir("old-1"))).toBeNull();
    expect(await readBinding(tip, "old-1", "app-1")).toBeNull();
    expect(await present("old-2")).toBe(false);
    expect(await present("b-old-3")).toBe(true);
    expect(recorded.value("gitops_broker_records_collected_total")).toBe(2);
    // Counted before the pass removed them: 3 deleted on local, 1 on other.
    expect(recorded.value("gitops_broker_deleted_records", { cluster: "local" })).toBe(3);
    expect(recorded.value("gitops_broker_deleted_records", { cluster: "other" })).toBe(1);

    await ticker.tick();
    expect((await gitLog(remote)).length).toBe(seeded + 2);
    expect((await gitLog(remote))[0]!.message).toMatch(/^gc: remove 1 record of instances deprovisioned before [^\n]+\n\nReason: records-gc\nRetention-Days: 90\nInstance-Id: b-old-3\n/);
    expect(recorded.value("gitops_broker_records_collected_total")).toBe(3);

    // Nothing left past the retention: no commit.
    await ticker.tick();
    expect((await gitLog(remote)).length).toBe(seeded + 2);
    for (const id of ["recent", "live", "again"]) expect(await present(id)).toBe(true);
    expect(recorded.value("gitops_broker_deleted_records", { cluster: "local" })).toBe(1);
    expect(recorded.value("gitops_broker_deleted_records", { cluster: "other" })).toBeUndefined();
    expect(ticker.waits).toEqual([60_000, 60_000, 60_000, 60_000]);
  });

  it("leaves a record that was provisioned again between the scan and the commit, and one whose deprovision is in progress", async () => {
    await seed([deprovisioned("x-1", 120), deprovisioned("x-2", 110), deprovisioned("x-3", 100)]);
    const seeded = (await gitLog(remote)).length;
    // The GC's operation is queued behind a re-provision of x-1 that came in after the scan.
    const racing: GitWriter = Object.create(writer) as GitWriter;
    racing.submit = async (op) => {
      await writer.submit(async (draft) => {
        writeInstance(draft, record("x-1", [["provision", daysBefore(200)], ["deprovision", daysBefore(120)], ["provision", NOW.toISOString()]], false));
        return { commit: { subject: "provision x-1 again", trailers: {} }, result: null };
      });
      return writer.submit(op);
    };
    const commitMode = createCommitStatusWatcher();
    const status: Pick<StatusWatcher, "instanceStatus"> = {
      instanceStatus: (instance, op) => (instance.spec.instanceId === "x-3" ? { state: "in progress" } : commitMode.instanceStatus(instance, op)),
    };
    const ticker = manualTicker();
    start({ ticker, writer: racing, status, batchSize: 10 });
    await ticker.tick();

    const log = await gitLog(remote);
    expect(log.map((c) => c.subject).slice(0, 2)).toEqual([
      `gc: remove 1 record of instances deprovisioned before ${daysBefore(90).replace(".000Z", "Z")}`,
      "provision x-1 again",
    ]);
    expect(log.length).toBe(seeded + 2);
    expect(log[0]!.message).toMatch(/\nInstance-Id: x-2\nBroker-Version/);
    expect(await present("x-1")).toBe(true);
    expect((await readInstance(writer.snapshot(), "x-1"))!.status.deleted).toBeUndefined();
    expect(await present("x-2")).toBe(false);
    expect(await present("x-3")).toBe(true);
  });

  it("with retentionDays 0 keeps every record, however old", async () => {
    await seed([deprovisioned("ancient", 3650)]);
    const seeded = (await gitLog(remote)).length;
    const ticker = manualTicker();
    const recorded = recordingMetrics();
    start({ ticker, retentionDays: 0, metrics: createInstruments(recorded.metrics).records });
    await ticker.tick();
    await ticker.tick();
    expect((await gitLog(remote)).length).toBe(seeded);
    expect(await present("ancient")).toBe(true);
    // The backlog stays visible.
    expect(recorded.value("gitops_broker_deleted_records", { cluster: "local" })).toBe(1);
  });

  it("refuses options it cannot honour", () => {
    const base = { writer, status: createCommitStatusWatcher(), logger: silentLogger(), brokerVersion: "v", intervalMs: 1000, batchSize: 1 };
    expect(() => createRecordsCollector({ ...base, retentionDays: -1 })).toThrow(/retentionDays/);
    expect(() => createRecordsCollector({ ...base, retentionDays: 1, batchSize: 0 })).toThrow(/batchSize/);
  });
});
