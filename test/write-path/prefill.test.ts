import { mkdir } from "node:fs/promises";
import path from "node:path";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prefillInstanceId, prefillRemote, provisionFiles, samplePlacement } from "../../bench/prefill.js";
import { fsck } from "../support/git-fixtures.js";
import { PROCESS_TEST_TIMEOUT_MS, stopProcesses } from "../support/processes.js";
import { spawnBroker, type BrokerProcess } from "./broker-process.js";
import { filesBelow, samplePlans, startRemote, type Remote } from "./fixture.js";

/** The benchmark's pre-filled repositories hold what the broker itself writes on provision. */

let remote: Remote;
let broker: BrokerProcess;

beforeAll(async () => {
  remote = await startRemote("write-path-prefill-");
  broker = await spawnBroker({ dataDir: path.join(remote.root, "broker"), remoteUrl: remote.url, keepLogs: false });
}, PROCESS_TEST_TIMEOUT_MS);

afterAll(async () => {
  await broker?.stop();
  await stopProcesses();
  await remote?.close();
}, PROCESS_TEST_TIMEOUT_MS);

describe("bench pre-fill", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("writes the record and manifests of a real provision", async () => {
    const plans = await samplePlans(broker.osb);
    const body = { service_id: plans.serviceId, plan_id: plans.small, organization_guid: "bench-org", space_guid: "bench-space" };
    expect((await broker.osb.provision("compare-1", body)).status).toBe(201);

    const actual = await filesBelow(remote.dir, ["instances", "clusters/local/instances"]);
    const [record] = [...actual].filter(([name]) => name.endsWith("/instance.yaml"));
    const op = (parse(record![1]) as { status: { operations: { id: string; at: string }[] } }).status.operations[0]!;
    const scratch = path.join(remote.root, "scratch");
    await mkdir(scratch);
    const expected = provisionFiles(await samplePlacement(remote.dir, scratch), "compare-1", op.id, op.at);
    expect(actual).toEqual(expected);
  });

  it("builds a repository the broker starts on and sees the instances of", async () => {
    const dir = path.join(remote.root, "prefilled");
    await mkdir(dir);
    const { remoteDir, instances } = await prefillRemote(dir, 3);
    expect(instances).toBe(3);
    await fsck(remoteDir);
    const files = await filesBelow(remoteDir, ["instances"]);
    expect([...files.keys()].filter((f) => f.endsWith("/instance.yaml"))).toHaveLength(3);

    const prefilled = await spawnBroker({ dataDir: path.join(dir, "broker"), remoteUrl: remoteDir, keepLogs: false });
    try {
      const plans = await samplePlans(prefilled.osb);
      const body = { service_id: plans.serviceId, plan_id: plans.small, organization_guid: "bench-org", space_guid: "bench-space" };
      // The same provision again: the broker finds the instance identical to what it would write.
      expect((await prefilled.osb.provision(prefillInstanceId(1), body)).status).toBe(200);
      expect((await prefilled.osb.lastOperation(prefillInstanceId(2))).body).toMatchObject({ state: "succeeded" });
    } finally {
      await prefilled.stop();
    }
  });
});
