/**
 * Never a wrong OSB answer in status.mode live (ADR 0012): the real broker on a smart-HTTP remote
 * and a sister cluster synced by a Flux double, driven step by step (the test syncs and plays the
 * operator), so every answer is asked for while an operation is exactly where the case needs it.
 */
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startBroker, type RunningBroker } from "../../src/cli/serve.js";
import { clusterNamespacePath, namespaceManifest } from "../../src/repo/index.js";
import { silentLogger } from "../../src/log/index.js";
import { createKubeConfigResolver, type KubeConfigFor } from "../../src/kube/index.js";
import { expectOsbError, provisionBody, samplePlans, type SamplePlans } from "../broker/helpers.js";
import { CREDENTIALS, testConfig } from "../support/broker-harness.js";
import { createBareRemote, createTempDir } from "../support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import type { KubeObject } from "../support/kube-api-server.js";
import { osbClient, type OsbClient } from "../support/osb-client.js";
import { INSTANCE_NAMESPACE, sampleCatalogFiles, startSisterCluster, type SisterCluster } from "../support/sister-cluster.js";

const eventually = <T>(assertion: () => Promise<T>): Promise<T> => vi.waitFor(assertion, { timeout: 30_000, interval: 50 });
const ASYNC = { accepts_incomplete: "true" };

let root: string;
let remoteDir: string;
let git: GitHttpServer;
let west: SisterCluster;
let broker: RunningBroker;
let osb: OsbClient;
let plans: SamplePlans;
/** The status watcher's clock: the wall clock, or a time a test sets. */
let frozenAt: number | undefined;

async function start(kubeConfigFor?: KubeConfigFor): Promise<void> {
  const config = testConfig(root, "broker", git.url("remote.git"));
  config.status = { ...config.status, mode: "live" };
  broker = await startBroker(config, {
    version: "test",
    logger: silentLogger(),
    status: { now: () => new Date(frozenAt ?? Date.now()), bindTimeoutMs: 20_000, settleTimeoutMs: 60_000, ...(kubeConfigFor ? { kubeConfigFor } : {}) },
  });
  osb = osbClient(broker.url, CREDENTIALS);
}

beforeAll(async () => {
  root = await createTempDir("exactness-live-");
  const remotes = path.join(root, "remotes");
  await mkdir(remotes);
  remoteDir = path.join(remotes, "remote.git");
  west = await startSisterCluster({ id: "west", sync: "flux", remoteDir, dir: root });
  await createBareRemote(remotes, "remote.git", {
    ...(await sampleCatalogFiles()),
    "registry/clusters/west.yaml": west.registryEntry(),
    [clusterNamespacePath("west")]: namespaceManifest(INSTANCE_NAMESPACE),
  });
  git = await startGitHttpServer({ root: remotes });
  await start();
  plans = await samplePlans(osb);
});
afterAll(async () => {
  await broker?.close();
  await west?.close();
  await git?.close();
  await rm(root, { recursive: true, force: true });
});

const postgresqlRef = (instance: string) => ({ apiVersion: "acid.zalan.do/v1", kind: "postgresql", namespace: INSTANCE_NAMESPACE, name: `pg-${instance}` });

/** Sets the postgresql's PostgresClusterStatus, as the operator would. */
function operatorSays(instance: string, phase: string): void {
  const pg = west.server.store.get(postgresqlRef(instance));
  if (!pg) throw new Error(`postgresql pg-${instance} is not on the cluster`);
  west.server.store.upsert({ ...pg, status: { PostgresClusterStatus: phase } });
}

/** Writes the Kustomization's status as kustomize-controller would. */
function fluxSays(status: Record<string, unknown>): void {
  const k = west.server.store.get(KUSTOMIZATION) as KubeObject;
  west.server.store.upsert({ ...k, status: { ...(k.status as Record<string, unknown>), ...status } });
}

