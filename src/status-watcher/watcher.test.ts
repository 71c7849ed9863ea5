/**
 * The live status watcher against real parts: a real git writer on a bare remote, the sample
 * catalog's sources/status templates, a Kubernetes API server double driven by the real
 * client-node, a sync agent double (Argo CD) and a postgres-operator double.
 */
import * as fs from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createBareRemote, createTempDir, pushExternalCommit } from "../../test/support/git-fixtures.js";
import { INSTANCE_NAMESPACE, quietRequests, sampleCatalogFiles, startSisterCluster, type SisterCluster } from "../../test/support/sister-cluster.js";
import { loadCatalog, loadClusters, type Catalog, type ClusterEntry, type Plan } from "../catalog/index.js";
import { createGitWriter, type Draft, type GitWriter } from "../gitwriter/index.js";
import { silentLogger } from "../log/index.js";
import { renderNow } from "../render/index.js";
import {
  clusterNamespacePath,
  instanceManifestDir,
  instanceRecordPath,
  keyOf,
  LABEL_INSTANCE,
  LABEL_MANAGED_BY,
  MANAGED_BY,
  namespaceManifest,
  recordYaml,
  writeBinding,
  writeInstance,
  type BindingRecord,
  type InstanceRecord,
  type OperationEntry,
} from "../repo/index.js";
import { createStatusWatcher, type StatusWatcher } from "./index.js";
import { EVENT_CEILING_MS } from "../../test/support/processes.js";

/**
 * The watcher's bound for a synchronous bind: the credentials of the first bind must arrive within
 * it through real watches, on a loaded machine too (2 s was missed there), and the second bind
 * waits it out.
 */
const BIND_TIMEOUT_MS = 15_000;
const eventually = <T>(assertion: () => T): Promise<T> => vi.waitFor(assertion, { timeout: EVENT_CEILING_MS, interval: 20 });

let root: string;
let remoteDir: string;
let east: SisterCluster;
let writer: GitWriter;
let catalog: Catalog;
let clusters: readonly ClusterEntry[];
let watcher: StatusWatcher;
let clockOffsetMs = 0;

beforeAll(async () => {
  root = await createTempDir("status-watcher-");
  remoteDir = `${root}/remote.git`;
  east = await startSisterCluster({ id: "east", sync: "argocd", remoteDir, dir: root });
  await createBareRemote(root, "remote.git", {
    ...(await sampleCatalogFiles()),
    "registry/clusters/east.yaml": east.registryEntry(),
    "registry/clusters/plain.yaml": "apiVersion: gitops-broker.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: plain\nspec:\n  status:\n    mode: commit\n",
    [clusterNamespacePath("east")]: namespaceManifest(INSTANCE_NAMESPACE),
  });
  writer = createGitWriter({ gitdir: `${root}/work.git`, remoteUrl: remoteDir, branch: "main", author: { name: "t", email: "t@example.com" }, logger: silentLogger() });
  await writer.start();
  catalog = (await loadCatalog(writer.snapshot())).catalog;
  clusters = (await loadClusters(writer.snapshot())).clusters;
  watcher = createStatusWatcher({
    view: { catalog: () => catalog, clusters: () => clusters },
    writer,
    logger: silentLogger(),
    defaultMode: "live",
    now: () => new Date(Date.now() + clockOffsetMs),
    bindTimeoutMs: BIND_TIMEOUT_MS,
  });
});
afterAll(async () => {
  await watcher?.close();
  await writer?.close();
  await east?.close();
  await fs.rm(root, { recursive: true, force: true });
});

function plan(name: "small" | "medium"): Plan {
  return catalog.services[0]!.plans.find((p) => p.name === name)!;
}

function renderInstance(record: InstanceRecord, bindings: BindingRecord[]) {
  const p = catalog.planById(record.spec.planId)!;
  return renderNow({
    action: "provision",
    templates: p.templates,
    values: { service: catalog.services[0]!.raw, plan: p.raw, instance: record as never, bindings: bindings as never },
    defaultNamespace: INSTANCE_NAMESPACE,
    labels: { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_INSTANCE]: keyOf(record.spec.instanceId) },
    planName: p.name,
  });
}

