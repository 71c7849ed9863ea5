/**
 * Against a REAL kube-apiserver and etcd (test/support/real-kube.ts; built from their modules):
 * the broker in status mode live with exactly the identity deploy/chart grants (its
 * ServiceAccount, its Roles rendered by Helm itself, a TokenRequest token), on real CRDs (Flux's
 * GitRepository and Kustomization and Argo CD's Application as their modules ship them; a
 * postgresql CRD of ours, see test/support/crds). Flux and the postgres-operator are stand-ins
 * acting through the API (test/support/real-controllers.ts).
 *
 * What the double (test/support/kube-api-server.ts) keeps: injected faults and thousands of
 * objects (test/e2e, src/status-watcher); here: what only a real server can show.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startBroker, type RunningBroker } from "../../src/cli/serve.js";
import { createLogger } from "../../src/log/index.js";
import { clusterNamespacePath, namespaceManifest } from "../../src/repo/index.js";
import { provisionBody, samplePlans, type SamplePlans } from "../broker/helpers.js";
import { CREDENTIALS, testConfig } from "../support/broker-harness.js";
import { createBareRemote, createTempDir, gitLog, pushExternalCommit } from "../support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import { allBlobs } from "../support/git-objects.js";
import { osbClient, type OsbClient } from "../support/osb-client.js";
import { EVENT_CEILING_MS, PROCESS_TEST_TIMEOUT_MS } from "../support/processes.js";
import { argoCdStandIn, credentialsSecretName, fluxStandIn, postgresOperatorStandIn, type AgentStandIn, type PostgresOperatorStandIn } from "../support/real-controllers.js";
import { helmTemplateObjects, startRealKube, type KubeObject, type RealKube } from "../support/real-kube.js";
import { sampleCatalogFiles } from "../support/sister-cluster.js";
import { testTool } from "../support/test-tools.js";

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const eventually = <T>(assertion: () => Promise<T>): Promise<T> => vi.waitFor(assertion, { timeout: EVENT_CEILING_MS, interval: 100 });
const ASYNC = { accepts_incomplete: "true" };
const CHART = path.resolve(import.meta.dirname, "../../deploy/chart");
const OUR_CRDS = path.resolve(import.meta.dirname, "../support/crds");

const INSTANCES = "gitops-broker-instances";
const HOME = "brokers";
const RELEASE = "gb";
const SERVICE_ACCOUNT = "gb-gitops-broker";

let root: string;
let remoteDir: string;
let kube: RealKube;
let git: GitHttpServer;
let broker: RunningBroker;
let osb: OsbClient;
let plans: SamplePlans;
let flux: AgentStandIn;
let argo: ReturnType<typeof argoCdStandIn>;
let operator: PostgresOperatorStandIn;
let token: string;
let kubeconfigPath: string;
/** The provision of db-e on east, made by the nudge test and delivered by Argo CD's stand-in later. */
let eastOperation: string;
const logLines: string[] = [];

/** `helm template` of deploy/chart with these --set values, the objects of these templates only. */
const helmTemplate = (templates: string[], sets: string[]): Promise<KubeObject[]> => helmTemplateObjects(CHART, { release: RELEASE, namespace: HOME, templates, sets });

const CHART_SETS = ["config.git.remote=https://git.example/gitops.git", "rbac.sister.create=true"];

/**
 * The registry entry of a cluster on the real API server: live status through `kubeconfigPath`,
 * nudged by annotation; `west` is synced by Flux, `east` by Argo CD (not schedulable at first: the
 * instances go west).
 */
function clusterEntry(id: "west" | "east", kubeconfigPath: string, schedulable = id === "west"): string {
  const sync = id === "west" ? { kind: "flux", namespace: "flux-system" } : { kind: "argocd", namespace: "argocd" };
  return stringify({
    apiVersion: "gitops-broker.io/v1alpha1",
    kind: "Cluster",
    metadata: { name: id },
    spec: {
      namespace: INSTANCES,
      schedulable,
      kubeconfig: { path: kubeconfigPath },
      status: { mode: "live" },
      sync: { ...sync, name: id, nudge: { via: "annotation" } },
    },
  });
}

