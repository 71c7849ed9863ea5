/**
 * The Service Fabrik hand-over (ADR 0026) delivered by REAL Flux (ADR 0035): a Service Fabrik
 * instance and binding live on a real kube-apiserver (a master that is its own sister, SFCluster
 * "1", as in test/real-kube/service-fabrik-import.test.ts), `gitops-broker import service-fabrik
 * --yes --hand-over` commits the instance's objects and releases them, then real
 * kustomize-controller takes the live postgresql over: first with `prune: false` (a mistake in
 * the import cannot delete anything), by server-side apply, keeping the object (same uid, the
 * interoperator's fields now kustomize-controller's), then with `prune: true`, after which a
 * deprovision prunes it.
 */
import path from "node:path";
import { writeFile } from "node:fs/promises";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { clusterNamespacePath, namespaceManifest } from "../../src/repo/index.js";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { remoteHead } from "../support/git-fixtures.js";
import { startKubeApiServer, type KubeApiServer } from "../support/kube-api-server.js";
import { POSTGRESQL } from "../support/postgres-operator.js";
import { EVENT_CEILING_MS, PROCESS_TEST_TIMEOUT_MS, trackedTempDir } from "../support/processes.js";
import { fluxCrdFiles, fluxReady, gitCredentialsSecret, startFlux, type RealFlux } from "../support/real-flux.js";
import { startRealKube, type KubeObject, type RealKube } from "../support/real-kube.js";
import { importArgs, registerServiceFabrik, runImport, sampleServiceFabrikCatalog, seedLandscape, SF_NAMESPACE, SF_PLAN_ID, SF_SERVICE_ID } from "../support/service-fabrik-landscape.js";

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const eventually = <T>(assertion: () => Promise<T>): Promise<T> => vi.waitFor(assertion, { timeout: EVENT_CEILING_MS, interval: 200 });
const CRDS = path.resolve(import.meta.dirname, "../support/crds");
const PG_PATH = "/apis/acid.zalan.do/v1/namespaces/sf-r-1/postgresqls/sapcp-r-1";
const KUSTOMIZATION = "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/cluster-1";

let kube: RealKube;
let flux: RealFlux;
let shaped: KubeApiServer;
let h: Harness;
let args: string[];

type Live = KubeObject & { metadata: { uid: string; labels?: Record<string, string>; managedFields?: { manager: string; operation: string }[]; ownerReferences?: unknown[] }; spec: Record<string, unknown>; status?: unknown };
const get = async (p: string) => (await kube.request("GET", p)).body as Live;
const managers = (o: Live) => (o.metadata.managedFields ?? []).map((m) => `${m.manager}/${m.operation}`);

