/**
 * The hand-over of a Service Fabrik landscape with Kubernetes' own garbage collector running
 * (kube-controller-manager from the same release as kube-apiserver, ADR 0031), on real
 * kube-apiservers: the master, which is also the sister `west`, and the sister `east`
 * (test/support/real-service-fabrik.ts). The hand-over's safety rests on what the collector does
 * with owner references, finalizers and `propagationPolicy: Orphan`; here it does it:
 * - the import's hand-over loses nothing: every imported object keeps its uid, and Service
 *   Fabrik's resources go (the collector removes the `orphan` finalizer once it has orphaned their
 *   dependents);
 * - a hand-over made by hand with one owner reference left and its owner deleted in the
 *   background (kubectl's default) loses that object; either mistake alone is caught by the other
 *   step (the collector strips the reference of an owner deleted orphaning; an object without
 *   owner is never collected);
 * - Service Fabrik uninstalled afterwards (its finalizers forced off, its CRDs deleted) takes the
 *   objects of the instances that stayed with it and none of the imported ones.
 * "Lost" and "kept" are read after a collector barrier (RealKube.collectorBarrier): a canary
 * deleted after the deletions must have been collected.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { PROCESS_TEST_TIMEOUT_MS, waitUntil } from "../support/processes.js";
import type { KubeObject, RealKube } from "../support/real-kube.js";
import { SF_CRD_NAMES, startRealLandscape, type RealLandscape, type SisterId } from "../support/real-service-fabrik.js";
import { runImport, type SfInstanceSpec } from "../support/service-fabrik-landscape.js";

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const LANDSCAPE: SfInstanceSpec[] = [
  { id: "i-1", clusterId: "east", bindings: [{ id: "i-1-b1" }, { id: "i-1-b2" }] },
  { id: "i-2", clusterId: "west", bindings: [{ id: "i-2-b1" }] },
  { id: "i-3", clusterId: "east" },
  { id: "i-4", clusterId: "west" },
  // An operation in progress: not imported, they stay with Service Fabrik (owned, finalizers on).
  { id: "k-1", clusterId: "east", state: "in progress", bindings: [{ id: "k-1-b" }] },
  { id: "k-2", clusterId: "west", state: "in progress", bindings: [{ id: "k-2-b" }] },
  { id: "k-3", clusterId: "east", state: "in progress", bindings: [{ id: "k-3-b" }] },
  { id: "k-4", clusterId: "west", state: "in progress" },
];
const IMPORTED = LANDSCAPE.filter((s) => s.state === undefined);
const OSB = "/apis/osb.servicefabrik.io/v1alpha1";

let land: RealLandscape;
/** The uid of each instance's postgresql as Service Fabrik's provisioner created it. */
const uidOf = new Map<string, string>();

const spec = (id: string) => LANDSCAPE.find((s) => s.id === id)!;
const sister = (id: string) => land.sister(spec(id).clusterId as SisterId);
const pgPath = (id: string) => `/apis/acid.zalan.do/v1/namespaces/sf-${id}/postgresqls/sapcp-${id}`;
const instancePath = (id: string) => `${OSB}/namespaces/sf-${id}/sfserviceinstances/${id}`;
const bindingPath = (id: string, b: string) => `${OSB}/namespaces/sf-${id}/sfservicebindings/${b}`;
/** Every Service Fabrik resource of an instance: the master's and the sister's replicas (one when the sister is the master). */
const resourcesOf = (id: string): { kube: RealKube; path: string }[] => {
  const paths = [instancePath(id), ...(spec(id).bindings ?? []).map((b) => bindingPath(id, b.id))];
  const kubes = [...new Set([land.master, sister(id)])];
  return kubes.flatMap((kube) => paths.map((path) => ({ kube, path })));
};
const get = async (kube: RealKube, path: string) => {
  const res = await kube.request("GET", path);
  return res.status === 404 ? undefined : (res.body as KubeObject & { metadata: { uid: string; ownerReferences?: { kind: string; name: string }[] } });
};
const mergePatch = async (kube: RealKube, path: string, patch: unknown) => {
  const res = await kube.request("PATCH", path, patch, { contentType: "application/merge-patch+json" });
  expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
};
const remove = async (kube: RealKube, path: string, propagationPolicy: "Orphan" | "Background") => {
  const res = await kube.request("DELETE", path, { apiVersion: "v1", kind: "DeleteOptions", propagationPolicy });
  expect([200, 202], `${path}: ${JSON.stringify(res.body)}`).toContain(res.status);
};
const allGone = (resources: { kube: RealKube; path: string }[], what: string) =>
  waitUntil(async () => (await Promise.all(resources.map(async (r) => (await get(r.kube, r.path)) === undefined))).every(Boolean), what, { intervalMs: 200 });
const barrier = () => Promise.all([land.master.collectorBarrier(), land.east.collectorBarrier()]);