beforeAll(async () => {
  root = await createTempDir("real-kube-live-");
  kube = await startRealKube();
  const crds = testTool("crds");
  await kube.installCrds([
    path.join(OUR_CRDS, "postgresqls.acid.zalan.do.yaml"),
    path.join(crds, "source.toolkit.fluxcd.io_gitrepositories.yaml"),
    path.join(crds, "kustomize.toolkit.fluxcd.io_kustomizations.yaml"),
    path.join(crds, "application-crd.yaml"),
  ]);
  for (const name of [INSTANCES, HOME, "flux-system", "argocd"]) await kube.apply({ apiVersion: "v1", kind: "Namespace", metadata: { name } });

  // The broker's identity: the chart's ServiceAccount and RBAC, as Helm renders them.
  for (const object of await helmTemplate(["templates/serviceaccount.yaml", "templates/rbac.yaml"], CHART_SETS)) await kube.apply(object, "helm");
  token = await kube.tokenFor(HOME, SERVICE_ACCOUNT);
  kubeconfigPath = path.join(root, "sister.kubeconfig");
  await writeFile(kubeconfigPath, kube.kubeconfig({ token }), { mode: 0o600 });

  // The sync objects, as their CRDs' schemas accept them.
  await kube.apply({
    apiVersion: "source.toolkit.fluxcd.io/v1",
    kind: "GitRepository",
    metadata: { name: "gitops", namespace: "flux-system" },
    spec: { interval: "1m", url: "https://git.example/gitops.git", ref: { branch: "main" } },
  });
  await kube.apply({
    apiVersion: "kustomize.toolkit.fluxcd.io/v1",
    kind: "Kustomization",
    metadata: { name: "west", namespace: "flux-system" },
    spec: { interval: "10m", path: "./clusters/west", prune: true, sourceRef: { kind: "GitRepository", name: "gitops" } },
  });
  await kube.apply({
    apiVersion: "argoproj.io/v1alpha1",
    kind: "Application",
    metadata: { name: "east", namespace: "argocd" },
    spec: {
      project: "default",
      source: { repoURL: "https://git.example/gitops.git", targetRevision: "main", path: "clusters/east", directory: { recurse: true } },
      destination: { server: "https://kubernetes.default.svc", namespace: INSTANCES },
    },
  });

  const remotes = path.join(root, "remotes");
  await mkdir(remotes);
  remoteDir = path.join(remotes, "remote.git");
  await createBareRemote(remotes, "remote.git", {
    ...(await sampleCatalogFiles()),
    "registry/clusters/west.yaml": clusterEntry("west", kubeconfigPath),
    "registry/clusters/east.yaml": clusterEntry("east", kubeconfigPath),
    [clusterNamespacePath("west")]: namespaceManifest(INSTANCES),
    [clusterNamespacePath("east")]: namespaceManifest(INSTANCES),
  });
  git = await startGitHttpServer({ root: remotes });
  flux = fluxStandIn(kube, { remoteDir, clusterId: "west", name: "west", namespace: "flux-system" });
  argo = argoCdStandIn(kube, { remoteDir, clusterId: "east", name: "east", namespace: "argocd" });
  operator = postgresOperatorStandIn(kube, INSTANCES);

  const config = testConfig(root, "broker", git.url("remote.git"));
  config.status = { ...config.status, mode: "live" };
  config.metrics = { listen: { host: "127.0.0.1", port: 0 } };
  broker = await startBroker(config, {
    version: "test",
    logger: createLogger({ level: "debug", destination: { write: (line: string) => void logLines.push(line) } }),
    // A bind waits this long for its credentials: the deliveries below take about a second.
    status: { bindTimeoutMs: 20_000, settleTimeoutMs: 30_000 },
  });
  osb = osbClient(broker.url, CREDENTIALS);
  plans = await samplePlans(osb);
});

afterAll(async () => {
  await broker?.close();
  await git?.close();
  await kube?.close();
});

async function lastOperation(instanceId: string, operation?: string) {
  const res = await osb.lastOperation(instanceId, operation ? { operation } : undefined);
  expect(res.status).toBe(200);
  return res.body;
}

