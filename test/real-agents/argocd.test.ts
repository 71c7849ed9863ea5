/**
 * End to end with REAL Argo CD (ADR 0035): argocd-repo-server, argocd-application-controller,
 * argocd-applicationset-controller and argocd-server, built from the argo-cd/v3 module, with
 * Debian's redis-server, running as processes against a real kube-apiserver and etcd (with
 * kube-controller-manager's garbage collector, which Argo CD's foreground deletions need) and
 * fetching the broker's remotes over smart HTTP on loopback. The Argo CD objects are
 * examples/argocd as a user applies them (`kubectl apply -k`; only the repository URLs
 * substituted): the AppProject and the two ApplicationSets, whose git files generator makes the
 * Application of each cluster directory. The broker runs in status mode live: every answer below
 * comes from the real Application and the objects the application controller applied.
 * timeout.reconciliation is 10 minutes here, so what is delivered within a test's ceiling was
 * delivered because of the nudge (the first nudge test shows that nothing else delivers it).
 *
 * Stand-in left: the postgres-operator (test/support/real-controllers.ts).
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { RunningBroker } from "../../src/cli/serve.js";
import { createLogger } from "../../src/log/index.js";
import { provisionBody, type SamplePlans } from "../broker/helpers.js";
import { createTempDir, pushExternalCommit, remoteHead } from "../support/git-fixtures.js";
import type { GitHttpServer } from "../support/git-http-server.js";
import type { OsbClient } from "../support/osb-client.js";
import { PROCESS_TEST_TIMEOUT_MS } from "../support/processes.js";
import { argoCdCrdFiles, ARGOCD_NAMESPACE, repositorySecret, startArgoCd, type RealArgoCd } from "../support/real-argocd.js";
import { credentialsSecretName, postgresOperatorStandIn, startOperatorLoop, type OperatorLoop } from "../support/real-controllers.js";
import { EXAMPLE_REPOSITORY, exampleObjects } from "../support/real-flux.js";
import { startRealKube, type KubeObject, type RealKube } from "../support/real-kube.js";
import { operationWaits, eventually } from "./operations.js";
import { startLiveBroker, startRemotes } from "./remotes.js";

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const ASYNC = { accepts_incomplete: "true" };
const INSTANCES = "gitops-broker-instances";
const OUR_CRDS = path.resolve(import.meta.dirname, "../support/crds");
const EU_REPOSITORY = EXAMPLE_REPOSITORY.replace("platform-gitops.git", "platform-gitops-eu.git");
/** The Application applicationset.yaml generates for clusters/local/. */
const APPLICATION = `/apis/argoproj.io/v1alpha1/namespaces/${ARGOCD_NAMESPACE}/applications/gitops-broker-local`;
const APPLICATIONSETS = `/apis/argoproj.io/v1alpha1/namespaces/${ARGOCD_NAMESPACE}/applicationsets`;
const WEBHOOK_SECRET = "github-webhook-secret-of-the-test";
/** How long a commit nobody announces is watched not being delivered (Argo CD polls every 10 minutes here). */
const UNANNOUNCED_MS = 15_000;
const BROKEN_PLAN_ID = "2c9e4b7a-6f13-4d8e-b0a5-91d7e3c4f2a8";

let root: string;
let remoteDir: string;
let kube: RealKube;
let argocd: RealArgoCd;
let git: GitHttpServer;
let broker: RunningBroker;
let osb: OsbClient;
let plans: SamplePlans;
let operator: OperatorLoop;
let kubeconfigPath: string;
let webhookSecretPath: string;

function localEntry(nudge: Record<string, unknown>): string {
  return stringify({
    apiVersion: "gitops-broker.io/v1alpha1",
    kind: "Cluster",
    metadata: { name: "local" },
    spec: { namespace: INSTANCES, kubeconfig: { path: kubeconfigPath }, status: { mode: "live" }, sync: { kind: "argocd", name: "gitops-broker-local", namespace: ARGOCD_NAMESPACE, nudge } },
  });
}


const get = async (apiPath: string) => (await kube.request("GET", apiPath)).body as KubeObject & { status?: Record<string, unknown> };
const secret = async (name: string) => kube.request("GET", `/api/v1/namespaces/${INSTANCES}/secrets/${name}`);
const postgresql = (name: string) => kube.request("GET", `/apis/acid.zalan.do/v1/namespaces/${INSTANCES}/postgresqls/${name}`);
const decoded = (value: unknown) => Buffer.from(String(value), "base64").toString("utf8");
const count = (text: string, part: string) => text.split(part).length - 1;
/** What the API server says of the broken plan's postgresql, within Argo CD's message. */
const REFUSED = 'postgresql.acid.zalan.do "pg-db-bad" is invalid: spec.numberOfInstances';