/** The Service Fabrik landscape, shaped in a double as its code wrote it, created on the real server. */
async function seedOnRealServer(): Promise<void> {
  shaped = await startKubeApiServer({ resources: [POSTGRESQL] });
  registerServiceFabrik(shaped);
  const { service, plan } = await sampleServiceFabrikCatalog();
  await seedLandscape({ master: shaped, sisters: { "1": shaped }, service, plan, instances: [{ id: "r-1", clusterId: "1", bindings: [{ id: "r-1-b" }] }] });
  for (const name of ["sf-r-1", SF_NAMESPACE, "gitops-broker-instances", "flux-system"]) await kube.apply({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
  const uids = new Map<string, string>();
  const clean = (o: KubeObject) => {
    const { uid: _u, resourceVersion: _r, creationTimestamp: _c, ...metadata } = o.metadata as Record<string, unknown>;
    return { ...o, metadata: { ...metadata, name: o.metadata.name } } as KubeObject;
  };
  for (const kind of ["SFServiceInstance", "SFServiceBinding"]) {
    for (const o of shaped.store.list("osb.servicefabrik.io/v1alpha1", kind)) {
      const { status, ...rest } = clean(o as KubeObject);
      const created = await kube.apply(rest, "service-fabrik-broker");
      await kube.patchStatus(created, status as Record<string, unknown>);
      uids.set(o.metadata.uid!, String(created.metadata.uid));
    }
  }
  for (const o of shaped.store.list("acid.zalan.do/v1", "postgresql")) {
    const object = clean(o as KubeObject);
    object.metadata.ownerReferences = ((object.metadata.ownerReferences ?? []) as { uid: string }[]).map((r) => ({ ...r, uid: uids.get(r.uid)! }));
    await kube.apply(object, "interoperator");
  }
}

beforeAll(async () => {
  const root = await trackedTempDir("real-flux-hand-over-");
  kube = await startRealKube();
  await kube.installCrds([...["postgresqls.acid.zalan.do.yaml", "sfserviceinstances.osb.servicefabrik.io.yaml", "sfservicebindings.osb.servicefabrik.io.yaml"].map((f) => path.join(CRDS, f)), ...fluxCrdFiles()]);
  await seedOnRealServer();
  const kubeconfig = path.join(root, "admin.kubeconfig");
  await writeFile(kubeconfig, kube.kubeconfig(), { mode: 0o600 });
  const { files } = await sampleServiceFabrikCatalog();
  h = await startHarness({
    files: {
      ...files,
      "registry/clusters/1.yaml": stringify({ apiVersion: "gitops-broker.io/v1alpha1", kind: "Cluster", metadata: { name: "1" }, spec: { namespace: "gitops-broker-instances", kubeconfig: { path: kubeconfig }, status: { mode: "commit" } } }),
      [clusterNamespacePath("1")]: namespaceManifest("gitops-broker-instances"),
    },
  });
  args = await importArgs(root, shaped, h.remoteUrl);
  args[args.indexOf("--master-kubeconfig") + 1] = kubeconfig;
  flux = await startFlux(kube);
});

afterAll(async () => {
  await h?.close();
  await flux?.close();
  await shaped?.close();
  await kube?.close();
});

/** The Kustomization of clusters/1/ with `prune`, on examples/flux/sparse-checkout.yaml's shape. */
async function applyKustomization(prune: boolean): Promise<void> {
  await kube.apply({
    apiVersion: "kustomize.toolkit.fluxcd.io/v1",
    kind: "Kustomization",
    metadata: { name: "cluster-1", namespace: "flux-system" },
    spec: { sourceRef: { kind: "GitRepository", name: "cluster-1" }, path: "./clusters/1", prune, wait: true, timeout: "5m", interval: "10m", retryInterval: "1m" },
  }, "kubectl");
}

describe("hand-over of a Service Fabrik instance to real kustomize-controller", () => {
  it("import --hand-over, then prune off: kustomize-controller adopts the live postgresql by server-side apply, same uid", async () => {
    const before = await get(PG_PATH);
    expect(before.metadata.ownerReferences).toHaveLength(2);
    const imported = await runImport(["service-fabrik", ...args, "--yes", "--hand-over"]);
    expect(imported.out).toMatch(/imported 1 instance\(s\) with 1 binding\(s\) in 1 commit\(s\)/);
    expect(imported.code).toBe(0);
    expect((await get(PG_PATH)).metadata.ownerReferences).toBeUndefined();

    await kube.apply(gitCredentialsSecret("cluster-1-git"));
    await kube.apply({
      apiVersion: "source.toolkit.fluxcd.io/v1",
      kind: "GitRepository",
      metadata: { name: "cluster-1", namespace: "flux-system" },
      spec: { interval: "1m", url: h.remoteUrl, ref: { branch: "main" }, secretRef: { name: "cluster-1-git" }, sparseCheckout: ["clusters/1"] },
    }, "kubectl");
    await applyKustomization(false);
    const tip = await remoteHead(h.remoteDir);
    await eventually(async () => {
      const ks = await get(KUSTOMIZATION);
      expect(fluxReady(ks), flux.logs()).toMatchObject({ status: "True" });
      expect((ks.status as { lastAppliedRevision?: string }).lastAppliedRevision).toBe(`main@sha1:${tip}`);
    });
    const after = await get(PG_PATH);
    expect(after.metadata.uid).toBe(before.metadata.uid);
    expect(managers(after)).toContain("kustomize-controller/Apply");
    expect(after.metadata.labels?.["kustomize.toolkit.fluxcd.io/name"]).toBe("cluster-1");
    expect(after.spec.users).toEqual({ main: ["superuser", "createdb"], "r-1-b": ["superuser"] });
  });

  it("then prune on: still the same object; a deprovision prunes it", async () => {
    const uid = (await get(PG_PATH)).metadata.uid;
    await applyKustomization(true);
    await eventually(async () => {
      const ks = await get(KUSTOMIZATION);
      expect((ks.status as { observedGeneration?: number }).observedGeneration).toBe(ks.metadata.generation);
      expect(fluxReady(ks)).toMatchObject({ status: "True" });
      const inventory = ((ks.status as { inventory?: { entries: { id: string }[] } }).inventory?.entries ?? []).map((e) => e.id);
      expect(inventory).toContain("sf-r-1_sapcp-r-1_acid.zalan.do_postgresql");
    });
    expect((await get(PG_PATH)).metadata.uid).toBe(uid);

    const query = { service_id: SF_SERVICE_ID, plan_id: SF_PLAN_ID };
    expect((await h.osb.unbind("r-1", "r-1-b", query)).status).toBe(200);
    const gone = await h.osb.deprovision("r-1", query, { query: { accepts_incomplete: "true" } });
    expect([200, 202]).toContain(gone.status);
    await kube.request("PATCH", "/apis/source.toolkit.fluxcd.io/v1/namespaces/flux-system/gitrepositories/cluster-1", { metadata: { annotations: { "reconcile.fluxcd.io/requestedAt": new Date().toISOString() } } }, { contentType: "application/merge-patch+json" });
    await eventually(async () => expect((await kube.request("GET", PG_PATH)).status).toBe(404));
  });
});
