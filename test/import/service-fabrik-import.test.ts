/**
 * `gitops-broker import service-fabrik` against a landscape in API-server doubles shaped as
 * Service Fabrik's code wrote it (test/support/service-fabrik-landscape.ts): a master and two
 * sister clusters, bound and unbound instances, one in progress, one failed, one with an unknown
 * plan, one whose cluster is not in the registry, one whose objects carry fields the templates no
 * longer render, one whose applied object has another name than the templates render, one whose
 * id and binding ids are no DNS-1123 names (Service Fabrik named them by their sha224 and stored
 * the binding's instance id so), and a binding whose instance is gone. The real broker serves the
 * GitOps remote over smart HTTP; the import runs as the CLI command with its own clone. Dry run
 * with its accounting, real run read back from the remote, a second run; the hand-over and its
 * verification from fresh lists, with its exit status (complete 0, failed 1, incomplete 3); the
 * sync of the import commit; then every imported instance through OSB.
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { bindingRecordPath, instanceManifestDir, instanceRecordPath, type BindingRecord, type InstanceRecord } from "../../src/repo/index.js";
import { loadCatalog, loadClusters } from "../../src/catalog/index.js";
import { createGitWriter } from "../../src/gitwriter/index.js";
import { routedWriter } from "../../src/stores/index.js";
import { account, clusterClient, commitImport, planImport, readBack, readLandscape } from "../../src/import/index.js";
import { ImportAccountingError } from "../../src/errors/index.js";
import { silentLogger } from "../../src/log/index.js";
import { remoteFiles } from "../broker/helpers.js";
import { AUTHOR, type Harness } from "../support/broker-harness.js";
import { trackedTempDir } from "../support/processes.js";
import { readRemoteFile, remoteHead } from "../support/git-fixtures.js";
import { runImport, sfName, SF_NAMESPACE, SF_PLAN_ID as PLAN_ID, SF_SERVICE_ID as SERVICE_ID, startImportLandscape, type ImportLandscape, type SfInstanceSpec } from "../support/service-fabrik-landscape.js";
import type { SisterCluster } from "../support/sister-cluster.js";
import type { KubeApiServer, KubeObject } from "../support/kube-api-server.js";
import { createSyncAgent } from "../support/sync-agent.js";

const run = promisify(execFile);
const ASYNC = { accepts_incomplete: "true" };

/** Not DNS-1123 names: Service Fabrik named their resources by their sha224 hex (sfName). */
const HASHED = "Hashed_Instance-1";
const HASHED_BINDING = "Hashed_Binding-1";

const LANDSCAPE: SfInstanceSpec[] = [
  { id: HASHED, clusterId: "east", bindings: [{ id: HASHED_BINDING }, { id: "hb-2" }] },
  { id: "a-1", clusterId: "east", bindings: [{ id: "a-1-b1" }, { id: "a-1-b2" }] },
  { id: "a-2", clusterId: "east" },
  { id: "a-3", clusterId: "east", drift: { patroni: { ttl: 30 } } },
  { id: "a-4", clusterId: "east", state: "in progress" },
  { id: "a-5", clusterId: "east", state: "failed" },
  { id: "a-6", clusterId: "east", planId: "unknown-plan" },
  { id: "a-7", clusterId: "east", namespace: "sf-services" },
  { id: "a-8", clusterId: "east", renamed: true },
  { id: "w-1", clusterId: "west", bindings: [{ id: "w-1-b1" }, { id: "w-1-b2", state: "failed" }] },
  { id: "w-2", clusterId: "west" },
  { id: "w-3", clusterId: "west", bindings: [{ id: "w-3-b1", state: "in_queue" }] },
  { id: "g-1", clusterId: "gone" },
];
const IMPORTED = [HASHED, "a-1", "a-2", "a-3", "a-7", "w-1", "w-2"];
const NOT_IMPORTED = ["a-4", "a-5", "a-6", "a-8", "w-3", "g-1"];

let land: ImportLandscape;
let master: KubeApiServer;
let east: SisterCluster;
let west: SisterCluster;
let h: Harness;