beforeAll(async () => {
  root = await createTempDir("real-argocd-");
  kube = await startRealKube();
  await kube.installCrds([path.join(OUR_CRDS, "postgresqls.acid.zalan.do.yaml"), ...argoCdCrdFiles()]);
  // Argo CD prunes with foreground propagation: the object goes once the garbage collector has
  // deleted its dependents (ADR 0031). Started after the CRDs, whose kinds it learns at its start.
  await kube.startControllerManager();
  kubeconfigPath = path.join(root, "local.kubeconfig");
  await writeFile(kubeconfigPath, kube.kubeconfig(), { mode: 0o600 });
  webhookSecretPath = path.join(root, "webhook-secret");
  await writeFile(webhookSecretPath, `${WEBHOOK_SECRET}\n`, { mode: 0o600 });

  ({ git, remoteDir } = await startRemotes(root, { namespace: INSTANCES, brokenPlanId: BROKEN_PLAN_ID, localEntry: localEntry({ via: "annotation" }) }));

  argocd = await startArgoCd(kube, { webhookSecret: WEBHOOK_SECRET, reconciliation: "600s" });
  operator = startOperatorLoop(postgresOperatorStandIn(kube, INSTANCES));
  ({ broker, osb, plans } = await startLiveBroker(root, git, createLogger({ level: "fatal" })));
});

afterAll(async () => {
  await broker?.close();
  await operator?.stop();
  await argocd?.close();
  await git?.close();
  await kube?.close();
});

const { finished } = operationWaits(() => osb, () => argocd.logs());

