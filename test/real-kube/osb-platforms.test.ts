/**
 * OSB 2.17 as platforms use it, in live mode against a REAL kube-apiserver and etcd
 * (test/support/real-kube.ts): binding rotation gives the successor credentials of its own, read
 * from the operator's real Secret, while the predecessor's keep working until it is unbound (ADR
 * 0033); a provision or bind the platform abandons after its commit and then deletes leaves
 * nothing on the cluster or in Git (ADR 0034). Flux and the postgres-operator are the stand-ins
 * of test/support/real-controllers.ts, acting through the API.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startBroker, type RunningBroker } from "../../src/cli/serve.js";
import { silentLogger } from "../../src/log/index.js";
import { bindingRecordPath, clusterNamespacePath, instanceManifestDir, instanceRecordPath, namespaceManifest } from "../../src/repo/index.js";
import { provisionBody, remoteFiles, samplePlans, type SamplePlans } from "../broker/helpers.js";
import { CREDENTIALS, testConfig } from "../support/broker-harness.js";
import { createBareRemote, createTempDir, gitLog, readRemoteFile } from "../support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import { osbClient, type OsbClient } from "../support/osb-client.js";
import { EVENT_CEILING_MS, PROCESS_TEST_TIMEOUT_MS } from "../support/processes.js";
import { credentialsSecretName, fluxStandIn, postgresOperatorStandIn, type AgentStandIn, type PostgresOperatorStandIn } from "../support/real-controllers.js";
import { startRealKube, type RealKube } from "../support/real-kube.js";
import { sampleCatalogFiles } from "../support/sister-cluster.js";
import { testTool } from "../support/test-tools.js";

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const eventually = <T>(assertion: () => Promise<T>): Promise<T> => vi.waitFor(assertion, { timeout: EVENT_CEILING_MS, interval: 100 });
const ASYNC = { accepts_incomplete: "true" };
const CRDS = path.resolve(import.meta.dirname, "../support/crds");
const INSTANCES = "gitops-broker-instances";

let root: string;
let remoteDir: string;
let kube: RealKube;
let git: GitHttpServer;
let broker: RunningBroker;
let osb: OsbClient;
let plans: SamplePlans;
let flux: AgentStandIn;
let operator: PostgresOperatorStandIn;

beforeAll(async () => {
  root = await createTempDir("real-kube-osb-");
  kube = await startRealKube();
  await kube.installCrds([
    path.join(CRDS, "postgresqls.acid.zalan.do.yaml"),
    path.join(testTool("crds"), "source.toolkit.fluxcd.io_gitrepositories.yaml"),
    path.join(testTool("crds"), "kustomize.toolkit.fluxcd.io_kustomizations.yaml"),
  ]);
  for (const name of [INSTANCES, "flux-system"]) await kube.apply({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
  await kube.apply({
    apiVersion: "kustomize.toolkit.fluxcd.io/v1",
    kind: "Kustomization",
    metadata: { name: "west", namespace: "flux-system" },
    spec: { interval: "10m", path: "./clusters/west", prune: true, sourceRef: { kind: "GitRepository", name: "gitops" } },
  });
  const kubeconfigPath = path.join(root, "west.kubeconfig");
  await writeFile(kubeconfigPath, kube.kubeconfig(), { mode: 0o600 });

  const remotes = path.join(root, "remotes");
  await mkdir(remotes);
  remoteDir = path.join(remotes, "remote.git");
  await createBareRemote(remotes, "remote.git", {
    ...(await sampleCatalogFiles()),
    "registry/clusters/west.yaml": stringify({
      apiVersion: "gitops-broker.io/v1alpha1",
      kind: "Cluster",
      metadata: { name: "west" },
      spec: { namespace: INSTANCES, kubeconfig: { path: kubeconfigPath }, status: { mode: "live" }, sync: { kind: "flux", namespace: "flux-system", name: "west" } },
    }),
    [clusterNamespacePath("west")]: namespaceManifest(INSTANCES),
  });
  git = await startGitHttpServer({ root: remotes });
  flux = fluxStandIn(kube, { remoteDir, clusterId: "west", name: "west", namespace: "flux-system" });
  operator = postgresOperatorStandIn(kube, INSTANCES);

  const config = testConfig(root, "broker", git.url("remote.git"));
  config.status = { ...config.status, mode: "live" };
  // A synchronous bind waits this long for its credentials while the test delivers the commit.
  broker = await startBroker(config, { version: "test", logger: silentLogger(), status: { bindTimeoutMs: 30_000, settleTimeoutMs: 30_000 } });
  osb = osbClient(broker.url, CREDENTIALS);
  plans = await samplePlans(osb);
});

afterAll(async () => {
  await broker?.close();
  await git?.close();
  await kube?.close();
});

/** Flux applies the tip (and prunes), the operator reconciles twice (Creating, then Running; users and their Secrets). */
async function deliver(): Promise<void> {
  await flux.sync();
  await operator.reconcile();
  await operator.reconcile();
}

