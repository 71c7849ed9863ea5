/**
 * End to end, the nudge (ADR 0014): the real broker (startBroker) on a smart-HTTP remote and four
 * sister clusters whose agents poll every 180 s, a poll that never comes unless the test lets it
 * (the agents' injected delay). Round-robin places db-1..db-4 on them in id order:
 * - `argo`: Argo CD, live status, nudged by a signed GitHub push event to its /api/webhook;
 * - `flux`: Flux, live status, nudged by requestedAt annotations through its kubeconfig;
 * - `recv`: Flux, commit status and no kubeconfig at all, nudged through a generic-hmac Receiver
 *   whose token the broker reads from a Secret of its own cluster;
 * - `zdown`: Argo CD, live status, its webhook URL refusing connections: the OSB request is not
 *   affected, the failure is counted, and the poll delivers.
 */
import { mkdir, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startBroker, type RunningBroker } from "../../src/cli/serve.js";
import { silentLogger } from "../../src/log/index.js";
import { clusterNamespacePath, namespaceManifest } from "../../src/repo/index.js";
import { createSecretKeyReader } from "../../src/kube/index.js";
import { stringify } from "yaml";
import { provisionBody, samplePlans, type SamplePlans } from "../broker/helpers.js";
import { CREDENTIALS, testConfig } from "../support/broker-harness.js";
import { createBareRemote, createTempDir } from "../support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import { startKubeApiServer, type KubeApiServer } from "../support/kube-api-server.js";
import { osbClient, type OsbClient } from "../support/osb-client.js";
import { INSTANCE_NAMESPACE, sampleCatalogFiles, startSisterCluster, type SisterCluster } from "../support/sister-cluster.js";

const eventually = <T>(assertion: () => T | Promise<T>): Promise<T> => vi.waitFor(assertion, { timeout: 30_000, interval: 50 });
const ASYNC = { accepts_incomplete: "true" };
const POLL_MS = 180_000;

/** The agent's 180 s poll, let through only by `release()`. */
function heldPolls() {
  const waiting = new Set<() => void>();
  const asked: number[] = [];
  return {
    asked,
    delay(ms: number, signal: AbortSignal): Promise<void> {
      asked.push(ms);
      return new Promise<void>((resolve) => {
        const done = () => {
          waiting.delete(done);
          resolve();
        };
        waiting.add(done);
        signal.addEventListener("abort", done, { once: true });
      });
    },
    release() {
      for (const done of [...waiting]) done();
    },
  };
}

let root: string;
let git: GitHttpServer;
let home: KubeApiServer;
let broker: RunningBroker;
let osb: OsbClient;
let plans: SamplePlans;
const polls = { argo: heldPolls(), flux: heldPolls(), recv: heldPolls(), zdown: heldPolls() };
let argo: SisterCluster;
let flux: SisterCluster;
let recv: SisterCluster;
let zdown: SisterCluster;
/** Pushes of the broker that touched clusters/<id>/, per id. */
const pushesTouching = new Map<string, number>();

async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

beforeAll(async () => {
  root = await createTempDir("nudge-e2e-");
  const remotes = path.join(root, "remotes");
  await mkdir(remotes);
  const remoteDir = path.join(remotes, "remote.git");
  git = await startGitHttpServer({ root: remotes });
  const remoteUrl = git.url("remote.git");

  argo = await startSisterCluster({ id: "argo", sync: "argocd", remoteDir, dir: root, agent: { delay: polls.argo.delay, repoURL: remoteUrl, webhookSecret: "argo-hook-secret" } });
  flux = await startSisterCluster({ id: "flux", sync: "flux", remoteDir, dir: root, agent: { delay: polls.flux.delay } });
  recv = await startSisterCluster({ id: "recv", sync: "flux", remoteDir, dir: root, agent: { delay: polls.recv.delay, receiver: { type: "generic-hmac", token: "receiver-token" } } });
  zdown = await startSisterCluster({ id: "zdown", sync: "argocd", remoteDir, dir: root, agent: { delay: polls.zdown.delay, repoURL: remoteUrl } });
  const argoHook = await argo.agent.listen();
  const recvHook = await recv.agent.listen();
  const secretFile = path.join(root, "argo-webhook-secret");
  await writeFile(secretFile, "argo-hook-secret\n", { mode: 0o600 });

  // The broker's own cluster, where the Receiver token Secret is.
  home = await startKubeApiServer();
  home.store.upsert({ apiVersion: "v1", kind: "Secret", metadata: { name: "flux-receiver", namespace: "broker" }, data: { token: Buffer.from("receiver-token").toString("base64") } });

  const recvEntry = stringify({
    apiVersion: "gitops-broker.io/v1alpha1",
    kind: "Cluster",
    metadata: { name: "recv" },
    spec: {
      namespace: INSTANCE_NAMESPACE,
      status: { mode: "commit" },
      sync: { kind: "flux", name: "recv", nudge: { via: "webhook", url: recvHook, secret: { secretRef: { name: "flux-receiver" } } } },
    },
  });
  await createBareRemote(remotes, "remote.git", {
    ...(await sampleCatalogFiles()),
    "registry/clusters/argo.yaml": argo.registryEntry({ nudge: { via: "webhook", url: argoHook, secret: { path: secretFile } } }),
    "registry/clusters/flux.yaml": flux.registryEntry({ nudge: { via: "annotation" } }),
    "registry/clusters/recv.yaml": recvEntry,
    "registry/clusters/zdown.yaml": zdown.registryEntry({ nudge: { via: "webhook", url: `http://127.0.0.1:${await closedPort()}/api/webhook` } }),
    ...Object.fromEntries(["argo", "flux", "recv", "zdown"].map((id) => [clusterNamespacePath(id), namespaceManifest(INSTANCE_NAMESPACE)])),
  });

  const config = testConfig(root, "broker", remoteUrl, {}, "round-robin");
  config.status = { ...config.status, mode: "live" };
  broker = await startBroker(config, {
    version: "test",
    logger: silentLogger(),
    nudge: { readSecret: createSecretKeyReader({ home: () => home.loadKubeConfig(), namespace: "broker" }) },
  });
  broker.writer.onPushed((event) => {
    const touched = new Set(event.commits.flatMap((c) => c.paths).filter((p) => p.startsWith("clusters/")).map((p) => p.split("/")[1]!));
    for (const id of touched) pushesTouching.set(id, (pushesTouching.get(id) ?? 0) + 1);
  });
  osb = osbClient(broker.url, CREDENTIALS);
  plans = await samplePlans(osb);
  for (const cluster of [argo, flux, recv, zdown]) {
    cluster.operator.start();
    cluster.agent.start(POLL_MS);
  }
  // Each agent's first look at Git (at start), then the 180 s wait.
  await eventually(() => {
    for (const cluster of [argo, flux, recv, zdown]) expect(cluster.agent.triggers).toEqual(["poll"]);
    for (const p of Object.values(polls)) expect(p.asked).toEqual([POLL_MS]);
  });
}, 120_000);

