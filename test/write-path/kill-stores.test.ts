import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { clusterNamespacePath, clusterRegistryPath, namespaceManifest } from "../../src/repo/index.js";
import { createBareRemote, fsck, installPreReceiveHook, pushExternalCommit } from "../support/git-fixtures.js";
import { PROCESS_TEST_TIMEOUT_MS, stopProcesses, waitUntil } from "../support/processes.js";
import { BIN, spawnBroker, type BrokerProcess } from "./broker-process.js";
import { counts, history, instanceRecords, loadAndKill, samplePlans, send, startRemote, type Remote, type SamplePlans, type Sent } from "./fixture.js";

/**
 * kill -9 of a broker with a store (ADR 0027) under load: new instances go to cluster `local`
 * (the control repository) and `eu-1` (store eu, a repository of its own), both pushes slowed
 * so that kills land in them. Every acknowledged provision must be in exactly one repository,
 * once; an unanswered one retried is answered per OSB (it exists: 200; it does not: 201/202).
 */

const CLIENTS = 8;
// Each kill comes after this many acknowledgements of its round, not after a time: on a loaded
// machine a fixed delay of a second or two passed before the first push, and the rounds acknowledged
// next to nothing (3 provisions over four kills). With eight clients in flight, each kill still
// lands in a push to one repository or the other, or in the queue behind it.
const KILL_AFTER_ACKS = [1, 4, 10, 20];

let remote: Remote;
let storeDir: string;
let config: string;
let dataDir: string;
let plans: SamplePlans;
let live: BrokerProcess | undefined;

beforeAll(async () => {
  remote = await startRemote("write-path-kill-stores-");
  const remotes = path.dirname(remote.dir);
  storeDir = await createBareRemote(remotes, "eu.git", { [clusterNamespacePath("eu-1")]: namespaceManifest("gitops-broker-instances") });
  await pushExternalCommit(
    remote.dir,
    {
      [clusterRegistryPath("eu-1")]: stringify({
        apiVersion: "gitops-broker.io/v1alpha1",
        kind: "Cluster",
        metadata: { name: "eu-1" },
        spec: { namespace: "gitops-broker-instances", store: "eu" },
      }),
    },
    "register eu-1 in store eu",
  );
  for (const dir of [remote.dir, storeDir]) await installPreReceiveHook(dir, "sleep 0.1\n");
  config = path.join(remote.root, "broker.yaml");
  await writeFile(config, stringify({ scheduler: { type: "round-robin" }, stores: { eu: { remote: remote.server.url("eu.git") } } }));
  dataDir = path.join(remote.root, "broker");
}, PROCESS_TEST_TIMEOUT_MS);

afterAll(async () => {
  await live?.stop();
  await stopProcesses();
  await remote?.close();
}, PROCESS_TEST_TIMEOUT_MS);

const start = () => spawnBroker({ dataDir, remoteUrl: remote.url, keepLogs: false, command: [BIN, "serve", "--config", config] });

function provisionBody(): Record<string, unknown> {
  return { service_id: plans.serviceId, plan_id: plans.small, organization_guid: "org", space_guid: "space" };
}

describe("kill -9 under load, with a store", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it(`loses and duplicates nothing over ${KILL_AFTER_ACKS.length} kills, in either repository`, async () => {
    const sent: Sent[] = [];
    for (const [round, acks] of KILL_AFTER_ACKS.entries()) {
      const broker = await start();
      plans ??= await samplePlans(broker.osb);
      sent.push(
        ...(await loadAndKill(broker, plans, {
          clients: CLIENTS,
          provision: (c, n) => ({ instanceId: `ks${round}-c${c}-${n}`, body: provisionBody() }),
          until: (progress) => waitUntil(() => progress.acks >= acks, `${acks} acknowledgements`),
        })),
      );
    }
    const answered = sent.filter((s) => s.reply !== undefined);
    const unanswered = sent.filter((s) => s.reply === undefined);
    expect(answered.map((s) => s.reply!.status).filter((status) => status !== 201)).toEqual([]);
    expect(answered.length).toBeGreaterThan(10);

    live = await start();
    const [control, store] = await Promise.all([instanceRecords(remote.dir), instanceRecords(storeDir)]);
    // Both repositories took instances, and no id is in both.
    expect(control.size).toBeGreaterThan(0);
    expect(store.size).toBeGreaterThan(0);
    expect([...control.keys()].filter((id) => store.has(id))).toEqual([]);
    // Every acknowledged provision is in one repository's history exactly once.
    const identities = counts([...(await history(remote.dir)), ...(await history(storeDir))].map((c) => c.trailers["Request-Identity"] ?? ""));
    for (const s of answered) expect(identities.get(s.identity), `${s.instanceId} was acknowledged`).toBe(1);

    // The platform retries what got no answer (and a few that did): same id, same body.
    const retries = [...unanswered, ...answered.filter((_, i) => i % 10 === 0)];
    const replies = await Promise.all(retries.map((s) => send(live!.osb, { kind: "provision", instanceId: s.instanceId }, provisionBody(), plans)));
    for (const [i, s] of retries.entries()) {
      const existed = control.has(s.instanceId) || store.has(s.instanceId);
      if (existed) expect(replies[i]!.reply?.status, `retry of ${s.instanceId}, which exists`).toBe(200);
      else expect([201, 202], `retry of ${s.instanceId}, which does not exist`).toContain(replies[i]!.reply?.status);
    }
    const [controlAfter, storeAfter] = await Promise.all([instanceRecords(remote.dir), instanceRecords(storeDir)]);
    expect([...controlAfter.keys()].filter((id) => storeAfter.has(id))).toEqual([]);
    for (const s of retries) expect(controlAfter.has(s.instanceId) || storeAfter.has(s.instanceId), s.instanceId).toBe(true);
    await fsck(remote.dir);
    await fsck(storeDir);
  });
});
