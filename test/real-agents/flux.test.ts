/**
 * End to end with REAL Flux (ADR 0035): source-controller and kustomize-controller built from
 * their modules, running as processes against a real kube-apiserver and etcd, fetching the
 * broker's remote over smart HTTP on loopback, as a cluster fetches from a Git host. The Flux
 * objects are examples/flux as a user applies them (only the repository URLs and the Git
 * credentials substituted): sparse-checkout.yaml, the layout without source-watcher, whose module
 * the proxy refuses, and gitrepository.yaml. The broker runs in status mode live, so every answer
 * below comes from the real Kustomization and the objects kustomize-controller applied.
 *
 * Stand-ins left: the postgres-operator (test/support/real-controllers.ts; its module is not
 * served either) and notification-controller's Receiver (test/support/flux-receiver.ts).
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { RunningBroker } from "../../src/cli/serve.js";
import { createLogger } from "../../src/log/index.js";
import { provisionBody, type SamplePlans } from "../broker/helpers.js";
import { createTempDir, pushExternalCommit, remoteHead } from "../support/git-fixtures.js";
import type { GitHttpServer } from "../support/git-http-server.js";
import { startFluxReceiver, type FluxReceiver, type ReceiverSpec } from "../support/flux-receiver.js";
import type { OsbClient } from "../support/osb-client.js";
import { PROCESS_TEST_TIMEOUT_MS } from "../support/processes.js";
import { credentialsSecretName, postgresOperatorStandIn, startOperatorLoop, type OperatorLoop } from "../support/real-controllers.js";
import { exampleObjects, fluxCrdFiles, fluxReady, gitCredentialsSecret, startFlux, type RealFlux } from "../support/real-flux.js";
import { startRealKube, type KubeObject, type RealKube } from "../support/real-kube.js";
import { operationWaits, eventually } from "./operations.js";
import { startLiveBroker, startRemotes } from "./remotes.js";

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const ASYNC = { accepts_incomplete: "true" };
const INSTANCES = "gitops-broker-instances";
const OUR_CRDS = path.resolve(import.meta.dirname, "../support/crds");
/** The names examples/flux/sparse-checkout.yaml gives the cluster `local`'s objects. */
const SOURCE = "/apis/source.toolkit.fluxcd.io/v1/namespaces/flux-system/gitrepositories/gitops-broker-local";
const KUSTOMIZATION = "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/gitops-broker-local";
const RECEIVER_TOKEN = "receiver-token-of-the-test";
/** A plan whose postgresql the API server refuses (numberOfInstances must be an integer), failed after 40 s. */
const BROKEN_PLAN_ID = "7d0c6f8e-2a35-4c1b-9a52-3e0f4b6d1c27";

let root: string;
let remoteDir: string;
let kube: RealKube;
let flux: RealFlux;
let git: GitHttpServer;
let broker: RunningBroker;
let osb: OsbClient;
let plans: SamplePlans;
let operator: OperatorLoop;
let receiver: FluxReceiver;
let kubeconfigPath: string;
let receiverTokenPath: string;
const logLines: string[] = [];

/** registry/clusters/local.yaml: live status through the admin kubeconfig, synced by the Kustomization of sparse-checkout.yaml. */
function localEntry(nudge: Record<string, unknown> | undefined): string {
  return stringify({
    apiVersion: "gitops-broker.io/v1alpha1",
    kind: "Cluster",
    metadata: { name: "local" },
    spec: {
      namespace: INSTANCES,
      kubeconfig: { path: kubeconfigPath },
      status: { mode: "live" },
      sync: { kind: "flux", name: "gitops-broker-local", namespace: "flux-system", ...(nudge ? { nudge } : {}) },
    },
  });
}


const get = async (apiPath: string) => (await kube.request("GET", apiPath)).body as KubeObject & { status?: Record<string, unknown> };
const secret = async (name: string) => kube.request("GET", `/api/v1/namespaces/${INSTANCES}/secrets/${name}`);
const postgresql = (name: string) => kube.request("GET", `/apis/acid.zalan.do/v1/namespaces/${INSTANCES}/postgresqls/${name}`);
const decoded = (value: unknown) => Buffer.from(String(value), "base64").toString("utf8");
const managers = (object: KubeObject) => ((object.metadata.managedFields ?? []) as { manager: string; operation: string }[]).map((m) => `${m.manager}/${m.operation}`);

