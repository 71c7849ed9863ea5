/**
 * The import and hand-over of a Service Fabrik landscape against a REAL kube-apiserver and etcd
 * (test/support/real-kube.ts), with Service Fabrik's CRDs (ours, test/support/crds: its module is
 * not served here) and a master that is also its own sister (SFCluster "1"): a bound instance, one
 * whose id and binding id are no DNS-1123 names (Service Fabrik named their resources by their
 * sha224 hex and stored the binding's instance id so), a failed one and one with a plan the
 * catalog lacks. What only a real server shows: client-node's discovery and paged lists of the
 * CRD kinds, the merge patches that drop the owner references and finalizers as the API server
 * applies them, a DELETE with propagationPolicy Orphan, which the API server turns into the
 * `orphan` finalizer for the garbage collector (no kube-controller-manager runs here, so the
 * resource stays terminating), and RBAC refusing the hand-over to a read-only identity. Each run's
 * accounting and exit status: incomplete (3) while some stay with Service Fabrik, failed (1) when a
 * step is refused, complete (0) once nothing stays.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { stringify } from "yaml";
import { bindingRecordPath, instanceRecordPath, type BindingRecord, type InstanceRecord } from "../../src/repo/index.js";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { readRemoteFile } from "../support/git-fixtures.js";
import { startKubeApiServer, type KubeApiServer } from "../support/kube-api-server.js";
import { POSTGRESQL } from "../support/postgres-operator.js";
import { PROCESS_TEST_TIMEOUT_MS, trackedTempDir } from "../support/processes.js";
import { copyServiceFabrikOnto } from "../support/real-service-fabrik.js";
import { startRealKube, type KubeObject, type RealKube } from "../support/real-kube.js";
import { importArgs, registerServiceFabrik, runImport, sampleServiceFabrikCatalog, seedLandscape, sfName, SF_NAMESPACE, SF_PLAN_ID, SF_SERVICE_ID } from "../support/service-fabrik-landscape.js";
import { parse } from "yaml";

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const CRDS = path.resolve(import.meta.dirname, "../support/crds");
const SF = "/apis/osb.servicefabrik.io/v1alpha1";
const HASHED = "Real_Hashed-1";
const HASHED_BINDING = "Real_Binding-1";

let root: string;
let kube: RealKube;
let shaped: KubeApiServer;
let h: Harness;
let args: string[];
/** A kubeconfig that may get and list everything and change nothing. */
let readOnly: string;

const importCli = (...extra: string[]) => runImport(["service-fabrik", ...args, ...extra]);

const get = async (p: string) => (await kube.request("GET", p)).body as KubeObject & { metadata: { uid: string; ownerReferences?: unknown[]; finalizers?: string[]; deletionTimestamp?: string } };
const pgPath = (id: string) => `/apis/acid.zalan.do/v1/namespaces/sf-${sfName(id)}/postgresqls/sapcp-${sfName(id)}`;
const record = async <T>(file: string) => parse((await readRemoteFile(h.remoteDir, "main", file))!) as T;

