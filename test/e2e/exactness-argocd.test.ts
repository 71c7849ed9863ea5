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

let root: string;
let git: GitHttpServer;
let east: SisterCluster;
let broker: RunningBroker;
let osb: OsbClient;
let plans: SamplePlans;

async function asyncBindPlanFile(): Promise<string> {
  const medium = await readFile(fileURLToPath(new URL("../../examples/catalog/postgresql/plans/medium.yaml", import.meta.url)), "utf8");
  const plan = medium
    .replaceAll("3e517a96-85f4-42fe-b798-a84ba877f984", ASYNC_BIND_PLAN.id)
    .replace("name: medium", `name: ${ASYNC_BIND_PLAN.name}`)
    .replace("asyncBinding: false", "asyncBinding: true");
  if (!plan.includes("asyncBinding: true")) throw new Error("the sample medium plan no longer says asyncBinding: false");
  return plan;
}

beforeAll(async () => {
  root = await createTempDir("exactness-argocd-");
  const remotes = path.join(root, "remotes");
  await mkdir(remotes);
  const remoteDir = path.join(remotes, "remote.git");
  east = await startSisterCluster({ id: "east", sync: "argocd", remoteDir, dir: root });
  await createBareRemote(remotes, "remote.git", {
    ...(await sampleCatalogFiles()),
    "catalog/postgresql/plans/medium-async-bind.yaml": await asyncBindPlanFile(),
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