beforeAll(async () => {
  root = await createTempDir("real-flux-");
  kube = await startRealKube();
  await kube.installCrds([path.join(OUR_CRDS, "postgresqls.acid.zalan.do.yaml"), ...fluxCrdFiles()]);
  for (const name of [INSTANCES, "flux-system"]) await kube.apply({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
  kubeconfigPath = path.join(root, "local.kubeconfig");
  await writeFile(kubeconfigPath, kube.kubeconfig(), { mode: 0o600 });
  receiverTokenPath = path.join(root, "receiver-token");
  await writeFile(receiverTokenPath, `${RECEIVER_TOKEN}\n`, { mode: 0o600 });

  ({ git, remoteDir } = await startRemotes(root, { namespace: INSTANCES, brokenPlanId: BROKEN_PLAN_ID, localEntry: localEntry({ via: "annotation" }) }));

  flux = await startFlux(kube);
  operator = startOperatorLoop(postgresOperatorStandIn(kube, INSTANCES));
  // A bind waits 60 s for its credentials: Flux and the operator deliver them meanwhile.
  ({ broker, osb, plans } = await startLiveBroker(root, git, createLogger({ level: "debug", destination: { write: (line: string) => void logLines.push(line) } })));
});

afterAll(async () => {
  await broker?.close();
  await operator?.stop();
  await receiver?.close();
  await flux?.close();
  await git?.close();
  await kube?.close();
});

const { finished } = operationWaits(() => osb, () => flux.logs());

describe("examples/flux, applied as written, with real source- and kustomize-controller", () => {
  it("the GitRepositories fetch the broker's remotes over smart HTTP and the Kustomization applies clusters/local/", async () => {
    const urls = { "platform-gitops.git": git.url("platform-gitops.git"), "platform-gitops-eu.git": git.url("platform-gitops-eu.git") };
    const objects = [
      ...(await exampleObjects("flux/gitrepository.yaml", urls["platform-gitops.git"])).map((o) => JSON.parse(JSON.stringify(o).replaceAll("https://github.com/example/platform-gitops-eu.git", urls["platform-gitops-eu.git"])) as KubeObject),
      ...(await exampleObjects("flux/sparse-checkout.yaml", urls["platform-gitops.git"])),
    ];
    for (const name of ["gitops-broker-git", "gitops-broker-store-eu-git"]) await kube.apply(gitCredentialsSecret(name));
    for (const object of objects) await kube.apply(object, "kubectl");

    const tip = await remoteHead(remoteDir);
    await eventually(async () => {
      for (const name of ["gitops-broker", "gitops-broker-store-eu", "gitops-broker-local"]) {
        const repo = await get(`/apis/source.toolkit.fluxcd.io/v1/namespaces/flux-system/gitrepositories/${name}`);
        expect(fluxReady(repo), `${name}\n${flux.logs()}`).toMatchObject({ status: "True" });
      }
      const ks = await get(KUSTOMIZATION);
      expect(fluxReady(ks), flux.logs()).toMatchObject({ status: "True", reason: "ReconciliationSucceeded" });
      expect(ks.status?.lastAppliedRevision).toBe(`main@sha1:${tip}`);
    });
    // The artifact of the sparse checkout is served by source-controller's artifact server.
    const artifact = (await get(SOURCE)).status?.artifact as { url: string; revision: string };
    expect(artifact.revision).toBe(`main@sha1:${tip}`);
    expect(artifact.url.startsWith(`${flux.storageUrl}/gitrepository/flux-system/gitops-broker-local/`)).toBe(true);
    // The Namespace the broker keeps in clusters/local/, applied by kustomize-controller.
    const namespace = await get(`/api/v1/namespaces/${INSTANCES}`);
    expect(managers(namespace)).toContain("kustomize-controller/Apply");
  });

  it("provision: in progress until kustomize-controller applied the commit and the operator runs the database, then succeeded", async () => {
    const res = await osb.provision("db-1", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
    expect(res.status).toBe(202);
    const op = res.body.operation as string;
    expect(await finished("db-1", op)).toEqual({ state: "succeeded", description: "PostgreSQL cluster pg-db-1 is running" });
    const pg = await postgresql("pg-db-1");
    expect(pg.status).toBe(200);
    expect(managers(pg.body as KubeObject)).toContain("kustomize-controller/Apply");
    const ks = await get(KUSTOMIZATION);
    const inventory = (ks.status?.inventory as { entries: { id: string }[] }).entries.map((e) => e.id);
    expect(inventory).toContain(`${INSTANCES}_pg-db-1_acid.zalan.do_postgresql`);
  });

  it("update: the new volume size applied by kustomize-controller, succeeded once the operator runs it", async () => {
    const res = await osb.update("db-1", { service_id: plans.serviceId, plan_id: plans.medium.id, parameters: { storageGB: 30 } }, { query: ASYNC });
    expect(res.status).toBe(202);
    expect(await finished("db-1", res.body.operation as string)).toMatchObject({ state: "succeeded" });
    expect(((await postgresql("pg-db-1")).body.spec as { volume: { size: string } }).volume.size).toBe("30Gi");
  });

  it("bind answers 201 with the credentials of the operator's real Secret; unbind drops the user", async () => {
    const query = { service_id: plans.serviceId, plan_id: plans.medium.id };
    const res = await osb.bind("db-1", "app-1", { ...query, bind_resource: { app_guid: "app-guid-1" } });
    expect(res.status).toBe(201);
    const live = await secret(credentialsSecretName("app-1", "pg-db-1"));
    expect(live.status).toBe(200);
    const data = live.body.data as { username: string; password: string };
    expect(res.body.credentials).toMatchObject({ username: "app-1", password: decoded(data.password) });
    expect(((await postgresql("pg-db-1")).body.spec as { users: Record<string, unknown> }).users).toHaveProperty("app-1");

    expect((await osb.unbind("db-1", "app-1", query)).status).toBe(200);
    // kustomize-controller applies the postgresql without the user, the operator drops its Secret.
    await eventually(async () => {
      expect(((await postgresql("pg-db-1")).body.spec as { users: Record<string, unknown> }).users).not.toHaveProperty("app-1");
      expect((await secret(credentialsSecretName("app-1", "pg-db-1"))).status).toBe(404);
    });
  });

  it("deprovision: succeeded once kustomize-controller pruned the postgresql", async () => {
    const res = await osb.deprovision("db-1", { service_id: plans.serviceId, plan_id: plans.medium.id }, { query: ASYNC });
    expect(res.status).toBe(202);
    expect(await finished("db-1", res.body.operation as string)).toMatchObject({ state: "succeeded" });
    expect((await postgresql("pg-db-1")).status).toBe(404);
    const inventory = ((await get(KUSTOMIZATION)).status?.inventory as { entries: { id: string }[] }).entries.map((e) => e.id);
    expect(inventory).not.toContain(`${INSTANCES}_pg-db-1_acid.zalan.do_postgresql`);
  });

  it("a manifest the API server refuses: the operation fails with kustomize-controller's message once the plan's maximum_polling_duration is over", async () => {
    const res = await osb.provision("db-bad", provisionBody(plans.serviceId, BROKEN_PLAN_ID), { query: ASYNC });
    expect(res.status).toBe(202);
    const op = res.body.operation as string;
    await eventually(async () => {
      const ks = await get(KUSTOMIZATION);
      expect(fluxReady(ks)).toMatchObject({ status: "False", reason: "ReconciliationFailed" });
    });
    const { message } = fluxReady(await get(KUSTOMIZATION))!;
    expect(message).toContain("pg-db-bad");
    expect(message).toContain("numberOfInstances");
    const answer = await finished("db-bad", op);
    expect(answer.state).toBe("failed");
    expect(answer.description).toContain("provision did not finish within the plan's maximum_polling_duration (40 s)");
    expect(answer.description).toContain(`the last sync failed: ReconciliationFailed: ${message}`);

    // Until it is gone, kustomize-controller applies nothing of clusters/local/ (its dry run fails as a whole).
    const gone = await osb.deprovision("db-bad", { service_id: plans.serviceId, plan_id: BROKEN_PLAN_ID }, { query: ASYNC });
    expect(gone.status).toBe(202);
    expect(await finished("db-bad", gone.body.operation as string)).toMatchObject({ state: "succeeded" });
    await eventually(async () => expect(fluxReady(await get(KUSTOMIZATION))).toMatchObject({ status: "True" }));
  });
});

describe("the nudge with real Flux, the GitRepository polling every 10 minutes", () => {
  /** source-controller's status.lastHandledReconcileAt: the requestedAt it last acted on. */
  const handled = async () => (await get(SOURCE)).status?.lastHandledReconcileAt as string | undefined;
  /** The commit the GitRepository's artifact holds. */
  const fetched = async () => ((await get(SOURCE)).status?.artifact as { revision: string }).revision.replace(/^main@sha1:/, "");

  beforeAll(async () => {
    // kubectl patch gitrepository gitops-broker-local --type merge -p '{"spec":{"interval":"10m"}}'
    const patched = await kube.request("PATCH", SOURCE, { spec: { interval: "10m" } }, { contentType: "application/merge-patch+json" });
    expect(patched.status).toBe(200);
    await eventually(async () => expect((await get(SOURCE)).status?.observedGeneration).toBe((await get(SOURCE)).metadata.generation));
  });

  it("by annotation: source-controller fetches on the broker's requestedAt, long before its poll, and the provision succeeds", async () => {
    const before = await fetched();
    const started = performance.now();
    const res = await osb.provision("db-n1", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
    expect(res.status).toBe(202);
    expect(await finished("db-n1", res.body.operation as string)).toMatchObject({ state: "succeeded" });
    const elapsedS = (performance.now() - started) / 1000;
    // The fetch was the nudge's: source-controller recorded the annotation the broker set.
    const requested = ((await get(SOURCE)).metadata.annotations as Record<string, string>)["reconcile.fluxcd.io/requestedAt"];
    expect(await handled()).toBe(requested);
    expect(await fetched()).not.toBe(before);
    expect(elapsedS).toBeLessThan(600);
    expect(broker.nudger.stats().local).toMatchObject({ failed: 0 });
  });

  it("by webhook: the Receiver of examples/flux/receiver.yaml (github type) annotates the GitRepository, source-controller fetches, the provision succeeds", async () => {
    const written = (await exampleObjects("flux/receiver.yaml", git.url("platform-gitops.git")))[0]!;
    // The example lists the control repository's and the store's GitRepositories; this cluster's
    // source is sparse-checkout.yaml's, which a user adds to the list.
    const spec = written.spec as ReceiverSpec;
    spec.resources = [...spec.resources, { apiVersion: "source.toolkit.fluxcd.io/v1", kind: "GitRepository", name: "gitops-broker-local" }];
    receiver = await startFluxReceiver(kube, { name: written.metadata.name, namespace: "flux-system", spec, token: RECEIVER_TOKEN });
    await pushExternalCommit(remoteDir, { "registry/clusters/local.yaml": localEntry({ via: "webhook", url: receiver.url, payload: "github", secret: { path: receiverTokenPath } }) }, "registry: nudge local through the Receiver");
    await broker.writer.refresh();
    const handledBefore = await handled();

    const res = await osb.provision("db-n2", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
    expect(res.status).toBe(202);
    expect(await finished("db-n2", res.body.operation as string)).toMatchObject({ state: "succeeded" });
    expect(receiver.requests.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(1);
    expect(receiver.requests.filter((r) => r.status !== 200)).toEqual([]);
    const requested = ((await get(SOURCE)).metadata.annotations as Record<string, string>)["reconcile.fluxcd.io/requestedAt"];
    expect(await handled()).toBe(requested);
    expect(requested).not.toBe(handledBefore);
  });
});
