/**
 * Never a wrong OSB answer in status.mode live (ADR 0012), the cases a cluster synced by Argo CD
 * and asynchronous bindings add: the real broker on a smart-HTTP remote and a sister cluster
 * synced by an Argo CD double, driven step by step (the test syncs and plays the operator), so
 * every answer is asked for while an operation is exactly where the case needs it.
 */
import { mkdir, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startBroker, type RunningBroker } from "../../src/cli/serve.js";
import { clusterNamespacePath, namespaceManifest } from "../../src/repo/index.js";
import { silentLogger } from "../../src/log/index.js";
import { expectOsbError, provisionBody, samplePlans, type SamplePlans } from "../broker/helpers.js";
import { CREDENTIALS, testConfig } from "../support/broker-harness.js";
import { createBareRemote, createTempDir } from "../support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import { osbClient, type OsbClient } from "../support/osb-client.js";
import { EVENT_CEILING_MS } from "../support/processes.js";
import { INSTANCE_NAMESPACE, sampleCatalogFiles, startSisterCluster, type SisterCluster } from "../support/sister-cluster.js";

const eventually = <T>(assertion: () => Promise<T>): Promise<T> => vi.waitFor(assertion, { timeout: EVENT_CEILING_MS, interval: 50 });
const ASYNC = { accepts_incomplete: "true" };
/** The sample medium plan with asynchronous bindings (manager.asyncBinding: true). */
const ASYNC_BIND_PLAN = { id: "8d0b6f3e-2c1a-4a55-9a3e-6f1d2b7c4e90", name: "medium-async-bind" };
/** The sample medium plan without sources and status templates: judged by Argo CD's health. */
const NO_STATUS_PLAN = { id: "5a2c9e71-0b4d-4f6e-8c3a-9d7e1f2b6a04", name: "medium-no-status" };

let root: string;
let git: GitHttpServer;
let east: SisterCluster;
let broker: RunningBroker;
let osb: OsbClient;
let plans: SamplePlans;

const mediumPlan = () => readFile(fileURLToPath(new URL("../../examples/catalog/postgresql/plans/medium.yaml", import.meta.url)), "utf8");

async function asyncBindPlanFile(): Promise<string> {
  const plan = (await mediumPlan())
    .replaceAll("3e517a96-85f4-42fe-b798-a84ba877f984", ASYNC_BIND_PLAN.id)
    .replace("name: medium", `name: ${ASYNC_BIND_PLAN.name}`)
    .replace("asyncBinding: false", "asyncBinding: true");
  if (!plan.includes("asyncBinding: true")) throw new Error("the sample medium plan no longer says asyncBinding: false");
  return plan;
}

async function noStatusPlanFile(): Promise<string> {
  const medium = (await mediumPlan()).replaceAll("3e517a96-85f4-42fe-b798-a84ba877f984", NO_STATUS_PLAN.id).replace("name: medium", `name: ${NO_STATUS_PLAN.name}`);
  const cut = medium.indexOf("  - action: sources");
  if (cut < 0) throw new Error("the sample medium plan no longer lists its sources template");
  return medium.slice(0, cut);
}

beforeAll(async () => {
  root = await createTempDir("exactness-argocd-");
  const remotes = path.join(root, "remotes");
  await mkdir(remotes);
  const remoteDir = path.join(remotes, "remote.git");
  // Argo CD with controller.resource.health.persist=true: the health of each resource in the Application.
  east = await startSisterCluster({ id: "east", sync: "argocd", remoteDir, dir: root, agent: { persistResourceHealth: true } });
  await createBareRemote(remotes, "remote.git", {
    ...(await sampleCatalogFiles()),
    "catalog/postgresql/plans/medium-async-bind.yaml": await asyncBindPlanFile(),
    "catalog/postgresql/plans/medium-no-status.yaml": await noStatusPlanFile(),
    "registry/clusters/east.yaml": east.registryEntry(),
    [clusterNamespacePath("east")]: namespaceManifest(INSTANCE_NAMESPACE),
  });
  git = await startGitHttpServer({ root: remotes });
  const config = testConfig(root, "broker", git.url("remote.git"));
  config.status = { ...config.status, mode: "live" };
  broker = await startBroker(config, { version: "test", logger: silentLogger(), status: { bindTimeoutMs: 20_000, settleTimeoutMs: 60_000 } });
  osb = osbClient(broker.url, CREDENTIALS);
  plans = await samplePlans(osb);
});
afterAll(async () => {
  await broker?.close();
  await east?.close();
  await git?.close();
  await rm(root, { recursive: true, force: true });
});

const postgresqlRef = (instance: string) => ({ apiVersion: "acid.zalan.do/v1", kind: "postgresql", namespace: INSTANCE_NAMESPACE, name: `pg-${instance}` });

