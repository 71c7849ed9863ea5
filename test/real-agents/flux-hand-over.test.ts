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
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Harness } from "../support/broker-harness.js";
import { remoteHead } from "../support/git-fixtures.js";
import { EVENT_CEILING_MS, PROCESS_TEST_TIMEOUT_MS } from "../support/processes.js";
import { fluxCrdFiles, fluxReady, gitCredentialsSecret, startFlux, type RealFlux } from "../support/real-flux.js";
import { startRealKube, type RealKube } from "../support/real-kube.js";
import { runImport, SF_PLAN_ID, SF_SERVICE_ID } from "../support/service-fabrik-landscape.js";
import { managers, PG_PATH, SERVICE_FABRIK_CRD_FILES, startHandOver, type HandOver, type Live } from "./hand-over.js";

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const eventually = <T>(assertion: () => Promise<T>): Promise<T> => vi.waitFor(assertion, { timeout: EVENT_CEILING_MS, interval: 200 });
const KUSTOMIZATION = "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/cluster-1";

let kube: RealKube;
let flux: RealFlux;
let handOver: HandOver;
let h: Harness;
let args: string[];

const get = async (p: string) => (await kube.request("GET", p)).body as Live;

beforeAll(async () => {
  kube = await startRealKube();
  await kube.installCrds([...SERVICE_FABRIK_CRD_FILES, ...fluxCrdFiles()]);
  handOver = await startHandOver(kube, ["gitops-broker-instances", "flux-system"]);
  ({ h, args } = handOver);
  flux = await startFlux(kube);
});

afterAll(async () => {
  await handOver?.close();
  await flux?.close();
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