const secret = (name: string) => kube.request("GET", `/api/v1/namespaces/${INSTANCES}/secrets/${name}`);
const decoded = (value: unknown) => Buffer.from(String(value), "base64").toString("utf8");
const postgresql = (name: string) => kube.request("GET", `/apis/acid.zalan.do/v1/namespaces/${INSTANCES}/postgresqls/${name}`);

/** A synchronous bind, delivered while it waits for its credentials; its answer. */
async function boundWhileDelivering(instanceId: string, bindingId: string, body: Record<string, unknown>) {
  const pending = osb.bind(instanceId, bindingId, body);
  await eventually(async () => {
    await deliver();
    expect((await secret(credentialsSecretName(bindingId, `pg-${instanceId}`))).status).toBe(200);
  });
  return pending;
}

/** The platform's request, given up (connection closed) once its commit is on the remote. */
async function abandonedAfterCommit(method: string, urlPath: string, body: unknown, subject: string): Promise<void> {
  const controller = new AbortController();
  const request = osb.call(method, urlPath, body, { signal: controller.signal }).then(
    (res) => `answered ${res.status}`,
    (error: unknown) => (error as Error).name,
  );
  // Committed, and held: the answer of a synchronous plan waits for the cluster.
  await eventually(async () => expect((await gitLog(remoteDir)).map((c) => c.subject)).toContain(subject));
  controller.abort();
  expect(await request).toBe("AbortError");
}