describe("examples/argocd, applied as written, with real Argo CD", () => {
  it("the ApplicationSets generate one Application per cluster directory whose cluster Argo CD knows; the application controller syncs clusters/local/", async () => {
    const urls = { control: git.url("platform-gitops.git"), eu: git.url("platform-gitops-eu.git") };
    for (const [name, url] of [["gitops-broker-repo", urls.control], ["gitops-broker-store-eu-repo", urls.eu]] as const) await kube.apply(repositorySecret(name, url), "kubectl");
    for (const file of ["appproject.yaml", "applicationset.yaml", "applicationset-store-eu.yaml"]) {
      for (const object of await exampleObjects(`argocd/${file}`, urls.control)) {
        await kube.apply(JSON.parse(JSON.stringify(object).replaceAll(EU_REPOSITORY, urls.eu)) as KubeObject, "kubectl");
      }
    }
    const tip = await remoteHead(remoteDir);
    await eventually(async () => {
      const app = await get(APPLICATION);
      const status = app.status as { sync?: { status: string; revision: string }; health?: { status: string } } | undefined;
      expect(status?.sync, argocd.logs()).toMatchObject({ status: "Synced", revision: tip });
      expect(status?.health?.status).toBe("Healthy");
    }, 300_000);
    const app = await get(APPLICATION);
    expect((app.metadata.annotations as Record<string, string>)["argocd.argoproj.io/manifest-generate-paths"]).toBe("/clusters/local");
    expect((await get(`/api/v1/namespaces/${INSTANCES}`)).metadata.name).toBe(INSTANCES);
    // The store's ApplicationSet read clusters/eu-prod-1/ of its repository; eu-prod-1 is not
    // registered in Argo CD, so it made no Application and says why (examples/argocd/README.md).
    await eventually(async () => {
      const conditions = ((await get(`${APPLICATIONSETS}/gitops-broker-store-eu`)).status?.conditions ?? []) as { type: string; status: string; reason: string; message: string }[];
      expect(conditions).toContainEqual(expect.objectContaining({ type: "ErrorOccurred", status: "True", reason: "ApplicationValidationError", message: expect.stringContaining("there are no clusters with this name: eu-prod-1") as string }));
    });
    expect((await kube.request("GET", `/apis/argoproj.io/v1alpha1/namespaces/${ARGOCD_NAMESPACE}/applications/gitops-broker-eu-prod-1`)).status).toBe(404);
  });

  it("provision, update, bind, unbind, deprovision: answered from the real Application and the objects it applied, pruned at the end", async () => {
    const query = { service_id: plans.serviceId, plan_id: plans.medium.id };
    const created = await osb.provision("db-1", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
    expect(created.status).toBe(202);
    expect(await finished("db-1", created.body.operation as string)).toEqual({ state: "succeeded", description: "PostgreSQL cluster pg-db-1 is running" });
    const pg = (await postgresql("pg-db-1")).body as KubeObject;
    expect((pg.metadata.annotations as Record<string, string>)["argocd.argoproj.io/tracking-id"]).toBe("gitops-broker-local:acid.zalan.do/postgresql:gitops-broker-instances/pg-db-1");

    const updated = await osb.update("db-1", { ...query, parameters: { storageGB: 30 } }, { query: ASYNC });
    expect(updated.status).toBe(202);
    expect(await finished("db-1", updated.body.operation as string)).toMatchObject({ state: "succeeded" });
    expect(((await postgresql("pg-db-1")).body.spec as { volume: { size: string } }).volume.size).toBe("30Gi");

    const bound = await osb.bind("db-1", "app-1", { ...query, bind_resource: { app_guid: "app-guid-1" } });
    expect(bound.status).toBe(201);
    const live = await secret(credentialsSecretName("app-1", "pg-db-1"));
    expect(bound.body.credentials).toMatchObject({ username: "app-1", password: decoded((live.body.data as { password: string }).password) });
    expect((await osb.unbind("db-1", "app-1", query)).status).toBe(200);
    await eventually(async () => {
      expect(((await postgresql("pg-db-1")).body.spec as { users: Record<string, unknown> }).users).not.toHaveProperty("app-1");
      expect((await secret(credentialsSecretName("app-1", "pg-db-1"))).status).toBe(404);
    });

    // Argo CD prunes with foreground propagation: the garbage collector deletes the object once
    // its dependents are gone; the deprovision succeeds when it is.
    const gone = await osb.deprovision("db-1", query, { query: ASYNC });
    expect(gone.status).toBe(202);
    expect(await finished("db-1", gone.body.operation as string)).toMatchObject({ state: "succeeded" });
    expect((await postgresql("pg-db-1")).status).toBe(404);
    // The Application's resources list follows at its next comparison, which the deletion triggers.
    await eventually(async () => {
      const resources = ((await get(APPLICATION)).status?.resources ?? []) as { kind: string; name: string }[];
      expect(resources.map((r) => `${r.kind}/${r.name}`)).not.toContain("postgresql/pg-db-1");
    });
  });
});

describe("the nudge with real Argo CD, timeout.reconciliation 10 minutes", () => {
  /** The commit the Application last compared with (status.sync.revision). */
  const compared = async () => ((await get(APPLICATION)).status?.sync as { revision: string }).revision;
  const controllerLog = () => argocd.processes.applicationController!.stderr();
  const serverLog = () => argocd.processes.server!.stderr();
  const EXTRA = "clusters/local/extra/configmap.yaml";
  const configMap = () => kube.request("GET", `/api/v1/namespaces/${INSTANCES}/configmaps/delivered-by-the-nudge`);

  it("without a nudge, a commit to clusters/local/ stays where it is: Argo CD would look at it at its next poll", async () => {
    const before = await compared();
    // A commit the broker did not make, so nothing nudges Argo CD about it.
    const extra = stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "delivered-by-the-nudge", namespace: INSTANCES }, data: { pushed: "without a nudge" } });
    const commit = await pushExternalCommit(remoteDir, { [EXTRA]: extra }, "a commit to clusters/local/ that nobody announces");
    await broker.writer.refresh();
    await sleep(UNANNOUNCED_MS);
    expect(await compared()).toBe(before);
    expect(await compared()).not.toBe(commit);
    expect((await configMap()).status).toBe(404);
  });

  it("by annotation: the application controller refreshes on argocd.argoproj.io/refresh, removes it, and auto-sync applies the commit (and the one before)", async () => {
    const refreshesBefore = count(controllerLog(), "Refreshing app status (normal refresh requested)");
    const sentBefore = broker.nudger.stats().local?.sent ?? 0;
    const res = await osb.provision("db-n1", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
    expect(res.status).toBe(202);
    expect(await finished("db-n1", res.body.operation as string)).toMatchObject({ state: "succeeded" });
    expect(broker.nudger.stats().local).toMatchObject({ sent: sentBefore + 1, failed: 0 });
    // The refresh the broker asked for, handled (the annotation gone), and the unannounced commit
    // before it delivered with it.
    expect(count(controllerLog(), "Refreshing app status (normal refresh requested)")).toBeGreaterThan(refreshesBefore);
    expect(((await get(APPLICATION)).metadata.annotations as Record<string, string>)["argocd.argoproj.io/refresh"]).toBeUndefined();
    expect(await compared()).toBe(await remoteHead(remoteDir));
    expect((await configMap()).status).toBe(200);
  });

  it("by webhook: argocd-server's /api/webhook takes the broker's signed GitHub push event and refreshes the Application", async () => {
    await pushExternalCommit(remoteDir, { "registry/clusters/local.yaml": localEntry({ via: "webhook", url: argocd.webhookUrl, secret: { path: webhookSecretPath } }) }, "registry: nudge local through argocd-server's webhook");
    await broker.writer.refresh();
    const sentBefore = broker.nudger.stats().local?.sent ?? 0;
    // argocd-server names the repository by its web URL (the clone URL without .git) and the branch.
    const received = `Received push event repo: ${git.url("platform-gitops.git").replace(/\.git$/, "")}, revision: main, touchedHead: true`;
    const [receivedBefore, requestedBefore] = [count(serverLog(), received), count(serverLog(), "Requested app 'gitops-broker-local' refresh")];
    const res = await osb.provision("db-n2", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
    expect(res.status).toBe(202);
    const head = await remoteHead(remoteDir);
    expect(await finished("db-n2", res.body.operation as string)).toMatchObject({ state: "succeeded" });
    expect(broker.nudger.stats().local).toMatchObject({ sent: sentBefore + 1, failed: 0 });
    // argocd-server checked the signature, took the push event and asked the application
    // controller to refresh the Application whose directory the pushed files are in.
    expect(count(serverLog(), received)).toBe(receivedBefore + 1);
    expect(count(serverLog(), "Requested app 'gitops-broker-local' refresh")).toBeGreaterThan(requestedBefore);
    expect(await compared()).toBe(head);
  });
});