async function lastOperation(instanceId: string, operation?: string): Promise<Record<string, unknown>> {
  const res = await osb.lastOperation(instanceId, operation ? { operation } : undefined);
  expect(res.status).toBe(200);
  return res.body;
}

/** Provisions `id` on the medium (asynchronous) plan and brings it to succeeded. */
async function provisioned(id: string): Promise<string> {
  const res = await osb.provision(id, provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
  expect(res.status).toBe(202);
  const op = res.body.operation as string;
  await west.agent.sync();
  operatorSays(id, "Running");
  await eventually(async () => expect(await lastOperation(id, op)).toMatchObject({ state: "succeeded" }));
  return op;
}

const KUSTOMIZATION = { apiVersion: "kustomize.toolkit.fluxcd.io/v1", kind: "Kustomization", namespace: "flux-system", name: "west" };
const ids = () => ({ service_id: plans.serviceId, plan_id: plans.medium.id });

describe("the first bind after a start", () => {
  it("finds the Secret watch already listed: the watcher starts it with the cluster, not on the first bind", async () => {
    const secrets = () => west.server.requests.filter((r) => r.path === `/api/v1/namespaces/${INSTANCE_NAMESPACE}/secrets` && r.status === 200);
    // No bind yet: only the start of the watcher can have listed them.
    await eventually(async () => expect(secrets().map((r) => r.watch)).toEqual(expect.arrayContaining([false, true])));

    await provisioned("first-bind");
    west.agent.start();
    west.operator.start();
    try {
      const bound = await osb.bind("first-bind", "app-1", { ...ids(), bind_resource: { app_guid: "app" } });
      expect(bound.status).toBe(201);
      expect(bound.body.credentials).toMatchObject({ username: "app-1" });
    } finally {
      await west.agent.stop();
      await west.operator.stop();
    }
  });
});

describe("re-sent requests while their operation is in progress", () => {
  it("an identical PATCH answers 202 with the operation in progress; a different one 422", async () => {
    await provisioned("resent-1");
    const patch = { service_id: plans.serviceId, parameters: { storageGB: 60 } };
    const first = await osb.update("resent-1", patch, { query: ASYNC });
    expect(first.status).toBe(202);
    expect((await lastOperation("resent-1")).state).toBe("in progress");

    const again = await osb.update("resent-1", patch, { query: ASYNC });
    expect({ status: again.status, body: again.body }).toEqual({ status: 202, body: { operation: first.body.operation } });
    const other = await osb.update("resent-1", { service_id: plans.serviceId, parameters: { storageGB: 70 } }, { query: ASYNC });
    expectOsbError(other, 422, /has operation update .* in progress/, "ConcurrencyError");

    await west.agent.sync();
    await eventually(async () => expect(await lastOperation("resent-1", first.body.operation as string)).toMatchObject({ state: "succeeded" }));
    // Completed: the same PATCH again changes nothing.
    expect((await osb.update("resent-1", patch, { query: ASYNC })).status).toBe(200);
  });

  it("an identical DELETE answers 202 with the deletion in progress, 410 once it completed", async () => {
    await provisioned("resent-2");
    const first = await osb.deprovision("resent-2", { ...ids(), ...ASYNC });
    expect(first.status).toBe(202);
    const again = await osb.deprovision("resent-2", { ...ids(), ...ASYNC });
    expect({ status: again.status, body: again.body }).toEqual({ status: 202, body: { operation: first.body.operation } });

    await west.agent.sync();
    await eventually(async () => expect(await lastOperation("resent-2", first.body.operation as string)).toMatchObject({ state: "succeeded" }));
    expectOsbError(await osb.deprovision("resent-2", { ...ids(), ...ASYNC }), 410, /instance resent-2 does not exist/);
  });
});

describe("maximum_polling_duration", () => {
  it("counts from the acknowledgement: a slow push does not shorten the window the platform counts from the 202", async () => {
    await provisioned("slow-1");
    const D = 3600 * 1000; // plan medium
    git.setAvailable(false);
    const sentAt = Date.now();
    const answer = osb.update("slow-1", { service_id: plans.serviceId, parameters: { storageGB: 61 } }, { query: ASYNC });
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    git.setAvailable(true);
    const res = await answer;
    expect(res.status).toBe(202);
    const acknowledgedBy = Date.now();
    const op = res.body.operation as string;
    try {
      // Past receipt + D, before acknowledgement + D: the platform still waits, so must we.
      frozenAt = sentAt + D + 1_500;
      expect(await lastOperation("slow-1", op)).toMatchObject({ state: "in progress" });
      frozenAt = acknowledgedBy + D + 1_000;
      expect(await lastOperation("slow-1", op)).toMatchObject({
        state: "failed",
        description: expect.stringMatching(/^update did not finish within the plan's maximum_polling_duration \(3600 s\)/),
      });
    } finally {
      frozenAt = undefined;
    }
  });
});

describe("Flux's failure reason", () => {
  it("stays in the description while Ready=Unknown after a new commit, until a reconciliation succeeds", async () => {
    // A probe whose commit is applied and which waits for its operator: its description shows
    // when the watcher has seen the Kustomization reconciling.
    const probe = await osb.provision("flux-probe", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
    await west.agent.sync();
    await eventually(async () => expect((await lastOperation("flux-probe", probe.body.operation as string)).description).toBe("PostgreSQL cluster: waiting for the operator"));

    const reason = "kustomize build failed: accumulating resources";
    west.agent.failWith(reason);
    try {
      const res = await osb.provision("flux-fail", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
      const op = res.body.operation as string;
      await west.agent.sync();
      const failing = new RegExp(`^waiting for Flux Kustomization west to apply operation ${op} \\(applied: [0-9a-f]{7}\\); the last sync failed: ReconciliationFailed: ${reason}$`);
      await eventually(async () => expect((await lastOperation("flux-fail", op)).description).toMatch(failing));

      // A new commit: kustomize-controller starts reconciling it (Ready=Unknown, Progressing).
      expect((await osb.provision("flux-next", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC })).status).toBe(202);
      fluxSays({
        conditions: [
          { type: "Reconciling", status: "True", reason: "Progressing", message: "Reconciliation in progress" },
          { type: "Ready", status: "Unknown", reason: "Progressing", message: "Reconciliation in progress" },
        ],
      });
      await eventually(async () =>
        expect((await lastOperation("flux-probe")).description).toBe("waiting for Flux Kustomization west: reconciling (Progressing: Reconciliation in progress)"),
      );
      expect((await lastOperation("flux-fail", op)).description).toMatch(failing);
    } finally {
      west.agent.failWith(undefined);
    }
    await west.agent.sync();
    for (const id of ["flux-probe", "flux-fail", "flux-next"]) operatorSays(id, "Running");
    await eventually(async () => expect((await lastOperation("flux-fail")).state).toBe("succeeded"));
  });
});

describe("Flux with spec.wait: true", () => {
  it("judges each instance by its own objects when the health check of an applied commit fails", async () => {
    const before = west.agent.applied;
    const revision = (sha: string) => `main@sha1:${sha}`;
    /** What kustomize-controller reports when the health check of `attempted` failed. */
    const healthCheckFailed = (attempted: string) =>
      fluxSays({
        ...(before ? { lastAppliedRevision: revision(before) } : { lastAppliedRevision: undefined }),
        lastAttemptedRevision: revision(attempted),
        conditions: [
          { type: "Healthy", status: "False", reason: "HealthCheckFailed", message: "health check failed after 5m0s: timeout waiting for: [postgresql/gitops-broker-instances/pg-wait-bad status: 'InProgress']" },
          { type: "Ready", status: "False", reason: "HealthCheckFailed", message: "health check failed after 5m0s: timeout waiting for: [postgresql/gitops-broker-instances/pg-wait-bad status: 'InProgress']" },
        ],
      });

    const bad = await osb.provision("wait-bad", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
    healthCheckFailed(await west.agent.sync());
    operatorSays("wait-bad", "CreateFailed");
    await eventually(async () =>
      expect(await lastOperation("wait-bad", bad.body.operation as string)).toEqual({
        state: "failed",
        description: "the operator could not create PostgreSQL cluster pg-wait-bad",
      }),
    );

    // A neighbour provisioned after it: Flux keeps failing on wait-bad, never advancing lastAppliedRevision.
    const good = await osb.provision("wait-good", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
    healthCheckFailed(await west.agent.sync());
    operatorSays("wait-good", "Running");
    await eventually(async () =>
      expect(await lastOperation("wait-good", good.body.operation as string)).toEqual({ state: "succeeded", description: "PostgreSQL cluster pg-wait-good is running" }),
    );
  });
});

describe("a restart", () => {
  it("never answers in progress (or 404, or 422) for what was succeeded before it: answers wait for the watcher's view", async () => {
    const op = await provisioned("restart-1");
    west.agent.start();
    west.operator.start();
    try {
      expect((await osb.bind("restart-1", "b-1", { ...ids(), bind_resource: { app_guid: "app" } })).status).toBe(201);

      await broker.close();
      // The restarted watcher cannot reach the cluster until the test lets it.
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      const resolver = createKubeConfigResolver();
      await start(async (ref, cluster) => {
        await gate;
        return resolver(ref, cluster);
      });
      const answers = Promise.all([
        osb.lastOperation("restart-1", { operation: op }),
        osb.getInstance("restart-1"),
        osb.getBinding("restart-1", "b-1"),
        osb.bind("restart-1", "b-2", { ...ids(), bind_resource: { app_guid: "app" } }, { query: ASYNC }),
      ]);
      setTimeout(open, 300);
      const [polled, instance, binding, bound] = await answers;
      expect({ status: polled.status, state: polled.body.state }).toEqual({ status: 200, state: "succeeded" });
      expect(instance.status).toBe(200);
      expect(binding.status).toBe(200);
      expect(binding.body.credentials).toMatchObject({ username: "b-1" });
      expect([201, 202]).toContain(bound.status);
    } finally {
      await west.agent.stop();
      await west.operator.stop();
    }
  });
});

describe("synchronous plans", () => {
  const small = () => ({ service_id: plans.serviceId, plan_id: plans.small.id });

  it("201 means provisioned: the answer waits for the status template to say succeeded", async () => {
    west.agent.start();
    west.operator.start();
    try {
      const res = await osb.provision("sync-1", provisionBody(plans.serviceId, plans.small.id));
      expect(res.status).toBe(201);
      // What the platform does next must agree with the 201.
      expect((await osb.getInstance("sync-1")).status).toBe(200);
      expect(await lastOperation("sync-1")).toMatchObject({ state: "succeeded" });
      expect((await osb.update("sync-1", { ...small(), parameters: { storageGB: 11 } })).status).toBe(200);
      expect(await lastOperation("sync-1")).toMatchObject({ state: "succeeded" });
    } finally {
      await west.agent.stop();
      await west.operator.stop();
    }
  });

  it("a provision that fails on the cluster answers 503, never 201", async () => {
    west.agent.start();
    try {
      const answer = osb.provision("sync-2", provisionBody(plans.serviceId, plans.small.id));
      await eventually(async () => expect(west.server.store.get(postgresqlRef("sync-2"))).toBeDefined());
      operatorSays("sync-2", "CreateFailed");
      const res = await answer;
      expectOsbError(res, 503, /^provision of instance sync-2 is committed but failed on the cluster \(the operator could not create PostgreSQL cluster pg-sync-2\)/);
    } finally {
      await west.agent.stop();
    }
  });
});