/** Flux applies the tip, the operator reconciles twice (Creating, then Running). */
async function deliver(): Promise<void> {
  await flux.sync();
  await operator.reconcile();
  await operator.reconcile();
}

async function metric(name: string): Promise<number> {
  const text = await (await fetch(broker.metricsUrl!)).text();
  return text
    .split("\n")
    .filter((line) => line.startsWith(`${name}{`) && line.includes('cluster="west"'))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
}

const secret = async (name: string) => kube.request("GET", `/api/v1/namespaces/${INSTANCES}/secrets/${name}`);
const decoded = (value: unknown) => Buffer.from(String(value), "base64").toString("utf8");

describe("live status on a real kube-apiserver, with the chart's RBAC", () => {
  it("serves version, and the broker's ServiceAccount token authenticates as that account", async () => {
    expect(kube.version).toMatch(/^v1\.\d+\.\d+$/);
    const review = await kube.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" }, { token });
    expect(review.status).toBe(201);
    expect((review.body.status as { userInfo: { username: string } }).userInfo.username).toBe(`system:serviceaccount:${HOME}:${SERVICE_ACCOUNT}`);
  });

  it("provision: in progress until Flux applied the commit and the operator runs the database, then succeeded", async () => {
    const res = await osb.provision("db-1", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
    expect(res.status).toBe(202);
    const op = res.body.operation as string;
    await eventually(async () =>
      expect(await lastOperation("db-1", op)).toEqual({
        state: "in progress",
        description: `waiting for Flux Kustomization west to apply operation ${op} (nothing applied yet)`,
      }),
    );
    await deliver();
    await eventually(async () => expect(await lastOperation("db-1", op)).toEqual({ state: "succeeded", description: "PostgreSQL cluster pg-db-1 is running" }));
    // The object the real API server stored passed the CRD's schema; the status went through its subresource.
    const pg = await kube.request("GET", `/apis/acid.zalan.do/v1/namespaces/${INSTANCES}/postgresqls/pg-db-1`);
    expect(pg.status).toBe(200);
    expect((pg.body.metadata as { labels: Record<string, string> }).labels["app.kubernetes.io/managed-by"]).toBe("gitops-broker");
  });

  it("bind answers 201 with the credentials read from the real Secret", async () => {
    const bind = osb.bind("db-1", "app-1", { service_id: plans.serviceId, plan_id: plans.medium.id, bind_resource: { app_guid: "app-guid-1" } });
    // The bind commits the user into the postgresql; Flux and the operator deliver it while the bind waits.
    await eventually(async () => {
      await deliver();
      expect((await secret(credentialsSecretName("app-1", "pg-db-1"))).status).toBe(200);
    });
    const res = await bind;
    expect(res.status).toBe(201);
    const data = (await secret(credentialsSecretName("app-1", "pg-db-1"))).body.data as { password: string };
    expect(res.body.credentials).toMatchObject({ username: "app-1", password: decoded(data.password) });
  });

  it("nudges: the push annotates the real GitRepository (Flux; its new artifact triggers the Kustomization) and the Application (Argo CD)", async () => {
    const annotations = async (apiPath: string) => ((await kube.request("GET", apiPath)).body.metadata as { annotations?: Record<string, string> }).annotations ?? {};
    const res = await osb.provision("db-2", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
    expect(res.status).toBe(202);
    await broker.nudger.idle();
    await eventually(async () => {
      const ks = await annotations("/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/west");
      const repo = await annotations("/apis/source.toolkit.fluxcd.io/v1/namespaces/flux-system/gitrepositories/gitops");
      expect(Date.parse(repo["reconcile.fluxcd.io/requestedAt"] ?? "")).toBeGreaterThan(0);
      expect(ks["reconcile.fluxcd.io/requestedAt"]).toBeUndefined();
    });
    expect(broker.nudger.stats().west).toMatchObject({ failed: 0 });
    await deliver();
    await eventually(async () => expect(await lastOperation("db-2", res.body.operation as string)).toMatchObject({ state: "succeeded" }));

    // An instance on east (Argo CD): its push refreshes the real Application.
    const application = "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/east";
    expect((await annotations(application))["argocd.argoproj.io/refresh"]).toBeUndefined();
    await pushExternalCommit(remoteDir, { "registry/clusters/east.yaml": clusterEntry("east", kubeconfigPath, true), "registry/clusters/west.yaml": clusterEntry("west", kubeconfigPath, false) }, "registry: schedule on east");
    await broker.writer.refresh();
    const east = await osb.provision("db-e", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
    expect(east.status).toBe(202);
    eastOperation = east.body.operation as string;
    await broker.nudger.idle();
    await eventually(async () => expect((await annotations(application))["argocd.argoproj.io/refresh"]).toBe("normal"));
    expect(broker.nudger.stats().east).toMatchObject({ failed: 0 });
  });

  it("watch resumption: etcd compacted and kube-apiserver killed and restarted under the broker's watches; the broker re-lists and sees what changed meanwhile", async () => {
    const relistsBefore = await metric("gitops_broker_watch_relists_total");
    const body = { service_id: plans.serviceId, plan_id: plans.medium.id, bind_resource: { app_guid: "app-guid-2" } };
    // The bind waits for its credentials (bindTimeoutMs) while the API server goes away and comes back.
    const pending = osb.bind("db-2", "app-2", body, { query: ASYNC });
    // Its commit is on the remote before it waits.
    await eventually(async () => expect((await gitLog(remoteDir))[0]?.message).toContain("app-2"));
    await kube.compactEtcd();
    await kube.restartApiServer();
    // Made while the broker's watches were down: only a re-list (the real server answers 429 while
    // its watch cache fills, then 410 for a resourceVersion older than the compaction) shows it.
    await deliver();
    const res = await pending;
    if (res.status === 202) {
      const op = res.body.operation as string;
      await eventually(async () => expect((await osb.bindingLastOperation("db-2", "app-2", { operation: op })).body).toMatchObject({ state: "succeeded" }));
    } else {
      expect(res.status).toBe(201);
    }
    const fetched = await osb.getBinding("db-2", "app-2");
    const data = (await secret(credentialsSecretName("app-2", "pg-db-2"))).body.data as { password: string };
    expect(fetched.body.credentials).toMatchObject({ username: "app-2", password: decoded(data.password) });
    expect(await metric("gitops_broker_watch_relists_total")).toBeGreaterThan(relistsBefore);
  });

  it("deprovision: succeeded once Flux pruned the objects", async () => {
    const query = { service_id: plans.serviceId, plan_id: plans.medium.id };
    expect((await osb.unbind("db-1", "app-1", query)).status).toBe(200);
    const res = await osb.deprovision("db-1", query, { query: ASYNC });
    expect(res.status).toBe(202);
    await deliver();
    await eventually(async () => expect(await lastOperation("db-1", res.body.operation as string)).toMatchObject({ state: "succeeded" }));
    expect((await kube.request("GET", `/apis/acid.zalan.do/v1/namespaces/${INSTANCES}/postgresqls/pg-db-1`)).status).toBe(404);
  });
});

describe("live status on east (Argo CD), on the Application CRD as Argo CD ships it", () => {
  /** Argo CD syncs the tip, the operator reconciles twice, Argo CD re-assesses the health. */
  async function deliverEast(): Promise<void> {
    await argo.sync();
    await operator.reconcile();
    await operator.reconcile();
    await argo.refresh();
  }

  it("provision: in progress until Argo CD synced the commit and the database runs, then succeeded", async () => {
    // Its watches came back after the API server's restart above (429 while the server's watch
    // cache filled, then 410 and a re-list).
    await eventually(async () =>
      expect(await lastOperation("db-e", eastOperation)).toEqual({
        state: "in progress",
        description: `waiting for Argo CD application east to apply operation ${eastOperation} (nothing applied yet)`,
      }),
    );
    await deliverEast();
    await eventually(async () => expect(await lastOperation("db-e", eastOperation)).toEqual({ state: "succeeded", description: "PostgreSQL cluster pg-db-e is running" }));
  });

  it("bind with credentials, unbind and deprovision: succeeded once Argo CD pruned the objects", async () => {
    const query = { service_id: plans.serviceId, plan_id: plans.medium.id };
    const bind = osb.bind("db-e", "app-e", { ...query, bind_resource: { app_guid: "app-guid-e" } });
    await eventually(async () => {
      await deliverEast();
      expect((await secret(credentialsSecretName("app-e", "pg-db-e"))).status).toBe(200);
    });
    const res = await bind;
    expect(res.status).toBe(201);
    const data = (await secret(credentialsSecretName("app-e", "pg-db-e"))).body.data as { password: string };
    expect(res.body.credentials).toMatchObject({ username: "app-e", password: decoded(data.password) });

    expect((await osb.unbind("db-e", "app-e", query)).status).toBe(200);
    const gone = await osb.deprovision("db-e", query, { query: ASYNC });
    expect(gone.status).toBe(202);
    await deliverEast();
    await eventually(async () => expect(await lastOperation("db-e", gone.body.operation as string)).toMatchObject({ state: "succeeded" }));
    expect((await kube.request("GET", `/apis/acid.zalan.do/v1/namespaces/${INSTANCES}/postgresqls/pg-db-e`)).status).toBe(404);
  });
});

describe("the chart's RBAC refuses what the broker must not do", () => {
  const as = (method: string, apiPath: string, body?: unknown) => kube.request(method, apiPath, body, { token });

  it.each([
    ["create a Secret in the instance namespace", "POST", `/api/v1/namespaces/${INSTANCES}/secrets`, { apiVersion: "v1", kind: "Secret", metadata: { name: "x" } }],
    ["read a Secret by name in the instance namespace (list and watch only)", "GET", `/api/v1/namespaces/${INSTANCES}/secrets/${credentialsSecretName("app-2", "pg-db-2")}`, undefined],
    ["list Secrets in another namespace", "GET", "/api/v1/namespaces/flux-system/secrets", undefined],
    ["list Secrets of every namespace", "GET", "/api/v1/secrets", undefined],
    ["delete a postgresql", "DELETE", `/apis/acid.zalan.do/v1/namespaces/${INSTANCES}/postgresqls/pg-db-2`, undefined],
    ["patch a postgresql", "PATCH", `/apis/acid.zalan.do/v1/namespaces/${INSTANCES}/postgresqls/pg-db-2`, { metadata: { labels: { x: "y" } } }],
    ["delete the Kustomization", "DELETE", "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/west", undefined],
    ["patch the Kustomization's status", "PATCH", "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/west/status", { status: {} }],
    ["delete the Application", "DELETE", "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/east", undefined],
    ["create a Namespace", "POST", "/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: "x" } }],
  ])("refuses to %s", async (_what, method, apiPath, body) => {
    const res = await as(method, apiPath, body === undefined ? undefined : body);
    expect(res.status).toBe(403);
    expect(res.body.reason).toBe("Forbidden");
  });

  it("grants get on Secrets of the broker's own namespace (secretRefs), nothing else there", async () => {
    await kube.apply({ apiVersion: "v1", kind: "Secret", metadata: { name: "sister-kubeconfig", namespace: HOME }, stringData: { kubeconfig: "x" } });
    expect((await as("GET", `/api/v1/namespaces/${HOME}/secrets/sister-kubeconfig`)).status).toBe(200);
    expect((await as("GET", `/api/v1/namespaces/${HOME}/secrets`)).status).toBe(403);
    expect((await as("DELETE", `/api/v1/namespaces/${HOME}/secrets/sister-kubeconfig`)).status).toBe(403);
  });
});

describe("credentials never reach Git", () => {
  it("no object of the remote's history holds a password the operator made", async () => {
    expect(operator.passwords.length).toBeGreaterThanOrEqual(2);
    const blobs = await allBlobs(remoteDir);
    for (const password of operator.passwords) {
      for (const form of [password, Buffer.from(password).toString("base64")]) expect(blobs.filter((b) => b.data.includes(form)).map((b) => b.oid)).toEqual([]);
    }
  });
});