beforeAll(async () => {
  land = await startRealLandscape("sf-gc-", LANDSCAPE, { controllerManager: true });
  for (const s of LANDSCAPE) uidOf.set(s.id, String(land.applied.get(s.id)![0]!.metadata.uid));
});
afterAll(async () => {
  await land?.close();
});

describe("the hand-over with Kubernetes' garbage collector running", () => {
  it("loses nothing: every imported object keeps its uid, Service Fabrik's resources of the imported instances go", async () => {
    for (const s of IMPORTED) expect((await get(sister(s.id), pgPath(s.id)))?.metadata.ownerReferences?.length, s.id).toBe(1 + (s.bindings?.length ?? 0));

    const { code, out } = await runImport(["service-fabrik", ...land.args, "--yes", "--hand-over"]);
    expect(out).not.toContain("FAILED");
    expect(out).toContain("hand-over incomplete: no imported object is owned by a Service Fabrik resource; 4 instance(s) and 3 binding(s) stay with Service Fabrik");
    expect(code).toBe(3);
    // Deleted orphaning: the API server put the `orphan` finalizer on, the collector took it off.
    await allGone(IMPORTED.flatMap((s) => resourcesOf(s.id)), "every Service Fabrik resource of an imported instance gone");
    await barrier();
    for (const s of IMPORTED) {
      const pg = await get(sister(s.id), pgPath(s.id));
      expect([s.id, pg?.metadata.uid, pg?.metadata.ownerReferences]).toEqual([s.id, uidOf.get(s.id), undefined]);
    }
    // The instances not imported keep their owners.
    for (const id of ["k-1", "k-2", "k-3", "k-4"]) expect((await get(sister(id), pgPath(id)))?.metadata.ownerReferences?.length, id).toBeGreaterThan(0);
  });

  it("a hand-over that leaves one owner reference and deletes its owner in the background loses that object; either step done right keeps it", async () => {
    const sfOwnerRefs = async (id: string) => (await get(sister(id), pgPath(id)))!.metadata.ownerReferences!;
    // Step 1 is done (the import's hand-over scaled the controllers down). Steps 2 to 4 by hand:
    // k-1 keeps its binding's reference, which is deleted in the background;
    // k-2 keeps its binding's reference, deleted orphaning (the import's step 4);
    // k-3 loses every reference (the import's step 2), deleted in the background.
    for (const id of ["k-1", "k-2"]) {
      const kept = (await sfOwnerRefs(id)).filter((o) => o.kind === "SFServiceBinding");
      expect(kept).toHaveLength(1);
      await mergePatch(sister(id), pgPath(id), { metadata: { ownerReferences: kept } });
    }
    await mergePatch(sister("k-3"), pgPath("k-3"), { metadata: { ownerReferences: null } });
    const policy = { "k-1": "Background", "k-2": "Orphan", "k-3": "Background" } as const;
    for (const id of ["k-1", "k-2", "k-3"] as const) {
      const owners = [bindingPath(id, `${id}-b`), instancePath(id)].map((path) => ({ kube: sister(id), path }));
      for (const { kube, path } of owners) await mergePatch(kube, path, { metadata: { finalizers: null } });
      for (const { kube, path } of owners) await remove(kube, path, policy[id]);
      await allGone(owners, `${id}'s Service Fabrik resources on its sister gone`);
    }
    await barrier();
    expect(await get(sister("k-1"), pgPath("k-1"))).toBeUndefined();
    for (const id of ["k-2", "k-3"]) {
      const pg = await get(sister(id), pgPath(id));
      expect([id, pg?.metadata.uid, pg?.metadata.ownerReferences]).toEqual([id, uidOf.get(id), undefined]);
    }
  });

  it("Service Fabrik uninstalled afterwards (finalizers forced off, CRDs deleted) takes what stayed with it, nothing imported", async () => {
    for (const kube of [land.master, land.east]) {
      for (const plural of ["sfservicebindings", "sfserviceinstances"]) {
        for (const o of await kube.listAll(`${OSB}/${plural}`)) {
          await mergePatch(kube, `${OSB}/namespaces/${String(o.metadata.namespace)}/${plural}/${o.metadata.name}`, { metadata: { finalizers: null } });
        }
      }
      for (const crd of SF_CRD_NAMES) await remove(kube, `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}`, "Background");
    }
    await allGone(
      [land.master, land.east].flatMap((kube) => SF_CRD_NAMES.map((crd) => ({ kube, path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}` }))),
      "Service Fabrik's CRDs gone",
    );
    await barrier();
    // k-4 was still owned by its SFServiceInstance: the collector deleted it with its owner.
    expect(await get(sister("k-4"), pgPath("k-4"))).toBeUndefined();
    for (const id of [...IMPORTED.map((s) => s.id), "k-2", "k-3"]) expect((await get(sister(id), pgPath(id)))?.metadata.uid, id).toBe(uidOf.get(id));
  });
});