describe("binding rotation in live mode", () => {
  const id = "rot-live";
  const ids = () => ({ service_id: plans.serviceId, plan_id: plans.medium.id });
  let old: { username: string; password: string };

  it("provisions and binds with the credentials of the operator's Secret", async () => {
    const res = await osb.provision(id, provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
    expect(res.status).toBe(202);
    await deliver();
    await eventually(async () => expect((await osb.lastOperation(id, { operation: res.body.operation as string })).body).toMatchObject({ state: "succeeded" }));
    const bound = await boundWhileDelivering(id, "app-old", { ...ids(), bind_resource: { app_guid: "app-guid-1" } });
    expect(bound.status).toBe(201);
    old = bound.body.credentials as { username: string; password: string };
    const data = (await secret(credentialsSecretName("app-old", `pg-${id}`))).body.data as { password: string };
    expect(old).toMatchObject({ username: "app-old", password: decoded(data.password) });
  });

  it("rotates: the successor's credentials differ, the predecessor's keep working until it is unbound", async () => {
    const rotated = await boundWhileDelivering(id, "app-new", { ...ids(), predecessor_binding_id: "app-old" });
    expect(rotated.status).toBe(201);
    const fresh = rotated.body.credentials as { username: string; password: string };
    const data = (await secret(credentialsSecretName("app-new", `pg-${id}`))).body.data as { password: string };
    expect(fresh).toMatchObject({ username: "app-new", password: decoded(data.password) });
    expect(fresh.username).not.toBe(old.username);
    expect(fresh.password).not.toBe(old.password);
    expect(rotated.body.metadata).toMatchObject({ expires_at: expect.any(String), renew_before: expect.any(String) });
    const [commit] = await gitLog(remoteDir);
    expect(commit?.subject).toBe(`bind postgresql/medium instance ${id} binding app-new, successor of app-old`);
    expect(commit?.message).toContain("\nPredecessor-Binding-Id: app-old\n");

    // Both work in parallel: the predecessor's user and Secret are still there, GET answers them.
    expect((await osb.getBinding(id, "app-old")).body.credentials).toEqual(old);
    const users = ((await postgresql(`pg-${id}`)).body.spec as { users: Record<string, unknown> }).users;
    expect(Object.keys(users).sort()).toEqual(["app-new", "app-old", "app_owner"]);

    // The platform unbinds the predecessor: its user and Secret go, the successor's stay.
    expect((await osb.unbind(id, "app-old", ids())).status).toBe(200);
    await eventually(async () => {
      await deliver();
      expect((await secret(credentialsSecretName("app-old", `pg-${id}`))).status).toBe(404);
    });
    expect((await osb.getBinding(id, "app-old")).status).toBe(404);
    expect((await osb.getBinding(id, "app-new")).body.credentials).toEqual(fresh);
    expect((await secret(credentialsSecretName("app-new", `pg-${id}`))).status).toBe(200);
  });

  it("a bind abandoned after its commit and then unbound leaves no user, no Secret", async () => {
    await abandonedAfterCommit("PUT", `/v2/service_instances/${id}/service_bindings/app-lost`, ids(), `bind postgresql/medium instance ${id} binding app-lost`);
    expect((await osb.unbind(id, "app-lost", ids())).status).toBe(200);
    await deliver();
    const users = ((await postgresql(`pg-${id}`)).body.spec as { users: Record<string, unknown> }).users;
    expect(Object.keys(users).sort()).toEqual(["app-new", "app_owner"]);
    expect((await secret(credentialsSecretName("app-lost", `pg-${id}`))).status).toBe(404);
    expect((await readRemoteFile(remoteDir, "main", bindingRecordPath(id, "app-lost"))) ?? "").toContain("deleted: true");
  });
});

describe("orphan mitigation in live mode", () => {
  it("a synchronous provision abandoned after its commit (applied meanwhile) and then deleted leaves nothing on the cluster or in Git", async () => {
    const id = "orphan-live";
    const ids = { service_id: plans.serviceId, plan_id: plans.small.id };
    await abandonedAfterCommit("PUT", `/v2/service_instances/${id}`, provisionBody(plans.serviceId, plans.small.id), `provision postgresql/small instance ${id}`);
    // Flux applied it meanwhile: the operator made the database, its Service and Secret.
    await deliver();
    expect((await postgresql(`pg-${id}`)).status).toBe(200);
    expect((await secret(credentialsSecretName("app_owner", `pg-${id}`))).status).toBe(200);

    // The platform's orphan mitigation: a synchronous DELETE, answered once the objects are gone.
    const deleting = osb.deprovision(id, ids);
    await eventually(async () => expect((await gitLog(remoteDir))[0]?.subject).toBe(`deprovision postgresql/small instance ${id}`));
    await deliver();
    const deleted = await deleting;
    expect({ status: deleted.status, body: deleted.body }).toEqual({ status: 200, body: {} });

    expect((await postgresql(`pg-${id}`)).status).toBe(404);
    for (const kind of ["secrets", "services"]) {
      const left = await kube.request("GET", `/api/v1/namespaces/${INSTANCES}/${kind}?labelSelector=cluster-name%3Dpg-${id}`);
      expect({ kind, items: left.body.items }).toEqual({ kind, items: [] });
    }
    expect(await remoteFiles(remoteDir, instanceManifestDir("west", id))).toEqual([]);
    expect((await readRemoteFile(remoteDir, "main", instanceRecordPath(id))) ?? "").toContain("deleted: true");
  });
});