describe("a manifest the API server refuses, with real Argo CD", () => {
  it("fails its operation with the application controller's message; meanwhile the cluster's other instances are provisioned and deprovisioned; its deprovision succeeds", async () => {
    const operationMessage = async () => String(((await get(APPLICATION)).status?.operationState as { message?: string } | undefined)?.message);
    const res = await osb.provision("db-bad", provisionBody(plans.serviceId, BROKEN_PLAN_ID), { query: ASYNC });
    expect(res.status).toBe(202);
    await eventually(async () => expect(await operationMessage()).toContain(REFUSED));

    // While the refused postgresql is in clusters/local/, Argo CD retries with the newest commit
    // (retry.refresh), and its deletions do not wait for every apply to succeed (no PruneLast):
    // another instance's provision and one's deprovision are delivered, each judged by its own objects.
    const query = { service_id: plans.serviceId, plan_id: plans.medium.id };
    const created = await osb.provision("db-n3", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC });
    const deleted = await osb.deprovision("db-n1", query, { query: ASYNC });
    expect([created.status, deleted.status]).toEqual([202, 202]);
    expect(await finished("db-n3", created.body.operation as string)).toMatchObject({ state: "succeeded" });
    expect(await finished("db-n1", deleted.body.operation as string)).toMatchObject({ state: "succeeded" });
    expect((await postgresql("pg-db-n1")).status).toBe(404);
    expect((await postgresql("pg-db-n3")).status).toBe(200);
    expect(await operationMessage()).toContain(REFUSED);

    const answer = await finished("db-bad", res.body.operation as string);
    expect(answer.state).toBe("failed");
    expect(answer.description).toContain("provision did not finish within the plan's maximum_polling_duration (40 s)");
    // Argo CD's words ("one or more objects failed to apply, reason: ..."), the API server's within.
    expect(answer.description).toMatch(/the last sync failed: one or more (objects failed to apply|synchronization tasks completed unsuccessfully), reason: postgresql\.acid\.zalan\.do "pg-db-bad" is invalid: spec\.numberOfInstances/);

    const gone = await osb.deprovision("db-bad", { service_id: plans.serviceId, plan_id: BROKEN_PLAN_ID }, { query: ASYNC });
    expect(gone.status).toBe(202);
    expect(await finished("db-bad", gone.body.operation as string)).toMatchObject({ state: "succeeded" });
    await eventually(async () => expect((await get(APPLICATION)).status?.operationState).toMatchObject({ phase: "Succeeded" }));
  });
});
