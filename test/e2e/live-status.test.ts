/**
 * End to end, status.mode live: the real broker (startBroker) on a smart-HTTP remote and two
 * sister clusters, `east` synced by an Argo CD double and `west` by a Flux double (each a
 * Kubernetes API server double with a postgres-operator double). Provision -> commit -> sync ->
 * operator -> succeeded -> bind with credentials -> unbind -> deprovision -> prune -> succeeded on
 * both; a sync error; an unreachable cluster; zero Kubernetes API requests per poll; and a scan of
 * every object of the remote's history for the credentials.
 */
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startBroker, type RunningBroker } from "../../src/cli/serve.js";
import { clusterNamespacePath, namespaceManifest } from "../../src/repo/index.js";
import { createLogger } from "../../src/log/index.js";
import { provisionBody, samplePlans, type SamplePlans } from "../broker/helpers.js";
import { CREDENTIALS, testConfig } from "../support/broker-harness.js";
import { createBareRemote, createTempDir, pushExternalCommit } from "../support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import { allBlobs } from "../support/git-objects.js";
import { osbClient, type OsbClient } from "../support/osb-client.js";
import { INSTANCE_NAMESPACE, quietRequests, sampleCatalogFiles, startSisterCluster, type SisterCluster } from "../support/sister-cluster.js";
import { EVENT_CEILING_MS } from "../support/processes.js";

const eventually = <T>(assertion: () => Promise<T>): Promise<T> => vi.waitFor(assertion, { timeout: EVENT_CEILING_MS, interval: 50 });
const ASYNC = { accepts_incomplete: "true" };

let root: string;
let remoteDir: string;
let git: GitHttpServer;
let east: SisterCluster;
let west: SisterCluster;
let broker: RunningBroker;
let osb: OsbClient;
let plans: SamplePlans;
let clockOffsetMs = 0;
const logLines: string[] = [];

beforeAll(async () => {
  root = await createTempDir("live-status-e2e-");
  const remotes = path.join(root, "remotes");
  await mkdir(remotes);
  remoteDir = path.join(remotes, "remote.git");
  east = await startSisterCluster({ id: "east", sync: "argocd", remoteDir, dir: root });
  west = await startSisterCluster({ id: "west", sync: "flux", remoteDir, dir: root, fluxRevisionFormat: "slash" });
  await createBareRemote(remotes, "remote.git", {
    ...(await sampleCatalogFiles()),
    "registry/clusters/east.yaml": east.registryEntry(),
    // Not schedulable yet: `single` places the first instances on east.
    "registry/clusters/west.yaml": west.registryEntry({ schedulable: false }),
    [clusterNamespacePath("east")]: namespaceManifest(INSTANCE_NAMESPACE),
    [clusterNamespacePath("west")]: namespaceManifest(INSTANCE_NAMESPACE),
  });
  git = await startGitHttpServer({ root: remotes });
  // A bound the first bind's credentials make on a loaded machine too (3 s was tight there).
  broker = await startLiveBroker("broker", 15_000);
  osb = osbClient(broker.url, CREDENTIALS);
  plans = await samplePlans(osb);
  for (const cluster of [east, west]) cluster.operator.start();
});
afterAll(async () => {
  await broker?.close();
  await east?.close();
  await west?.close();
  await git?.close();
  await rm(root, { recursive: true, force: true });
});

/** The real broker in status mode live on the remote, its log lines kept; binds wait at most `bindTimeoutMs` for their credentials. */
async function startLiveBroker(name: string, bindTimeoutMs: number): Promise<RunningBroker> {
  const config = testConfig(root, name, git.url("remote.git"));
  config.status = { ...config.status, mode: "live" };
  return startBroker(config, {
    version: "test",
    logger: createLogger({ level: "debug", destination: { write: (line: string) => void logLines.push(line) } }),
    // Waiting for a complete view of a cluster is an event; only the credentials' wait is the bound.
    status: { now: () => new Date(Date.now() + clockOffsetMs), bindTimeoutMs, settleTimeoutMs: 15_000 },
  });
}

async function lastOperation(instanceId: string, operation?: string) {
  const res = await osb.lastOperation(instanceId, operation ? { operation } : undefined);
  expect(res.status).toBe(200);
  return res.body;
}

async function succeeds(instanceId: string, operation: string): Promise<void> {
  await eventually(async () => expect(await lastOperation(instanceId, operation)).toMatchObject({ state: "succeeded" }));
}

const secretOf = (cluster: SisterCluster, binding: string, instance: string) =>
  cluster.server.store.get({ apiVersion: "v1", kind: "Secret", namespace: INSTANCE_NAMESPACE, name: `${binding}.pg-${instance}.credentials.postgresql.acid.zalan.do` });