/** Sets the postgresql's PostgresClusterStatus, as the operator would. */
function operatorSays(instance: string, phase: string): void {
  const pg = east.server.store.get(postgresqlRef(instance));
  if (!pg) throw new Error(`postgresql pg-${instance} is not on the cluster`);
  east.server.store.upsert({ ...pg, status: { PostgresClusterStatus: phase } });
}

async function lastOperation(instanceId: string, operation?: string): Promise<Record<string, unknown>> {
  const res = await osb.lastOperation(instanceId, operation ? { operation } : undefined);
  expect(res.status).toBe(200);
  return res.body;
}

async function bindingLastOperation(instanceId: string, bindingId: string, operation: string): Promise<Record<string, unknown>> {
  const res = await osb.bindingLastOperation(instanceId, bindingId, { operation });
  expect(res.status).toBe(200);
  return res.body;
}

/** Provisions `id` on `planId` (asynchronous) and brings it to succeeded. */
async function provisioned(id: string, planId: string): Promise<string> {
  const res = await osb.provision(id, provisionBody(plans.serviceId, planId), { query: ASYNC });
  expect(res.status).toBe(202);
  const op = res.body.operation as string;
  await east.agent.sync();
  east.operator.reconcile();
  east.operator.reconcile();
  await eventually(async () => expect(await lastOperation(id, op)).toMatchObject({ state: "succeeded" }));
  return op;
}

describe("re-sent bind and unbind of a plan with asynchronous bindings", () => {
  const ids = { service_id: "", plan_id: ASYNC_BIND_PLAN.id };
  const bindBody = () => ({ service_id: plans.serviceId, plan_id: ASYNC_BIND_PLAN.id, bind_resource: { app_guid: "app" } });

  it("an identical PUT while the bind is in progress answers 202 with its operation", async () => {
    ids.service_id = plans.serviceId;
    await provisioned("bind-resent", ASYNC_BIND_PLAN.id);
    const first = await osb.bind("bind-resent", "b-1", bindBody(), { query: ASYNC });
    expect(first.status).toBe(202);
    const again = await osb.bind("bind-resent", "b-1", bindBody(), { query: ASYNC });
    expect({ status: again.status, body: again.body }).toEqual({ status: 202, body: { operation: first.body.operation } });

    await east.agent.sync();
    east.operator.reconcile();
    await eventually(async () => expect(await bindingLastOperation("bind-resent", "b-1", first.body.operation as string)).toMatchObject({ state: "succeeded" }));
    // Done: the same PUT answers the binding.
    const done = await osb.bind("bind-resent", "b-1", bindBody(), { query: ASYNC });
    expect(done.status).toBe(200);
    expect(done.body.credentials).toMatchObject({ username: "b-1" });
  });

  it("an identical DELETE while the unbind is in progress answers 202 with its operation; 410 once it completed or never existed", async () => {
    ids.service_id = plans.serviceId;
    await provisioned("unbind-resent", ASYNC_BIND_PLAN.id);
    const bound = await osb.bind("unbind-resent", "b-1", bindBody(), { query: ASYNC });
    expect(bound.status).toBe(202);
    await east.agent.sync();
    east.operator.reconcile();
    await eventually(async () => expect(await bindingLastOperation("unbind-resent", "b-1", bound.body.operation as string)).toMatchObject({ state: "succeeded" }));

    const first = await osb.unbind("unbind-resent", "b-1", { ...ids, ...ASYNC });
    expect(first.status).toBe(202);
    const unbindOp = first.body.operation as string;
    expect(await bindingLastOperation("unbind-resent", "b-1", unbindOp)).toMatchObject({ state: "in progress" });

    const again = await osb.unbind("unbind-resent", "b-1", { ...ids, ...ASYNC });
    expect({ status: again.status, body: again.body }).toEqual({ status: 202, body: { operation: unbindOp } });
    // Still the plan's rule: asynchronous unbinding needs accepts_incomplete.
    expectOsbError(await osb.unbind("unbind-resent", "b-1", ids), 422, /asynchronous/, "AsyncRequired");

    await east.agent.sync();
    east.operator.reconcile();
    await eventually(async () => expect(await bindingLastOperation("unbind-resent", "b-1", unbindOp)).toMatchObject({ state: "succeeded" }));
    expectOsbError(await osb.unbind("unbind-resent", "b-1", { ...ids, ...ASYNC }), 410, /binding b-1 of instance unbind-resent does not exist/);
    expectOsbError(await osb.unbind("unbind-resent", "never", { ...ids, ...ASYNC }), 410, /binding never of instance unbind-resent does not exist/);
  });
});

