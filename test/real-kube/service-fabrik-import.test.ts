/**
 * The import and hand-over of a Service Fabrik instance against a REAL kube-apiserver and etcd
 * (test/support/real-kube.ts), with Service Fabrik's CRDs (ours, test/support/crds: its module is
 * not served here) and a master that is also its own sister (SFCluster "1"). What only a real
 * server shows: client-node's discovery and paged lists of the CRD kinds, the merge patches
 * that drop the owner references and finalizers as the API server applies them, and a DELETE
 * with propagationPolicy Orphan, which the API server turns into the `orphan` finalizer for the
 * garbage collector (no kube-controller-manager runs here, so the resource stays terminating).
 */
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { startKubeApiServer, type KubeApiServer } from "../support/kube-api-server.js";
import { POSTGRESQL } from "../support/postgres-operator.js";
import { PROCESS_TEST_TIMEOUT_MS, trackedTempDir } from "../support/processes.js";
import { startRealKube, type KubeObject, type RealKube } from "../support/real-kube.js";
import { importArgs, registerServiceFabrik, runImport, sampleServiceFabrikCatalog, seedLandscape, SF_NAMESPACE } from "../support/service-fabrik-landscape.js";
import { writeFile } from "node:fs/promises";
import { stringify } from "yaml";

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const CRDS = path.resolve(import.meta.dirname, "../support/crds");
const PG = { apiVersion: "acid.zalan.do/v1", kind: "postgresql", plural: "postgresqls" };

let root: string;
let kube: RealKube;
let shaped: KubeApiServer;
let h: Harness;
let args: string[];

const importCli = (...extra: string[]) => runImport(["service-fabrik", ...args, ...extra]);

const get = async (p: string) => (await kube.request("GET", p)).body as KubeObject & { metadata: { uid: string; ownerReferences?: unknown[]; finalizers?: string[]; deletionTimestamp?: string } };

beforeAll(async () => {
  root = await trackedTempDir("sf-import-real-");
  kube = await startRealKube();
  await kube.installCrds(["postgresqls.acid.zalan.do.yaml", "sfserviceinstances.osb.servicefabrik.io.yaml", "sfservicebindings.osb.servicefabrik.io.yaml"].map((f) => path.join(CRDS, f)));
  // The landscape is shaped in a double as Service Fabrik's code wrote it, then created on the
  // real server: its resources first (their uids are the real server's), the objects they own after.
  shaped = await startKubeApiServer({ resources: [POSTGRESQL] });
  registerServiceFabrik(shaped);
  const { files, service, plan } = await sampleServiceFabrikCatalog();
  await seedLandscape({ master: shaped, sisters: { "1": shaped }, service, plan, instances: [{ id: "r-1", clusterId: "1", bindings: [{ id: "r-1-b" }] }] });
  for (const name of ["sf-r-1", SF_NAMESPACE]) await kube.apply({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
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
  for (const o of shaped.store.list(PG.apiVersion, PG.kind)) {
    const object = clean(o as KubeObject);
    const owners = (object.metadata.ownerReferences ?? []) as { uid: string }[];
    object.metadata.ownerReferences = owners.map((r) => ({ ...r, uid: uids.get(r.uid)! }));
    await kube.apply(object, "interoperator");
  }
  const labels = { app: "interoperator-provisioner" };
  await kube.apply({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "interoperator-provisioner", namespace: SF_NAMESPACE },
    spec: { replicas: 2, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: "manager", image: "servicefabrikjenkins/service-fabrik-interoperator:0.27.1" }] } } },
  });
  const kubeconfig = path.join(root, "admin.kubeconfig");
  await writeFile(kubeconfig, kube.kubeconfig(), { mode: 0o600 });
  h = await startHarness({
    files: {
      ...files,
      "registry/clusters/1.yaml": stringify({ apiVersion: "gitops-broker.io/v1alpha1", kind: "Cluster", metadata: { name: "1" }, spec: { namespace: "gitops-broker-instances", kubeconfig: { path: kubeconfig }, status: { mode: "commit" } } }),
    },
  });
  args = await importArgs(root, shaped, h.remoteUrl);
  args[args.indexOf("--master-kubeconfig") + 1] = kubeconfig;
});
afterAll(async () => {
  await h?.close();
  await shaped?.close();
  await kube?.close();
});

describe("import service-fabrik on a real kube-apiserver", () => {
  it("reads through discovery, imports, and hands over: no owner, no Service Fabrik finalizer, its resources deleted orphaning", async () => {
    const pgPath = "/apis/acid.zalan.do/v1/namespaces/sf-r-1/postgresqls/sapcp-r-1";
    const before = await get(pgPath);
    expect(before.metadata.ownerReferences).toHaveLength(2);

    const dry = await importCli();
    expect(dry.code).toBe(0);
    expect(dry.out).toContain("to import: 1 instance(s) with 1 binding(s)");
    expect(dry.out).toContain("- metadata.labels.OWNER_INTEROPERATOR_NAMESPACE");

    const real = await importCli("--yes", "--hand-over");
    expect(real.out).toContain("imported 1 instance(s) in 1 commit(s)");
    expect(real.out).toContain("no imported object is owned by a Service Fabrik resource");
    expect(real.out).not.toContain("FAILED");
    expect(real.code).toBe(0);

    const after = await get(pgPath);
    expect(after.metadata.uid).toBe(before.metadata.uid);
    expect(after.metadata.ownerReferences).toBeUndefined();
    expect((after.spec as { users: unknown }).users).toEqual({ main: ["superuser", "createdb"], "r-1-b": ["superuser"] });
    for (const p of ["/apis/osb.servicefabrik.io/v1alpha1/namespaces/sf-r-1/sfserviceinstances/r-1", "/apis/osb.servicefabrik.io/v1alpha1/namespaces/sf-r-1/sfservicebindings/r-1-b"]) {
      const sf = await get(p);
      // Deleted with propagationPolicy Orphan: the garbage collector's finalizer, none of Service Fabrik's.
      expect(sf.metadata.deletionTimestamp).toBeDefined();
      expect(sf.metadata.finalizers).toEqual(["orphan"]);
    }
    const deployment = await get(`/apis/apps/v1/namespaces/${SF_NAMESPACE}/deployments/interoperator-provisioner`);
    expect((deployment.spec as { replicas: number }).replicas).toBe(0);
  });
});