/** Commits what the broker commits for a provision (record and manifests); returns the record and its operation. */
async function provision(id: string, planName: "small" | "medium" = "medium", clusterId = "east") {
  const p = plan(planName);
  const op: OperationEntry<"provision"> = { id: `op-${id}`, action: "provision", at: new Date().toISOString(), planId: p.id };
  const record: InstanceRecord = {
    apiVersion: "gitops-broker.io/v1alpha1",
    kind: "ServiceInstance",
    metadata: { name: keyOf(id), namespace: INSTANCE_NAMESPACE },
    spec: { instanceId: id, serviceId: p.serviceId, planId: p.id, clusterId },
    status: { operations: [op] },
  };
  await commit(`provision ${id}`, (draft) => {
    writeInstance(draft, record);
    for (const m of renderInstance(record, [])) draft.write(`${instanceManifestDir(clusterId, id)}/${m.fileName}`, m.yaml);
  });
  return { record, op };
}

async function deprovision(record: InstanceRecord) {
  const op: OperationEntry<"deprovision"> = { id: `op-gone-${record.spec.instanceId}`, action: "deprovision", at: new Date().toISOString() };
  const next: InstanceRecord = { ...record, status: { deleted: true, operations: [...record.status.operations, op] } };
  await commit(`deprovision ${record.spec.instanceId}`, (draft) => {
    writeInstance(draft, next);
    draft.remove(instanceManifestDir(record.spec.clusterId, record.spec.instanceId));
  });
  return { record: next, op };
}

async function bind(instance: InstanceRecord, bindingId: string) {
  const op: OperationEntry<"bind"> = { id: `op-${bindingId}`, action: "bind", at: new Date().toISOString() };
  const binding: BindingRecord = {
    apiVersion: "gitops-broker.io/v1alpha1",
    kind: "ServiceBinding",
    metadata: { name: keyOf(bindingId), namespace: INSTANCE_NAMESPACE },
    spec: { bindingId, instanceId: instance.spec.instanceId, serviceId: instance.spec.serviceId, planId: instance.spec.planId },
    status: { operations: [op] },
  };
  await commit(`bind ${bindingId}`, (draft) => {
    writeBinding(draft, binding);
    for (const m of renderInstance(instance, [binding])) draft.write(`${instanceManifestDir("east", instance.spec.instanceId)}/${m.fileName}`, m.yaml);
  });
  return { binding, op };
}

async function commit(subject: string, edit: (draft: Draft) => void) {
  await writer.submit(async (draft) => {
    edit(draft);
    return { commit: { subject, trailers: {} }, result: null };
  });
}

const postgresqlRef = (id: string) => ({ apiVersion: "acid.zalan.do/v1", kind: "postgresql", namespace: INSTANCE_NAMESPACE, name: `pg-${id}` });