const postgresqlOf = (cluster: SisterCluster, instance: string) =>
  cluster.server.store.get({ apiVersion: "acid.zalan.do/v1", kind: "postgresql", namespace: INSTANCE_NAMESPACE, name: `pg-${instance}` });
const decoded = (value: unknown) => Buffer.from(String(value), "base64").toString("utf8");
const unbindQuery = () => ({ service_id: plans.serviceId, plan_id: plans.medium.id });

describe("live status on east (Argo CD)", () => {
  it("provision: in progress until Argo CD applied the commit and the operator runs the database; polls cost no API request", async () => {
    const res = await osb.provision("db-east", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
    expect(res.status).toBe(202);
    const op = res.body.operation as string;
    await eventually(async () =>
      expect(await lastOperation("db-east", op)).toEqual({
        state: "in progress",
        description: `waiting for Argo CD application east to apply operation ${op} (nothing applied yet)`,
      }),
    );
    const before = await quietRequests(east.server);
    for (let i = 0; i < 20; i++) expect((await lastOperation("db-east", op)).state).toBe("in progress");
    expect(east.server.requests.length).toBe(before);

    east.agent.start();
    await eventually(async () =>
      expect(await lastOperation("db-east", op)).toEqual({ state: "succeeded", description: "PostgreSQL cluster pg-db-east is running" }),
    );
    expect((await osb.getInstance("db-east")).status).toBe(200);
  });

  it("bind answers 201 with the credentials the operator created; GET binding too; polls cost no API request", async () => {
    const res = await osb.bind("db-east", "app-1", { service_id: plans.serviceId, plan_id: plans.medium.id, bind_resource: { app_guid: "app-guid-1" } });
    expect(res.status).toBe(201);
    const secret = secretOf(east, "app-1", "db-east")!;
    const data = secret.data as { username: string; password: string };
    expect(res.body.credentials).toMatchObject({ username: "app-1", password: decoded(data.password), dbname: "app", port: 5432 });

    const fetched = await osb.getBinding("db-east", "app-1");
    expect(fetched.status).toBe(200);
    expect(fetched.body.credentials).toEqual(res.body.credentials);

    const before = await quietRequests(east.server);
    for (let i = 0; i < 20; i++) {
      expect((await lastOperation("db-east")).state).toBe("succeeded");
      expect((await osb.getInstance("db-east")).status).toBe(200);
      expect((await osb.getBinding("db-east", "app-1")).body.credentials).toEqual(res.body.credentials);
    }
    expect(east.server.requests.length).toBe(before);
  });

  it("a bind whose credentials are not readable in time: 202 with accepts_incomplete, else 503", async () => {
    // Argo CD stopped: no credentials can come, so what is tested is the answer once the bound
    // is out, not its length; a second broker on the same remote waits 1 s instead of 15 s.
    const short = await startLiveBroker("broker-short-bound", 1_000);
    try {
      const osbShort = osbClient(short.url, CREDENTIALS);
      // Its watcher sees east (the instance's state comes from the live cluster) before the binds.
      await eventually(async () =>
        expect((await osbShort.lastOperation("db-east")).body).toEqual({ state: "succeeded", description: "PostgreSQL cluster pg-db-east is running" }),
      );
      await east.agent.stop();
      const body = { service_id: plans.serviceId, plan_id: plans.medium.id, bind_resource: { app_guid: "app-guid-2" } };
      const refused = await osbShort.bind("db-east", "app-2", body);
      expect(refused.status).toBe(503);
      expect(refused.body.description).toMatch(/^binding app-2 is committed but has no readable credentials yet \(waiting for Argo CD application east to apply operation /);
      // The platform's orphan mitigation:
      expect((await osbShort.unbind("db-east", "app-2", unbindQuery())).status).toBe(200);

      const accepted = await osbShort.bind("db-east", "app-3", body, { query: ASYNC });
      expect(accepted.status).toBe(202);
      const op = accepted.body.operation as string;
      expect((await osbShort.bindingLastOperation("db-east", "app-3", { operation: op })).body).toMatchObject({ state: "in progress" });
      east.agent.start();
      await eventually(async () => expect((await osbShort.bindingLastOperation("db-east", "app-3", { operation: op })).body).toMatchObject({ state: "succeeded" }));
      const fetched = await osbShort.getBinding("db-east", "app-3");
      expect(fetched.body.credentials).toMatchObject({ username: "app-3", password: decoded((secretOf(east, "app-3", "db-east")!.data as { password: string }).password) });
    } finally {
      await short.close();
    }
    // The file's broker goes on from the remote as the second one left it.
    await broker.writer.refresh();
  });

  it("unbind, then deprovision: succeeded once the objects are pruned", async () => {
    for (const binding of ["app-1", "app-3"]) expect((await osb.unbind("db-east", binding, unbindQuery())).status).toBe(200);
    await eventually(async () => expect(secretOf(east, "app-1", "db-east")).toBeUndefined());

    const res = await osb.deprovision("db-east", unbindQuery(), { query: ASYNC });
    expect(res.status).toBe(202);
    await succeeds("db-east", res.body.operation as string);
    expect(postgresqlOf(east, "db-east")).toBeUndefined();
  });
});

describe("live status on west (Flux)", () => {
  // New instances go to west once the registry makes it the schedulable cluster.
  beforeAll(async () => {
    await pushExternalCommit(
      remoteDir,
      { "registry/clusters/east.yaml": east.registryEntry({ schedulable: false }), "registry/clusters/west.yaml": west.registryEntry() },
      "registry: schedule on west",
    );
    await broker.writer.refresh();
    west.agent.start();
  });

  it("a synchronous plan: provision 201, then the whole lifecycle from the live cluster", async () => {
    const res = await osb.provision("db-west", provisionBody(plans.serviceId, plans.small.id));
    expect(res.status).toBe(201);
    await eventually(async () => expect(await lastOperation("db-west")).toMatchObject({ state: "succeeded" }));
    expect(postgresqlOf(west, "db-west")).toBeDefined();
    expect(postgresqlOf(east, "db-west")).toBeUndefined();

    const bound = await osb.bind("db-west", "app-w", { service_id: plans.serviceId, plan_id: plans.small.id, bind_resource: { app_guid: "w" } });
    expect(bound.status).toBe(201);
    expect(bound.body.credentials).toMatchObject({ username: "app-w", password: decoded((secretOf(west, "app-w", "db-west")!.data as { password: string }).password) });
    const query = { service_id: plans.serviceId, plan_id: plans.small.id };
    expect((await osb.unbind("db-west", "app-w", query)).status).toBe(200);
    expect((await osb.deprovision("db-west", query)).status).toBe(200);
    await eventually(async () => expect(await lastOperation("db-west")).toMatchObject({ state: "succeeded", description: expect.stringMatching(/^deprovision applied by Flux Kustomization west/) }));
    expect(postgresqlOf(west, "db-west")).toBeUndefined();
  });

  it("reports a sync error in the description, and succeeds once Flux applies the commit", async () => {
    west.agent.failWith("kustomize build failed: accumulating resources");
    const res = await osb.provision("db-err", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
    const op = res.body.operation as string;
    await eventually(async () =>
      expect(await lastOperation("db-err", op)).toEqual({
        state: "in progress",
        description: expect.stringMatching(
          new RegExp(`^waiting for Flux Kustomization west to apply operation ${op} \\(applied: [0-9a-f]{7}\\); the last sync failed: ReconciliationFailed: kustomize build failed: accumulating resources$`),
        ),
      }),
    );
    west.agent.failWith(undefined);
    await succeeds("db-err", op);
  });

  it("keeps an operation in progress while the cluster cannot be reached, then fails it after maximum_polling_duration", async () => {
    await west.agent.stop();
    const res = await osb.provision("db-down", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
    const op = res.body.operation as string;
    await west.server.stop();
    await eventually(async () =>
      expect(await lastOperation("db-down", op)).toEqual({ state: "in progress", description: expect.stringMatching(/^cluster west cannot be reached: /) }),
    );
    clockOffsetMs = 3601 * 1000;
    expect(await lastOperation("db-down", op)).toEqual({
      state: "failed",
      description: expect.stringMatching(/^provision did not finish within the plan's maximum_polling_duration \(3600 s\): cluster west cannot be reached: /),
    });
    clockOffsetMs = 0;
  });
});

describe("credentials never reach Git or the logs", () => {
  it("no object of the remote's history and no log line holds a password the operators made", async () => {
    const passwords = [...east.operator.passwords, ...west.operator.passwords];
    expect(passwords.length).toBeGreaterThanOrEqual(4);
    const blobs = await allBlobs(remoteDir);
    expect(blobs.length).toBeGreaterThan(20);
    for (const password of passwords) {
      for (const form of [password, Buffer.from(password).toString("base64")]) {
        expect(blobs.filter((b) => b.data.includes(form)).map((b) => b.oid)).toEqual([]);
        expect(logLines.filter((line) => line.includes(form))).toEqual([]);
      }
    }
  });
});
