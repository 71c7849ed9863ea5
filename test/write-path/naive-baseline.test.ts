import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NAIVE_STARTED } from "../../bench/naive-gitwriter.js";
import { PROCESS_TEST_TIMEOUT_MS, stopProcesses } from "../support/processes.js";
import { spawnBroker, type BrokerProcess } from "./broker-process.js";
import { samplePlans, startRemote, type Remote } from "./fixture.js";

/**
 * The benchmark's baseline (bench/naive-broker.ts) is the naive writer: one commit and one push
 * per operation, never the git writer's group push. Its module hook once stopped matching when
 * createGitWriter moved (f37553a), and the baseline ran the real writer (ADR 0038).
 */

let remote: Remote;
let naive: BrokerProcess;

beforeAll(async () => {
  remote = await startRemote("write-path-naive-");
  naive = await spawnBroker({
    dataDir: path.join(remote.root, "naive"),
    remoteUrl: remote.url,
    command: ["--import", "tsx", path.join(import.meta.dirname, "../../bench/naive-broker.ts")],
  });
}, PROCESS_TEST_TIMEOUT_MS);

afterAll(async () => {
  await naive?.stop();
  await stopProcesses();
  await remote?.close();
}, PROCESS_TEST_TIMEOUT_MS);

describe("the benchmark's naive broker", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("runs the naive writer: one push per operation, none of the git writer's", async () => {
    expect(naive.logs.some((l) => l.msg === NAIVE_STARTED)).toBe(true);
    const plans = await samplePlans(naive.osb);
    const body = { service_id: plans.serviceId, plan_id: plans.small, organization_guid: "bench-org", space_guid: "bench-space" };
    const pushesBefore = remote.server.requests.filter((r) => r.method === "POST" && r.path.endsWith("/git-receive-pack")).length;
    const ids = ["naive-1", "naive-2", "naive-3", "naive-4", "naive-5"];
    const replies = await Promise.all(ids.map((id) => naive.osb.provision(id, body)));
    expect(replies.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
    const pushes = remote.server.requests.filter((r) => r.method === "POST" && r.path.endsWith("/git-receive-pack")).length - pushesBefore;
    expect(pushes).toBe(ids.length);
    // The git writer logs each push it makes; the naive writer logs none.
    expect(naive.logs.filter((l) => l.msg === "pushed")).toEqual([]);
  });
});