afterAll(async () => {
  await broker?.close();
  for (const cluster of [argo, flux, recv, zdown]) await cluster?.close();
  await home?.close();
  await git?.close();
  await rm(root, { recursive: true, force: true });
});

async function provision(id: string): Promise<string> {
  const res = await osb.provision(id, provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
  expect(res.status).toBe(202);
  return res.body.operation as string;
}

async function lastOperation(id: string, op: string) {
  const res = await osb.lastOperation(id, { operation: op });
  expect(res.status).toBe(200);
  return res.body;
}

const postgresqlOf = (cluster: SisterCluster, instance: string) =>
  cluster.server.store.get({ apiVersion: "acid.zalan.do/v1", kind: "postgresql", namespace: INSTANCE_NAMESPACE, name: `pg-${instance}` });

describe("nudge after push", () => {
  it("Argo CD by webhook: succeeded before any poll, the Application refreshed by the push event", async () => {
    const op = await provision("db-1");
    await eventually(async () => expect(await lastOperation("db-1", op)).toEqual({ state: "succeeded", description: "PostgreSQL cluster pg-db-1 is running" }));
    expect(argo.agent.triggers).toEqual(["poll", "refresh"]);
    expect(argo.agent.webhookRequests).toEqual([{ path: "/api/webhook", status: 200 }]);
    // After the refresh it waits a full poll interval again.
    await eventually(() => expect(polls.argo.asked).toEqual([POLL_MS, POLL_MS]));
  });

  it("Flux by annotation: the GitRepository fetched on requestedAt, its new artifact applied; succeeded before any poll", async () => {
    const op = await provision("db-2");
    await eventually(async () => expect(await lastOperation("db-2", op)).toMatchObject({ state: "succeeded" }));
    expect(flux.agent.triggers.slice(0, 2)).toEqual(["poll", "source-requested"]);
    expect(flux.agent.triggers).not.toContain("refresh");
    expect(postgresqlOf(flux, "db-2")).toBeDefined();
  });

  it("commit mode, no kubeconfig: the Flux Receiver (generic-hmac, token from a Secret) makes the agent apply at once", async () => {
    const op = await provision("db-3");
    expect(await lastOperation("db-3", op)).toMatchObject({ state: "succeeded" });
    await eventually(() => expect(postgresqlOf(recv, "db-3")).toBeDefined());
    expect(recv.agent.triggers.slice(0, 2)).toEqual(["poll", "source-requested"]);
    expect(recv.agent.webhookRequests.map((r) => r.status)).toEqual([200]);
  });

  it("a webhook that cannot be reached: 202 as usual, the failure counted, and the agent's poll delivers", async () => {
    const op = await provision("db-4");
    await eventually(() => expect(broker.nudger.stats().zdown).toEqual({ sent: 0, failed: 1, folded: 0 }));
    expect(await lastOperation("db-4", op)).toMatchObject({ state: "in progress" });
    expect(zdown.agent.triggers).toEqual(["poll"]);
    polls.zdown.release();
    await eventually(async () => expect(await lastOperation("db-4", op)).toMatchObject({ state: "succeeded" }));
    expect(zdown.agent.triggers).toEqual(["poll", "poll"]);
  });

  it("concurrent provisions: one nudge per push and cluster (sent, or folded into the next by the rate limit)", async () => {
    const ids = Array.from({ length: 12 }, (_, i) => `group-${i}`);
    await Promise.all(ids.map((id) => provision(id)));
    await broker.nudger.idle();
    const stats = broker.nudger.stats();
    for (const id of ["argo", "flux", "recv", "zdown"]) {
      const { sent, failed, folded } = stats[id]!;
      expect(sent + failed + folded).toBe(pushesTouching.get(id));
    }
    // Every Argo CD push event was accepted; the agents applied the last commit without a poll.
    expect(argo.agent.webhookRequests.every((r) => r.status === 200)).toBe(true);
    expect(stats.argo!.sent).toBe(argo.agent.webhookRequests.length);
    // Round-robin put three on each cluster: the nine on the nudged ones are applied.
    await eventually(() => {
      const applied = ids.filter((id) => [argo, flux, recv].some((cluster) => postgresqlOf(cluster, id) !== undefined));
      expect(applied).toHaveLength(9);
    });
    expect(argo.agent.triggers.filter((t) => t === "poll")).toEqual(["poll"]);
  });
});