describe("Argo CD's failure reason", () => {
  it("stays in the description while the next sync runs (a new operationState: Running, no message), until a sync succeeds", async () => {
    // A probe whose commit is applied and which waits for its operator: its description shows
    // when the watcher has seen the sync running.
    const probe = await osb.provision("argo-probe", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
    await east.agent.sync();
    await eventually(async () => expect((await lastOperation("argo-probe", probe.body.operation as string)).description).toBe("PostgreSQL cluster: waiting for the operator"));

    const reason = "one or more synchronization tasks are not valid: the server could not find the requested resource";
    east.agent.failWith(reason);
    const release = east.agent.hold();
    try {
      const res = await osb.provision("argo-fail", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
      const op = res.body.operation as string;
      const first = east.agent.sync();
      await eventually(async () => expect((await lastOperation("argo-probe")).description).toBe("waiting for Argo CD application east: a sync is running"));
      release();
      await first;
      const failing = new RegExp(`^waiting for Argo CD application east to apply operation ${op} \\(applied: [0-9a-f]{7}\\); the last sync failed: ${reason}$`);
      await eventually(async () => expect((await lastOperation("argo-fail", op)).description).toMatch(failing));

      // A new commit: auto-sync starts a new operation, which replaces operationState (Running, no message).
      expect((await osb.provision("argo-next", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC })).status).toBe(202);
      const next = east.agent.hold();
      const second = east.agent.sync();
      try {
        await eventually(async () => expect((await lastOperation("argo-probe")).description).toBe("waiting for Argo CD application east: a sync is running"));
        expect((await lastOperation("argo-fail", op)).description).toMatch(failing);
      } finally {
        next();
        await second;
      }
    } finally {
      release();
      east.agent.failWith(undefined);
    }
    await east.agent.sync();
    for (const id of ["argo-probe", "argo-fail", "argo-next"]) operatorSays(id, "Running");
    await eventually(async () => expect((await lastOperation("argo-fail")).state).toBe("succeeded"));
  });
});

describe("Argo CD: each instance is judged by its own objects", () => {
  it("a sync that failed on one instance's object still applied its neighbours' (status.resources[] says Synced)", async () => {
    const denied = 'admission webhook "postgresql.acid.zalan.do" denied the request: spec.volume.size must not shrink';
    east.agent.rejectWith((o) => (o.metadata.name === "pg-reject-bad" ? denied : undefined));
    try {
      const bad = await osb.provision("reject-bad", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
      await east.agent.sync();
      const own = new RegExp(
        `^waiting for Argo CD application east to apply operation ${String(bad.body.operation)} \\(applied: [0-9a-f]{7}\\): acid.zalan.do/postgresql/pg-reject-bad not synced to [0-9a-f]{7}; the last sync failed: one or more objects failed to apply, reason: ${denied.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`,
      );
      await eventually(async () => expect((await lastOperation("reject-bad", bad.body.operation as string)).description).toMatch(own));

      // A neighbour provisioned after it: every sync keeps failing on reject-bad.
      const good = await osb.provision("reject-good", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
      await east.agent.sync();
      operatorSays("reject-good", "Running");
      await eventually(async () =>
        expect(await lastOperation("reject-good", good.body.operation as string)).toEqual({ state: "succeeded", description: "PostgreSQL cluster pg-reject-good is running" }),
      );
      // The failing one is not hidden either: its own object and the reason.
      await eventually(async () => expect((await lastOperation("reject-bad", bad.body.operation as string)).description).toMatch(own));
    } finally {
      east.agent.rejectWith(undefined);
    }
    await east.agent.sync();
    operatorSays("reject-bad", "Running");
    await eventually(async () => expect((await lastOperation("reject-bad")).state).toBe("succeeded"));
  });

  it("without a status template, an instance whose operator fails does not hold back its neighbours (health per resource)", async () => {
    const bad = await osb.provision("health-bad", provisionBody(plans.serviceId, NO_STATUS_PLAN.id), { query: ASYNC });
    await east.agent.sync();
    operatorSays("health-bad", "CreateFailed");
    await east.agent.sync(); // a refresh: Argo CD re-assesses health (Degraded: the application's too)
    await eventually(async () =>
      expect((await lastOperation("health-bad", bad.body.operation as string)).description).toMatch(
        /^provision applied by Argo CD application east at [0-9a-f]{7}; waiting for it to report healthy \(health of its objects Degraded\)$/,
      ),
    );

    const good = await osb.provision("health-good", provisionBody(plans.serviceId, NO_STATUS_PLAN.id), { query: ASYNC });
    await east.agent.sync();
    operatorSays("health-good", "Running");
    await east.agent.sync();
    await eventually(async () =>
      expect(await lastOperation("health-good", good.body.operation as string)).toEqual({
        state: "succeeded",
        description: expect.stringMatching(/^provision applied by Argo CD application east at [0-9a-f]{7}, health of its objects Healthy$/),
      }),
    );
    const app = east.server.store.get({ apiVersion: "argoproj.io/v1alpha1", kind: "Application", namespace: "argocd", name: "east" });
    expect((app?.status as { health?: { status?: string } }).health?.status).toBe("Degraded");
  });
});