beforeAll(async () => {
  root = await trackedTempDir("sf-import-real-");
  kube = await startRealKube();
  await kube.installCrds(["postgresqls.acid.zalan.do.yaml", "sfserviceinstances.osb.servicefabrik.io.yaml", "sfservicebindings.osb.servicefabrik.io.yaml"].map((f) => path.join(CRDS, f)));
  // The landscape is shaped in a double as Service Fabrik's code wrote it, then created on the
  // real server: its resources first (their uids are the real server's), the objects they own after.
  shaped = await startKubeApiServer({ resources: [POSTGRESQL] });
  registerServiceFabrik(shaped);
  const { files, service, plan } = await sampleServiceFabrikCatalog();
  await seedLandscape({
    master: shaped,
    sisters: { "1": shaped },
    service,
    plan,
    instances: [
      { id: "r-1", clusterId: "1", bindings: [{ id: "r-1-b" }] },
      { id: HASHED, clusterId: "1", bindings: [{ id: HASHED_BINDING }] },
      { id: "r-2", clusterId: "1", state: "failed" },
      { id: "r-3", clusterId: "1", planId: "unknown-plan" },
    ],
  });
  await copyServiceFabrikOnto(shaped, kube);
  const labels = { app: "interoperator-provisioner" };
  await kube.apply({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "interoperator-provisioner", namespace: SF_NAMESPACE },
    spec: { replicas: 2, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: "manager", image: "servicefabrikjenkins/service-fabrik-interoperator:0.27.1" }] } } },
  });
  // A reader: RBAC lets it get and list every resource, nothing else.
  await kube.apply({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "reader", namespace: "default" } });
  await kube.apply({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "read-all" }, rules: [{ apiGroups: ["*"], resources: ["*"], verbs: ["get", "list", "watch"] }] });
  await kube.apply({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: "reader-read-all" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "read-all" },
    subjects: [{ kind: "ServiceAccount", name: "reader", namespace: "default" }],
  });
  readOnly = path.join(root, "reader.kubeconfig");
  await writeFile(readOnly, kube.kubeconfig({ token: await kube.tokenFor("default", "reader") }), { mode: 0o600 });
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
  it("dry run: every instance and binding accounted for, the hashed binding matched to its instance; exit 3 (some stay with Service Fabrik)", async () => {
    // One object a list request: the real server's paging, followed to the last page.
    const dry = await importCli("--page-size", "1");
    expect(dry.out).toContain("to import: 2 instance(s) with 2 binding(s)");
    expect(dry.out).toContain("  SFServiceInstances: 4 found = 2 to import + 0 already imported + 1 refused + 1 skipped\n  SFServiceBindings: 2 found = 2 to import + 0 already imported + 0 refused + 0 skipped\n");
    expect(dry.out).toContain("r-2 (cluster 1, plan 39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88): failed in Service Fabrik (status.state failed)");
    expect(dry.out).toContain(`r-3 (cluster 1, plan unknown-plan): plan_id "unknown-plan" is not a plan of service postgresql`);
    expect(dry.out).toContain("- metadata.labels.OWNER_INTEROPERATOR_NAMESPACE");
    // The hashed binding's user is rendered by its binding: no live-only user.
    expect(dry.out).not.toMatch(/- spec\.users\./);
    expect(dry.code).toBe(3);
  });

  it("a hand-over the API server refuses fails (exit 1) after the import, read back from the remote, and leaves every owner in place", async () => {
    const withReader = [...args];
    withReader[withReader.indexOf("--master-kubeconfig") + 1] = readOnly;
    const run = await runImport(["service-fabrik", ...withReader, "--yes", "--hand-over"]);
    expect(run.out).toMatch(/imported 2 instance\(s\) with 2 binding\(s\) in 1 commit\(s\), read back from the remote \([0-9a-f]{40}\)\n/);
    expect(run.out).toContain(`\n       FAILED: Service Fabrik's master (${kube.url}): patch apps/v1 Deployment ${SF_NAMESPACE}/interoperator-provisioner: HTTP 403: deployments.apps "interoperator-provisioner" is forbidden`);
    // Each imported object is still owned by its instance's and its binding's resources.
    expect(run.out).toContain("imported objects owned by a Service Fabrik resource: 4");
    expect(run.out).toMatch(/hand-over failed: 1 step\(s\) failed; 4 imported object\(s\) owned by a Service Fabrik resource; 1 controller\(s\) of Service Fabrik running/);
    expect(run.code).toBe(1);
    expect((await get(pgPath("r-1"))).metadata.ownerReferences).toHaveLength(2);
  });

  it("hands over with the master's writable kubeconfig: no owner, no Service Fabrik finalizer, its resources deleted orphaning; exit 3 while r-2 and r-3 stay", async () => {
    const before = await get(pgPath("r-1"));
    const hashedBefore = await get(pgPath(HASHED));
    expect(hashedBefore.metadata.ownerReferences).toHaveLength(2);

    const real = await importCli("--yes", "--hand-over");
    expect(real.out).toContain("imported 0 instance(s) with 0 binding(s) in 0 commit(s)");
    expect(real.out).toContain("  SFServiceInstances: 4 found = 0 imported + 2 already imported + 1 refused + 1 skipped\n");
    expect(real.out).not.toContain("FAILED");
    expect(real.out).toContain("  imported in the GitOps repository: 2 instance(s), 2 binding(s), naming 2 object(s)\n  imported objects owned by a Service Fabrik resource: 0\n");
    expect(real.out).toContain("  staying with Service Fabrik: 2 instance(s), 0 binding(s)\n");
    expect(real.out).toContain("hand-over incomplete: no imported object is owned by a Service Fabrik resource; 2 instance(s) and 0 binding(s) stay with Service Fabrik");
    expect(real.code).toBe(3);

    const after = await get(pgPath("r-1"));
    expect(after.metadata.uid).toBe(before.metadata.uid);
    expect(after.metadata.ownerReferences).toBeUndefined();
    expect((after.spec as { users: unknown }).users).toEqual({ main: ["superuser", "createdb"], "r-1-b": ["superuser"] });
    const hashed = await get(pgPath(HASHED));
    expect([hashed.metadata.uid, hashed.metadata.ownerReferences]).toEqual([hashedBefore.metadata.uid, undefined]);
    for (const p of [
      `${SF}/namespaces/sf-r-1/sfserviceinstances/r-1`,
      `${SF}/namespaces/sf-r-1/sfservicebindings/r-1-b`,
      `${SF}/namespaces/sf-${sfName(HASHED)}/sfserviceinstances/${sfName(HASHED)}`,
      `${SF}/namespaces/sf-${sfName(HASHED)}/sfservicebindings/${sfName(HASHED_BINDING)}`,
    ]) {
      const sf = await get(p);
      // Deleted with propagationPolicy Orphan: the garbage collector's finalizer, none of Service Fabrik's.
      expect(sf.metadata.deletionTimestamp, p).toBeDefined();
      expect(sf.metadata.finalizers, p).toEqual(["orphan"]);
    }
    // Not imported: Service Fabrik keeps them.
    expect((await get(`${SF}/namespaces/sf-r-2/sfserviceinstances/r-2`)).metadata.deletionTimestamp).toBeUndefined();
    expect((await get(pgPath("r-2"))).metadata.ownerReferences).toHaveLength(1);
    const deployment = await get(`/apis/apps/v1/namespaces/${SF_NAMESPACE}/deployments/interoperator-provisioner`);
    expect((deployment.spec as { replicas: number }).replicas).toBe(0);

    // The hashed instance and binding are in the repository under their ids.
    const hb = await record<BindingRecord>(bindingRecordPath(HASHED, HASHED_BINDING));
    expect([hb.spec.bindingId, hb.spec.instanceId]).toEqual([HASHED_BINDING, HASHED]);
  });

  it("an imported instance's record is the one the broker's provision of the same request writes, but for its import entry and Service Fabrik's namespace", async () => {
    const context = { platform: "cloudfoundry", organization_guid: "org-guid-1", space_guid: "space-guid-1" };
    // The sample plan's schema wants `foo`; Service Fabrik's instance was provisioned with none.
    const body = { service_id: SF_SERVICE_ID, plan_id: SF_PLAN_ID, organization_guid: "org-guid-1", space_guid: "space-guid-1", context, parameters: { foo: "bar" } };
    const provision = await h.osb.provision("p-1", body, { query: { accepts_incomplete: "true" } });
    expect([provision.status, provision.body.description]).toEqual([202, undefined]);
    const provisioned = await record<InstanceRecord>(instanceRecordPath("p-1"));
    const imported = await record<InstanceRecord>(instanceRecordPath("r-1"));
    const rest = (r: InstanceRecord) => {
      const { instanceId: _i, clusterId: _c, namespace: _n, originatingIdentity: _o, parameters: _p, ...spec } = r.spec;
      return { apiVersion: r.apiVersion, kind: r.kind, spec, keys: Object.keys(r.spec).filter((k) => !["namespace", "originatingIdentity"].includes(k)) };
    };
    expect(rest(imported)).toEqual(rest(provisioned));
    expect([imported.spec.parameters, provisioned.spec.parameters]).toEqual([{}, { foo: "bar" }]);
    expect(imported.status.operations.map((o) => o.action)).toEqual(["import"]);
    expect(provisioned.status.operations.map((o) => o.action)).toEqual(["provision"]);
    // The imported binding answers, and its unbind takes its user back.
    const binding = await h.osb.getBinding(HASHED, HASHED_BINDING);
    expect(binding.status).toBe(200);
    expect((await h.osb.unbind(HASHED, HASHED_BINDING, { service_id: SF_SERVICE_ID, plan_id: SF_PLAN_ID })).status).toBe(200);
  });

  it("once Service Fabrik keeps nothing, the hand-over is complete (exit 0) by the fresh lists", async () => {
    // The operator deprovisioned r-2 and r-3 in Service Fabrik (here: finalizers off, deleted).
    for (const id of ["r-2", "r-3"]) {
      const p = `${SF}/namespaces/sf-${id}/sfserviceinstances/${id}`;
      expect((await kube.request("PATCH", p, { metadata: { finalizers: null } }, { contentType: "application/merge-patch+json" })).status).toBe(200);
      expect((await kube.request("DELETE", p)).status).toBe(200);
    }
    const done = await importCli("--yes", "--hand-over", "--page-size", "1");
    expect(done.out).toContain("  SFServiceInstances: 2 found = 0 imported + 2 already imported + 0 refused + 0 skipped\n");
    expect(done.out).toContain("  staying with Service Fabrik: 0 instance(s), 0 binding(s)\n");
    expect(done.out).toContain("hand-over complete: no imported object is owned by a Service Fabrik resource; nothing stays with Service Fabrik");
    expect(done.code).toBe(0);
  });
});