describe("live mode on a cluster synced by Argo CD", () => {
  it("waits for the commit to be applied, then for the operator; every poll is served from memory", async () => {
    const { record, op } = await provision("db-1");
    const status = () => watcher.instanceStatus(record, op);
    await eventually(() => expect(status()).toEqual({ state: "in progress", description: "waiting for Argo CD application east to apply operation op-db-1 (nothing applied yet)" }));

    await east.agent.sync();
    await eventually(() => expect(status()).toEqual({ state: "in progress", description: "PostgreSQL cluster: waiting for the operator" }));
    const requests = await quietRequests(east.server);
    for (let i = 0; i < 100; i++) expect(status().state).toBe("in progress");
    expect(east.server.requests.length).toBe(requests);

    east.operator.reconcile();
    east.operator.reconcile();
    await eventually(() => expect(status()).toEqual({ state: "succeeded", description: "PostgreSQL cluster pg-db-1 is running" }));
    for (let i = 0; i < 100; i++) expect(status().state).toBe("succeeded");
    expect(east.server.requests.filter((r) => !r.watch).length).toBeGreaterThan(0);
    expect(east.server.requests.length).toBe(requests);
  });

  it("reports a failed sync in the description and succeeds once a later sync applies the commit", async () => {
    const { record, op } = await provision("db-2");
    east.agent.failWith("one or more objects failed to apply: admission webhook denied the request");
    await east.agent.sync();
    await eventually(() =>
      expect(watcher.instanceStatus(record, op)).toEqual({
        state: "in progress",
        description: expect.stringMatching(/^waiting for Argo CD application east to apply operation op-db-2 \(applied: [0-9a-f]{7}\); the last sync failed: one or more objects failed to apply: admission webhook denied the request$/),
      }),
    );
    east.agent.failWith(undefined);
    await east.agent.sync();
    east.operator.reconcile();
    east.operator.reconcile();
    await eventually(() => expect(watcher.instanceStatus(record, op).state).toBe("succeeded"));
  });

  it("does not trust health assessed before the sync finished", async () => {
    const { record, op } = await provision("db-3");
    const tip = await east.agent.sync();
    east.operator.reconcile();
    east.operator.reconcile();
    const app = east.server.store.get({ apiVersion: "argoproj.io/v1alpha1", kind: "Application", namespace: "argocd", name: "east" })!;
    const status = app.status as Record<string, unknown>;
    const operationState = { phase: "Succeeded", finishedAt: "2020-01-01T00:00:05Z", syncResult: { revision: tip } };
    east.server.store.upsert({ ...app, status: { ...status, reconciledAt: "2020-01-01T00:00:00Z", operationState } });
    await eventually(() =>
      expect(watcher.instanceStatus(record, op)).toEqual({ state: "in progress", description: "waiting for Argo CD application east: health not assessed since the sync finished at 2020-01-01T00:00:05Z" }),
    );
    east.server.store.upsert({ ...app, status: { ...status, reconciledAt: "2020-01-01T00:00:05Z", operationState } });
    await eventually(() => expect(watcher.instanceStatus(record, op).state).toBe("succeeded"));
  });

  it("succeeds a deprovision only when the instance's objects are gone from the cluster", async () => {
    const { record: live } = await provision("db-4");
    await east.agent.sync();
    east.operator.reconcile();
    const stuck = east.server.store.get(postgresqlRef("db-4"))!;
    const { record, op } = await deprovision(live);
    await eventually(() => expect(watcher.instanceStatus(record, op).description).toMatch(/^waiting for Argo CD application east to apply operation op-gone-db-4/));

    await east.agent.sync();
    east.server.store.upsert(stuck); // as if a finalizer held it after the prune
    await eventually(() =>
      expect(watcher.instanceStatus(record, op)).toEqual({
        state: "in progress",
        description: expect.stringMatching(/^deprovision applied by Argo CD application east at [0-9a-f]{7}; waiting for 1 object\(s\) to be deleted from cluster east: postgresql\/pg-db-4$/),
      }),
    );
    east.server.store.delete(postgresqlRef("db-4"));
    await eventually(() =>
      expect(watcher.instanceStatus(record, op)).toEqual({
        state: "succeeded",
        description: expect.stringMatching(/^deprovision applied by Argo CD application east at [0-9a-f]{7}; its objects are gone from cluster east$/),
      }),
    );
  });

  it("waits, within its bound, for a synchronous bind's credentials", async () => {
    const { record } = await provision("db-5");
    await east.agent.sync();
    east.operator.reconcile();
    east.operator.reconcile();
    const { binding, op } = await bind(record, "app-1");

    const waited = watcher.awaitBinding(record, binding, op);
    await east.agent.sync();
    east.operator.reconcile();
    const outcome = await waited;
    const secret = east.server.store.get({ apiVersion: "v1", kind: "Secret", namespace: INSTANCE_NAMESPACE, name: "app-1.pg-db-5.credentials.postgresql.acid.zalan.do" })!;
    const password = Buffer.from((secret.data as { password: string }).password, "base64").toString("utf8");
    expect(outcome).toMatchObject({ state: "succeeded", result: { credentials: { username: "app-1", password, dbname: "app", port: 5432 } } });
    expect(watcher.bindingResult(record, binding)).toEqual(outcome.state === "succeeded" ? outcome.result : undefined);

    const { binding: late, op: lateOp } = await bind(record, "app-2");
    const started = Date.now();
    await expect(watcher.awaitBinding(record, late, lateOp)).resolves.toEqual({
      state: "in progress",
      description: expect.stringMatching(/^waiting for Argo CD application east to apply operation op-app-2/),
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(BIND_TIMEOUT_MS - 100);
  });

  it("holds a synchronous provision up to its own bound (syncTimeoutMs), not the bind bound", async () => {
    const syncTimeoutMs = 1_500;
    const held = createStatusWatcher({
      view: { catalog: () => catalog, clusters: () => clusters },
      writer,
      logger: silentLogger(),
      defaultMode: "live",
      bindTimeoutMs: 100,
      syncTimeoutMs,
    });
    try {
      await vi.waitFor(() => expect(held.observing?.()).toBe(true));
      const { record, op } = await provision("db-sync", "small");
      const started = Date.now();
      // Never synced: still in progress at the bound, which is the instance bound, not the bind bound.
      await expect(held.awaitInstance!(record, op)).resolves.toMatchObject({ state: "in progress" });
      expect(Date.now() - started).toBeGreaterThanOrEqual(syncTimeoutMs - 100);
    } finally {
      await held.close();
    }
  });

  it("fetches a revision it does not have (pushed by someone else) before judging", async () => {
    const p = plan("medium");
    const op = { id: "op-ext", action: "provision" as const, at: new Date().toISOString(), planId: p.id };
    const record: InstanceRecord = {
      apiVersion: "gitops-broker.io/v1alpha1",
      kind: "ServiceInstance",
      metadata: { name: "db-ext", namespace: INSTANCE_NAMESPACE },
      spec: { instanceId: "db-ext", serviceId: p.serviceId, planId: p.id, clusterId: "east" },
      status: { operations: [op] },
    };
    const files: Record<string, string> = { [instanceRecordPath("db-ext")]: recordYaml(record) };
    for (const m of renderInstance(record, [])) files[`${instanceManifestDir("east", "db-ext")}/${m.fileName}`] = m.yaml;
    const pushed = await pushExternalCommit(remoteDir, files, "provision db-ext by another replica");
    expect(await writer.readerAt(pushed)).toBeNull();

    await east.agent.sync();
    east.operator.reconcile();
    east.operator.reconcile();
    await eventually(() => expect(watcher.instanceStatus(record, op).state).toBe("succeeded"));
    expect(await writer.readerAt(pushed)).not.toBeNull();
  });

  it("answers commit mode for a cluster that asks for it", () => {
    const record = { spec: { clusterId: "plain" } } as InstanceRecord;
    expect(watcher.instanceStatus(record, { id: "x", action: "provision", at: new Date().toISOString() })).toEqual({
      state: "succeeded",
      description: "provision committed and pushed to the GitOps repository (status.mode commit: the cluster is not observed)",
    });
  });

  // Last: it takes the cluster down.
  it("keeps an operation in progress while the cluster cannot be reached, then fails it after maximum_polling_duration", async () => {
    const { record, op } = await provision("db-6");
    await eventually(() => expect(watcher.instanceStatus(record, op).description).toMatch(/^waiting for Argo CD application east to apply operation op-db-6/));
    await east.server.stop();
    await eventually(() =>
      expect(watcher.instanceStatus(record, op)).toEqual({ state: "in progress", description: expect.stringMatching(/^cluster east cannot be reached: /) }),
    );
    clockOffsetMs = (plan("medium").maximumPollingDuration! + 1) * 1000;
    expect(watcher.instanceStatus(record, op)).toEqual({
      state: "failed",
      description: expect.stringMatching(/^provision did not finish within the plan's maximum_polling_duration \(3600 s\): cluster east cannot be reached: /),
    });
    clockOffsetMs = 0;
    expect(watcher.instanceStatus(record, op).state).toBe("failed");
  });
});