const importCli = (...extra: string[]) => runImport(["service-fabrik", ...land.args, ...extra]);

const show = (file: string) => readRemoteFile(h.remoteDir, "main", file);
const record = async <T>(file: string) => parse((await show(file))!) as T;
const postgresqlFile = (cluster: string, id: string) => `${instanceManifestDir(cluster, id)}/postgresql-sapcp-${sfName(id)}.yaml`;

beforeAll(async () => {
  land = await startImportLandscape("sf-import-", LANDSCAPE);
  ({ master, east, west, h } = land);
  // A binding whose instance is not on the master (deleted there by hand): no instance to import it with.
  master.store.upsert({
    apiVersion: "osb.servicefabrik.io/v1alpha1",
    kind: "SFServiceBinding",
    metadata: { name: "o-b1", namespace: "sf-o-1", labels: { instance_guid: "o-1" } },
    spec: { id: "o-b1", instanceId: "o-1", serviceId: SERVICE_ID, planId: PLAN_ID },
    status: { state: "succeeded" },
  });
}, 120_000);
afterAll(async () => {
  await land?.close();
});

describe("gitops-broker import service-fabrik", () => {
  it("dry run: prints the instances by cluster and plan, what is refused or skipped and why, the accounting, the differences; writes nothing; exit 3", async () => {
    const before = await remoteHead(h.remoteDir);
    // Two objects a list request: the double pages as kube-apiserver does, every page is read.
    const { code, out } = await importCli("--page-size", "2");
    // Something stays with Service Fabrik: incomplete.
    expect(code).toBe(3);
    expect(out).toContain("to import: 7 instance(s) with 5 binding(s)");
    expect(out).toMatch(/ {2}cluster east:\n {4}postgresql\/v9\.6-xxsmall: 5\n {2}cluster west:\n {4}postgresql\/v9\.6-xxsmall: 2\n/);
    expect(out).toContain(`a-6 (cluster east, plan unknown-plan): plan_id "unknown-plan" is not a plan of service postgresql`);
    expect(out).toContain("a-8 (cluster east, plan v9.6-xxsmall): renders objects Service Fabrik did not apply: acid.zalan.do/v1 postgresql sf-a-8/sapcp-a-8; does not render objects Service Fabrik applied: acid.zalan.do/v1 postgresql sf-a-8/old-sapcp-a-8");
    expect(out).toContain("g-1 (cluster gone, plan 39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88): cluster gone is not in the cluster registry");
    expect(out).toContain("a-4 (cluster east, plan 39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88): an operation is in progress in Service Fabrik (status.state in progress)");
    expect(out).toContain("a-5 (cluster east, plan 39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88): failed in Service Fabrik (status.state failed)");
    expect(out).toContain("w-3 (cluster west, plan 39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88): binding w-3-b1 has an operation in progress in Service Fabrik (status.state in_queue)");
    expect(out).toContain("w-1 binding w-1-b2 (cluster west, plan 39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88): failed in Service Fabrik (status.state failed): not a binding to import");
    expect(out).toContain("w-3 binding w-3-b1 (cluster west, plan 39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88): an operation is in progress in Service Fabrik (status.state in_queue)");
    expect(out).toContain("o-1 binding o-b1: its instance o-1 is not among the master's SFServiceInstances");
    // Every instance and binding the master lists, accounted for.
    expect(out).toContain(`on the master ${master.url}:\n  SFServiceInstances: 13 found = 7 to import + 0 already imported + 3 refused + 3 skipped\n  SFServiceBindings: 8 found = 5 to import + 0 already imported + 1 refused + 2 skipped\n`);
    // a-3's live object carries a field its template no longer renders; every object SF's label.
    expect(out).toMatch(/ {2}a-3:\n {4}acid\.zalan\.do\/v1 postgresql sf-a-3\/sapcp-a-3:\n(?: {6}.*\n)*? {6}- spec\.patroni: \{"ttl":30\} \(live only/);
    expect(out).toContain(`- metadata.labels.OWNER_INTEROPERATOR_NAMESPACE: "interoperator" (live only`);
    expect(out).toContain(`+ metadata.labels["app.kubernetes.io/managed-by"]: "gitops-broker" (rendered, not live`);
    // The users of the hashed bindings are the bindings', as Service Fabrik's bind template set them: no difference.
    expect(out).not.toMatch(/- spec\.users\./);
    expect(out).toContain("dry run: nothing was written");
    expect(out).toContain("hand-over steps (not performed");
    expect(out).toContain("incomplete: 9 instance(s) and binding(s) stay with Service Fabrik");
    expect(await remoteHead(h.remoteDir)).toBe(before);
  });

  it("--differences summary: a count per object kind and kind of difference, not a line per instance", async () => {
    const { code, out } = await importCli("--differences", "summary");
    expect(code).toBe(3);
    const summary = out.slice(out.indexOf("differences between"), out.indexOf("on the master"));
    expect(summary).toContain("differences between what the import renders and what is live: 7 instance(s), 7 object(s)\n  acid.zalan.do/v1 postgresql: 7 object(s)\n");
    expect(summary).toContain(`      7 x metadata.labels["gitops-broker.io/instance-id"]\n`);
    expect(summary).toContain("    - live only (not rendered; an apply keeps it): 8\n      7 x metadata.labels.OWNER_INTEROPERATOR_NAMESPACE\n      1 x spec.patroni\n");
    expect(summary.split("\n").filter((l) => l.includes("gitops-broker.io/instance-id"))).toHaveLength(1);
    expect(summary).not.toContain("a-1");
  });

  it("continues an interrupted run, in batches with Reason, Import-Source and one Instance-Id per instance; nothing of what does not map is written; a second run commits nothing", async () => {
    const before = await remoteHead(h.remoteDir);
    // A run interrupted after its first batch (HASHED and a-1): the import's own parts, on a clone of ours.
    const writer = createGitWriter({ gitdir: path.join(await trackedTempDir("sf-import-interrupted-"), "work.git"), remoteUrl: h.remoteUrl, branch: "main", author: AUTHOR, logger: silentLogger() });
    await writer.start();
    const tip = writer.snapshot();
    const client = (server: KubeApiServer) => clusterClient(server.loadKubeConfig(), "test");
    const sisters: Record<string, KubeApiServer> = { east: east.server, west: west.server };
    const landscape = await readLandscape(await client(master), async (id) => (sisters[id] ? client(sisters[id]) : undefined));
    const planned = await planImport({ landscape, catalog: (await loadCatalog(tip)).catalog, clusters: (await loadClusters(tip)).clusters, base: tip, now: () => new Date(), newId: randomUUID });
    expect(planned.imported.map((i) => i.instanceId)).toEqual(IMPORTED);
    expect(planned.imported[0]!.bindingIds).toEqual([HASHED_BINDING, "hb-2"]);
    await commitImport(routedWriter(writer), { ...planned, imported: planned.imported.slice(0, 2) }, { batchSize: 2, brokerVersion: "test" });
    // Read back from the remote, what the interrupted run did not push is unaccounted: the command would fail, naming it.
    await writer.refresh();
    const back = await readBack(writer.snapshot(), planned);
    expect(back.instances).toEqual([HASHED, "a-1"]);
    expect(back.missing).toEqual(IMPORTED.slice(2));
    expect(() => account(landscape, planned, back)).toThrow(ImportAccountingError);
    expect(() => account(landscape, planned, back)).toThrow(/5 planned and pushed, not on the remote when read back \([0-9a-f]{40}\): a-2, a-3, a-7, w-1, w-2/);
    await writer.close();

    const { code, out } = await importCli("--yes", "--batch-size", "5");
    expect(code).toBe(3);
    expect(out).toContain("already in the GitOps repository: 2 instance(s) with 4 binding(s)");
    expect(out).toMatch(/imported 5 instance\(s\) with 1 binding\(s\) in 1 commit\(s\), read back from the remote \([0-9a-f]{40}\)\n/);
    expect(out).toMatch(/imported as read back from the remote \([0-9a-f]{40}\):\n {2}SFServiceInstances: 13 found = 5 imported \+ 2 already imported \+ 3 refused \+ 3 skipped\n {2}SFServiceBindings: 8 found = 1 imported \+ 4 already imported \+ 1 refused \+ 2 skipped\n/);
    const { stdout: log } = await run("git", ["log", "--format=%B%x00", `${before}..main`], { cwd: h.remoteDir });
    const messages = log.split("\0").map((m) => m.trim()).filter(Boolean).reverse();
    expect(messages).toHaveLength(2);
    expect(messages[0]).toMatch(/^import 2 instance\(s\) and 4 binding\(s\) from Service Fabrik\n/);
    expect(messages[1]).toMatch(/^import 5 instance\(s\) and 1 binding\(s\) from Service Fabrik\n/);
    expect(messages[0]).toContain("Reason: import\n");
    expect(messages[0]).toContain(`Import-Source: service-fabrik ${master.url}`);
    const ids = messages.flatMap((m) => [...m.matchAll(/^Instance-Id: (.*)$/gm)].map((x) => x[1]));
    expect(ids).toEqual(IMPORTED);

    const a1 = await record<InstanceRecord>(instanceRecordPath("a-1"));
    expect(a1.metadata.namespace).toBe("sf-a-1");
    expect(a1.spec).toMatchObject({ instanceId: "a-1", serviceId: SERVICE_ID, planId: PLAN_ID, clusterId: "east", namespace: "sf-a-1", organizationGuid: "org-guid-1", spaceGuid: "space-guid-1" });
    expect(a1.spec.context).toEqual({ platform: "cloudfoundry", organization_guid: "org-guid-1", space_guid: "space-guid-1" });
    expect(a1.status.operations.map((o) => o.action)).toEqual(["import"]);
    const b1 = await record<BindingRecord>(bindingRecordPath("a-1", "a-1-b1"));
    expect(b1.status.operations.map((o) => o.action)).toEqual(["import"]);
    expect(b1.spec.appGuid).toBe("app-a-1-b1");
    expect(b1.spec.instancePatches).toEqual([{ target: { apiVersion: "acid.zalan.do/v1", kind: "postgresql", name: "sapcp-a-1" }, patch: { spec: { users: { "a-1-b1": ["superuser"] } } } }]);
    const pg = parse((await show(postgresqlFile("east", "a-1")))!) as KubeObject;
    expect(pg.metadata.namespace).toBe("sf-a-1");
    expect((pg.spec as { users: unknown }).users).toEqual({ main: ["superuser", "createdb"], "a-1-b1": ["superuser"], "a-1-b2": ["superuser"] });
    expect((await record<InstanceRecord>(instanceRecordPath("a-7"))).spec.namespace).toBe("sf-services");
    // The instance and binding whose ids are no DNS-1123 names: under their ids, in Service Fabrik's namespace, each user its binding's.
    const hashed = await record<InstanceRecord>(instanceRecordPath(HASHED));
    expect([hashed.spec.instanceId, hashed.metadata.name, hashed.spec.namespace]).toEqual([HASHED, sfName(HASHED), `sf-${sfName(HASHED)}`]);
    const hb = await record<BindingRecord>(bindingRecordPath(HASHED, HASHED_BINDING));
    expect([hb.spec.bindingId, hb.spec.instanceId, hb.metadata.name]).toEqual([HASHED_BINDING, HASHED, sfName(HASHED_BINDING)]);
    const hashedPg = parse((await show(postgresqlFile("east", HASHED)))!) as KubeObject;
    expect((hashedPg.spec as { users: unknown }).users).toEqual({ main: ["superuser", "createdb"], [sfName(HASHED_BINDING)]: ["superuser"], "hb-2": ["superuser"] });
    // No credential: the bind response stays on the master.
    const files = await remoteFiles(h.remoteDir);
    expect(files.filter((f) => /secret/i.test(f))).toEqual([]);
    for (const id of NOT_IMPORTED) {
      expect(await show(instanceRecordPath(id)), id).toBeNull();
      expect(files.some((f) => f.startsWith(`${instanceManifestDir("east", id)}/`) || f.startsWith(`${instanceManifestDir("west", id)}/`)), id).toBe(false);
    }
    expect(await show("clusters/east/namespace.yaml")).toBeNull();

    const head = await remoteHead(h.remoteDir);
    const again = await importCli("--yes");
    expect(again.code).toBe(3);
    expect(again.out).toContain("to import: 0 instance(s)");
    expect(again.out).toContain("already in the GitOps repository: 7 instance(s) with 5 binding(s)");
    expect(again.out).toContain("imported 0 instance(s) with 0 binding(s) in 0 commit(s)");
    expect(again.out).toContain("SFServiceInstances: 13 found = 0 imported + 7 already imported + 3 refused + 3 skipped");
    expect(await remoteHead(h.remoteDir)).toBe(head);
  });

  it("hands the objects over: stops the controllers, removes owner references and finalizers, deletes SF's resources orphaning them; verifies from fresh lists; exit 3 while some stay with SF", async () => {
    const owned = (server: KubeApiServer) => server.store.list("acid.zalan.do/v1", "postgresql").filter((o) => (o.metadata.ownerReferences as unknown[] | undefined)?.length);
    expect(owned(east.server).length).toBeGreaterThan(0);
    const listed = await importCli();
    expect(listed.out).toMatch(/1\. stop Service Fabrik's controllers: 4 command\(s\)/);
    expect(listed.out).toMatch(/2\. remove its owner references from the imported objects: 7 command\(s\)/);
    // 7 instances and 5 bindings, each on the master and as a sister's replica.
    expect(listed.out).toMatch(/3\. remove its finalizers from its resources: 24 command\(s\)/);
    expect(listed.out).toMatch(/4\. delete its resources, orphaning their dependents: 24 command\(s\)/);
    expect(listed.out).toContain(`kubectl --server ${east.server.url} -n sf-a-1 patch postgresql.acid.zalan.do sapcp-a-1 --type merge -p '{"metadata":{"ownerReferences":null}}'`);
    expect(listed.out).toContain(`kubectl --server ${master.url} -n sf-a-1 delete --cascade=orphan sfserviceinstance.osb.servicefabrik.io a-1`);
    expect(listed.out).toContain(`kubectl --server ${master.url} -n sf-${sfName(HASHED)} delete --cascade=orphan sfservicebinding.osb.servicefabrik.io ${sfName(HASHED_BINDING)}`);
    expect(listed.out).not.toContain("verification");
    expect(owned(east.server).length).toBeGreaterThan(0);

    const { code, out } = await importCli("--yes", "--hand-over", "--page-size", "3");
    expect(out).not.toContain("FAILED");
    expect(out).toContain(`verification, on a fresh full list of the master (${master.url}), cluster east (${east.server.url}), cluster west (${west.server.url}):`);
    expect(out).toContain("  imported in the GitOps repository: 7 instance(s), 5 binding(s), naming 7 object(s)\n  imported objects owned by a Service Fabrik resource: 0\n");
    expect(out).toContain("  Service Fabrik's controllers running: 0\n  staying with Service Fabrik: 6 instance(s), 3 binding(s)\n");
    expect(out).toContain("    a-5 (cluster east, plan 39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88): failed in Service Fabrik (status.state failed)");
    expect(out).toContain("    o-1 binding o-b1: its instance o-1 is not among the master's SFServiceInstances");
    expect(out).toContain("hand-over incomplete: no imported object is owned by a Service Fabrik resource; 6 instance(s) and 3 binding(s) stay with Service Fabrik (listed above)");
    expect(code).toBe(3);
    const importedObjects = (server: KubeApiServer) => server.store.list("acid.zalan.do/v1", "postgresql").filter((o) => IMPORTED.some((id) => o.metadata.name === `sapcp-${sfName(id)}`));
    for (const server of [east.server, west.server]) {
      for (const o of importedObjects(server)) expect(o.metadata.ownerReferences, o.metadata.name).toBeUndefined();
      expect(server.store.list("apps/v1", "Deployment", SF_NAMESPACE).map((d) => (d.spec as { replicas: number }).replicas)).toEqual([0]);
    }
    expect(importedObjects(east.server)).toHaveLength(5);
    const sfNames = (server: KubeApiServer, kind: string) => server.store.list("osb.servicefabrik.io/v1alpha1", kind).map((o) => o.metadata.name).sort();
    // The imported instances' resources are gone, the hashed ones too (no finalizer held them); the others stay with Service Fabrik.
    expect(sfNames(master, "SFServiceInstance")).toEqual(["a-4", "a-5", "a-6", "a-8", "g-1", "w-3"]);
    expect(sfNames(master, "SFServiceBinding")).toEqual(["o-b1", "w-1-b2", "w-3-b1"]);
    expect(sfNames(east.server, "SFServiceInstance")).toEqual(["a-4", "a-5", "a-6", "a-8"]);
    expect(sfNames(east.server, "SFServiceBinding")).toEqual([]);
    // The bind response of the hashed binding stays on the master: its owner was deleted orphaning it.
    expect(master.store.get({ apiVersion: "v1", kind: "Secret", namespace: `sf-${sfName(HASHED)}`, name: `sf-${sfName(HASHED_BINDING)}` })).toBeDefined();
    // Objects of instances not imported keep their owner.
    expect(east.server.store.get({ apiVersion: "acid.zalan.do/v1", kind: "postgresql", namespace: "sf-a-4", name: "sapcp-a-4" })?.metadata.ownerReferences).toHaveLength(1);
  });

  it("the verification lists every cluster afresh: an imported object owned by Service Fabrik again fails the hand-over (exit 1), whatever the import read", async () => {
    // Service Fabrik's provisioner started again on east and put its owner reference back on a-2's
    // object; a-2's own resources are long gone from the master, so no run plans anything for it.
    const ref = { apiVersion: "acid.zalan.do/v1", kind: "postgresql", namespace: "sf-a-2", name: "sapcp-a-2" };
    const object = east.server.store.get(ref)!;
    const reowned = { ...object, metadata: { ...object.metadata, ownerReferences: [{ apiVersion: "osb.servicefabrik.io/v1alpha1", kind: "SFServiceInstance", name: "a-2", uid: randomUUID() }] } };
    east.server.store.upsert(reowned);
    const provisioner = east.server.store.list("apps/v1", "Deployment", SF_NAMESPACE)[0]!;
    east.server.store.upsert({ ...provisioner, spec: { replicas: 1 } });

    const { code, out } = await importCli("--yes", "--hand-over");
    expect(out).toContain("  imported objects owned by a Service Fabrik resource: 1\n    acid.zalan.do/v1 postgresql sf-a-2/sapcp-a-2 on cluster east is owned by SFServiceInstance a-2\n");
    expect(out).toContain("hand-over failed: 1 imported object(s) owned by a Service Fabrik resource (listed above); do not remove Service Fabrik");
    expect(code).toBe(1);
    // The controller was stopped again (step 1); the reference is for the operator to remove.
    expect(east.server.store.list("apps/v1", "Deployment", SF_NAMESPACE).map((d) => (d.spec as { replicas: number }).replicas)).toEqual([0]);
    east.server.store.upsert({ ...east.server.store.get(ref)!, metadata: { ...east.server.store.get(ref)!.metadata, ownerReferences: undefined } });
  });

  it("once nothing stays with Service Fabrik the hand-over is complete (exit 0), as the fresh lists show", async () => {
    // The operator deprovisioned in Service Fabrik what it kept (or decided to leave it): its resources are gone from the master.
    for (const kind of ["SFServiceBinding", "SFServiceInstance"]) {
      for (const o of master.store.list("osb.servicefabrik.io/v1alpha1", kind)) master.store.delete({ apiVersion: o.apiVersion, kind, namespace: o.metadata.namespace, name: o.metadata.name! });
    }
    const { code, out } = await importCli("--yes", "--hand-over");
    expect(out).toContain("SFServiceInstances: 0 found = 0 imported + 0 already imported + 0 refused + 0 skipped");
    expect(out).toContain("  staying with Service Fabrik: 0 instance(s), 0 binding(s)\n");
    expect(out).toContain("hand-over complete: no imported object is owned by a Service Fabrik resource; nothing stays with Service Fabrik");
    expect(code).toBe(0);
  });

  it("the sync of the import commit creates and deletes no object", async () => {
    for (const cluster of [east, west]) {
      // An Argo CD double on the harness's remote (the sisters' own agents read none).
      const agent = createSyncAgent({ kind: "argocd", name: `${cluster.id}-import`, namespace: "argocd", clusterId: cluster.id, remoteDir: h.remoteDir, server: cluster.server });
      const before = new Set(cluster.server.store.list("acid.zalan.do/v1", "postgresql").map((o) => `${o.metadata.namespace}/${o.metadata.name}`));
      await agent.sync();
      const app = cluster.server.store.get({ apiVersion: "argoproj.io/v1alpha1", kind: "Application", namespace: "argocd", name: `${cluster.id}-import` });
      const state = (app?.status as { operationState: { phase: string; syncResult: { resources: { kind: string; name: string; status: string; message: string }[] } } }).operationState;
      expect(state.phase).toBe("Succeeded");
      const results = state.syncResult.resources;
      expect(results.length).toBe(cluster.id === "east" ? 5 : 2);
      expect(results.filter((r) => r.status === "Pruned" || r.message.endsWith(" created"))).toEqual([]);
      expect(results.every((r) => r.message.endsWith(" configured"))).toBe(true);
      const after = new Set(cluster.server.store.list("acid.zalan.do/v1", "postgresql").map((o) => `${o.metadata.namespace}/${o.metadata.name}`));
      expect(after).toEqual(before);
      await agent.stop();
    }
  });

  it("every imported instance answers last_operation, GET, update, bind, unbind and deprovision through the broker", async () => {
    const body = { service_id: SERVICE_ID, plan_id: PLAN_ID };
    for (const id of IMPORTED) {
      const last = await h.osb.lastOperation(id);
      expect([id, last.status, last.body.state]).toEqual([id, 200, "succeeded"]);
      const got = await h.osb.getInstance(id);
      expect([id, got.status, got.body.service_id, got.body.plan_id]).toEqual([id, 200, SERVICE_ID, PLAN_ID]);
      expect((await h.osb.update(id, { ...body, parameters: { foo: "bar" } }, { query: ASYNC })).status).toBe(202);
      expect((await h.osb.bind(id, `${id}-new`, body)).status).toBe(201);
      expect((await h.osb.unbind(id, `${id}-new`, body)).status).toBe(200);
    }
    const cluster = (id: string) => (id.startsWith("w") ? "west" : "east");
    // After update, bind and unbind the objects are still the ones SF applied, in their own namespace.
    const pg = parse((await show(postgresqlFile("east", "a-1")))!) as KubeObject;
    expect(pg.metadata.namespace).toBe("sf-a-1");
    expect((pg.spec as { users: unknown }).users).toEqual({ main: ["superuser", "createdb"], "a-1-b1": ["superuser"], "a-1-b2": ["superuser"] });
    // The binding whose id is no DNS-1123 name answers under its id, and its unbind takes its user back.
    const got = await h.osb.getBinding(HASHED, HASHED_BINDING);
    expect(got.status).toBe(200);
    expect((await h.osb.unbind(HASHED, HASHED_BINDING, body)).status).toBe(200);
    expect((parse((await show(postgresqlFile("east", HASHED)))!) as { spec: { users: unknown } }).spec.users).toEqual({ main: ["superuser", "createdb"], "hb-2": ["superuser"] });
    // Unbinding an imported binding takes its user back.
    expect((await h.osb.unbind("a-1", "a-1-b1", body)).status).toBe(200);
    const unbound = parse((await show(postgresqlFile("east", "a-1")))!) as KubeObject;
    expect((unbound.spec as { users: unknown }).users).toEqual({ main: ["superuser", "createdb"], "a-1-b2": ["superuser"] });
    expect(parse((await show(postgresqlFile("east", "a-7")))!)).toMatchObject({ metadata: { namespace: "sf-services" } });
    for (const id of IMPORTED) {
      expect((await h.osb.deprovision(id, { ...body, ...ASYNC })).status).toBe(202);
      expect(await remoteFiles(h.remoteDir, instanceManifestDir(cluster(id), id))).toEqual([]);
    }
  });
});
