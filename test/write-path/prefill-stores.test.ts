import { rm } from "node:fs/promises";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prefillClusterInstanceId, prefillStores, type PrefilledStores } from "../../bench/prefill.js";
import { startBroker, type RunningBroker } from "../../src/cli/serve.js";
import { clusterNamespacePath, clusterRegistryPath, instanceManifestDir, instanceRecordPath } from "../../src/repo/index.js";
import { CREDENTIALS, testConfig } from "../support/broker-harness.js";
import { createTempDir, fsck, readRemoteFile } from "../support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import { osbClient, type OsbClient } from "../support/osb-client.js";
import { filesBelow, samplePlans } from "./fixture.js";

/**
 * The pre-filled layout of bench/stores.ts: cluster `eu-1` in store `eu`, `home` in the control
 * repository, two instances each. A broker with that store starts on it and finds every instance
 * where the registry says, as it would have written it.
 */

let root: string;
let server: GitHttpServer;
let prefilled: PrefilledStores;
let broker: RunningBroker;
let osb: OsbClient;

beforeAll(async () => {
  root = await createTempDir("prefill-stores-");
  prefilled = await prefillStores(root, [
    { id: "eu-1", store: "eu", instances: 2 },
    { id: "home", instances: 2 },
  ]);
  server = await startGitHttpServer({ root });
  const config = testConfig(root, "broker", server.url("control.git"), {}, "round-robin");
  config.stores = { eu: { remote: server.url("eu.git"), branch: "main", minPushIntervalSeconds: 0, pollIntervalSeconds: 3600 } };
  broker = await startBroker(config, { version: "test" });
  osb = osbClient(broker.url, CREDENTIALS);
}, 180_000);

afterAll(async () => {
  await broker?.close();
  await server?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

describe("bench pre-fill with stores", () => {
  it("puts each cluster's namespace, records and manifests in its store, and the registry in the control repository", async () => {
    expect([...prefilled.storeDirs.keys()]).toEqual(["eu"]);
    const eu = prefilled.storeDirs.get("eu")!;
    const control = prefilled.controlDir;
    for (const dir of [control, eu]) await fsck(dir);

    const registry = parse((await readRemoteFile(control, "main", clusterRegistryPath("eu-1")))!) as { spec: { store?: string } };
    expect(registry.spec.store).toBe("eu");
    expect(await readRemoteFile(eu, "main", clusterRegistryPath("eu-1"))).toBeNull();
    expect(await readRemoteFile(eu, "main", clusterNamespacePath("eu-1"))).not.toBeNull();
    expect(await readRemoteFile(control, "main", clusterNamespacePath("home"))).not.toBeNull();

    const records = async (dir: string) => [...(await filesBelow(dir, ["instances"])).keys()].filter((f) => f.endsWith("/instance.yaml")).sort();
    const euIds = [0, 1].map((i) => prefillClusterInstanceId("eu-1", i));
    const homeIds = [0, 1].map((i) => prefillClusterInstanceId("home", i));
    expect(await records(eu)).toEqual(euIds.map(instanceRecordPath).sort());
    expect(await records(control)).toEqual(homeIds.map(instanceRecordPath).sort());
    const manifests = await filesBelow(eu, ["clusters/eu-1/instances"]);
    for (const id of euIds) expect([...manifests.keys()].some((f) => f.startsWith(`${instanceManifestDir("eu-1", id)}/`))).toBe(true);
    expect((await filesBelow(control, ["clusters"])).size).toBe(2 + 1); // home's two instances' manifests (one file each) and its namespace
  });

  it("gives a broker with the store the instances as it would have provisioned them", async () => {
    const plans = await samplePlans(osb);
    const body = { service_id: plans.serviceId, plan_id: plans.small, organization_guid: "bench-org", space_guid: "bench-space" };
    for (const id of [prefillClusterInstanceId("eu-1", 1), prefillClusterInstanceId("home", 0)]) {
      expect((await osb.getInstance(id)).status).toBe(200);
      // The same provision again: the broker finds the instance identical to what it would write.
      expect((await osb.provision(id, body)).status).toBe(200);
    }
    // A different request for a pre-filled id is a conflict wherever it lives.
    expect((await osb.provision(prefillClusterInstanceId("eu-1", 0), { ...body, space_guid: "other-space" })).status).toBe(409);
  });
});
