/**
 * `gitops-broker import service-fabrik` against a landscape in API-server doubles shaped as
 * Service Fabrik's code wrote it (test/support/service-fabrik-landscape.ts): a master and two
 * sister clusters, bound and unbound instances, one in progress, one failed, one with an unknown
 * plan, one whose cluster is not in the registry, one whose objects carry fields the templates no
 * longer render, one whose applied object has another name than the templates render. The real
 * broker serves the GitOps remote over smart HTTP; the import runs as the CLI command with its
 * own clone. Dry run, real run, a second run; the hand-over; the sync of the import commit; then
 * every imported instance through OSB.
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
import { clusterClient, commitImport, planImport, readLandscape } from "../../src/import/index.js";
import { silentLogger } from "../../src/log/index.js";
import { remoteFiles } from "../broker/helpers.js";
import { AUTHOR, type Harness } from "../support/broker-harness.js";
import { trackedTempDir } from "../support/processes.js";
import { readRemoteFile, remoteHead } from "../support/git-fixtures.js";
import { runImport, SF_NAMESPACE, SF_PLAN_ID as PLAN_ID, SF_SERVICE_ID as SERVICE_ID, startImportLandscape, type ImportLandscape, type SfInstanceSpec } from "../support/service-fabrik-landscape.js";
import type { SisterCluster } from "../support/sister-cluster.js";
import type { KubeApiServer, KubeObject } from "../support/kube-api-server.js";
import { createSyncAgent } from "../support/sync-agent.js";

const run = promisify(execFile);
const ASYNC = { accepts_incomplete: "true" };

const LANDSCAPE: SfInstanceSpec[] = [
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
const IMPORTED = ["a-1", "a-2", "a-3", "a-7", "w-1", "w-2"];
const NOT_IMPORTED = ["a-4", "a-5", "a-6", "a-8", "w-3", "g-1"];

let land: ImportLandscape;
let master: KubeApiServer;
let east: SisterCluster;
let west: SisterCluster;
let h: Harness;

const importCli = (...extra: string[]) => runImport(["service-fabrik", ...land.args, ...extra]);

const show = (file: string) => readRemoteFile(h.remoteDir, "main", file);
const record = async <T>(file: string) => parse((await show(file))!) as T;
const postgresqlFile = (cluster: string, id: string) => `${instanceManifestDir(cluster, id)}/postgresql-sapcp-${id}.yaml`;

beforeAll(async () => {
  land = await startImportLandscape("sf-import-", LANDSCAPE);
  ({ master, east, west, h } = land);
}, 120_000);
afterAll(async () => {
  await land?.close();
});

describe("gitops-broker import service-fabrik", () => {
  it("dry run: prints the instances by cluster and plan, what is refused or skipped and why, the differences; writes nothing", async () => {
    const before = await remoteHead(h.remoteDir);
    const { code, out } = await importCli();
    expect(code).toBe(0);
    expect(out).toContain("to import: 6 instance(s) with 3 binding(s)");
    expect(out).toMatch(/ {2}cluster east:\n {4}postgresql\/v9\.6-xxsmall: 4\n {2}cluster west:\n {4}postgresql\/v9\.6-xxsmall: 2\n/);
    expect(out).toContain(`a-6 (cluster east, plan unknown-plan): plan_id "unknown-plan" is not a plan of service postgresql`);
    expect(out).toContain("a-8 (cluster east, plan v9.6-xxsmall): renders objects Service Fabrik did not apply: acid.zalan.do/v1 postgresql sf-a-8/sapcp-a-8; does not render objects Service Fabrik applied: acid.zalan.do/v1 postgresql sf-a-8/old-sapcp-a-8");
    expect(out).toContain("g-1 (cluster gone, plan 39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88): cluster gone is not in the cluster registry");
    expect(out).toContain("a-4 (cluster east, plan 39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88): an operation is in progress in Service Fabrik (status.state in progress)");
    expect(out).toContain("a-5 (cluster east, plan 39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88): failed in Service Fabrik (status.state failed)");
    expect(out).toContain("w-3 (cluster west, plan 39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88): binding w-3-b1 has an operation in progress in Service Fabrik (status.state in_queue)");
    expect(out).toContain("w-1 binding w-1-b2 (cluster west, plan 39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88): failed in Service Fabrik (status.state failed): not a binding to import");
    // a-3's live object carries a field its template no longer renders; every object SF's label.
    expect(out).toMatch(/ {2}a-3:\n {4}acid\.zalan\.do\/v1 postgresql sf-a-3\/sapcp-a-3:\n(?: {6}.*\n)*? {6}- spec\.patroni: \{"ttl":30\} \(live only/);
    expect(out).toContain(`- metadata.labels.OWNER_INTEROPERATOR_NAMESPACE: "interoperator" (live only`);
    expect(out).toContain(`+ metadata.labels["app.kubernetes.io/managed-by"]: "gitops-broker" (rendered, not live`);
    expect(out).toContain("dry run: nothing was written");
    expect(out).toContain("hand-over steps (not performed");
    expect(await remoteHead(h.remoteDir)).toBe(before);
  });

  it("continues an interrupted run, in batches with Reason, Import-Source and one Instance-Id per instance; nothing of what does not map is written; a second run commits nothing", async () => {
    const before = await remoteHead(h.remoteDir);
    // A run interrupted after its first batch (a-1 and a-2): the import's own parts, on a clone of ours.
    const writer = createGitWriter({ gitdir: path.join(await trackedTempDir("sf-import-interrupted-"), "work.git"), remoteUrl: h.remoteUrl, branch: "main", author: AUTHOR, logger: silentLogger() });
    await writer.start();
    const tip = writer.snapshot();
    const client = (server: KubeApiServer) => clusterClient(server.loadKubeConfig(), "test");
    const sisters: Record<string, KubeApiServer> = { east: east.server, west: west.server };
    const landscape = await readLandscape(await client(master), async (id) => (sisters[id] ? client(sisters[id]) : undefined));
    const planned = await planImport({ landscape, catalog: (await loadCatalog(tip)).catalog, clusters: (await loadClusters(tip)).clusters, base: tip, now: () => new Date(), newId: randomUUID });
    expect(planned.imported.map((i) => i.instanceId)).toEqual(IMPORTED);
    await commitImport(writer, { ...planned, imported: planned.imported.slice(0, 2) }, { batchSize: 2, brokerVersion: "test" });
    await writer.close();

    const { code, out } = await importCli("--yes", "--batch-size", "4");
    expect(code).toBe(0);
    expect(out).toContain("already in the GitOps repository: 2 instance(s)");
    expect(out).toContain("imported 4 instance(s) in 1 commit(s)");
    const { stdout: log } = await run("git", ["log", "--format=%B%x00", `${before}..main`], { cwd: h.remoteDir });
    const messages = log.split("\0").map((m) => m.trim()).filter(Boolean).reverse();
    expect(messages).toHaveLength(2);
    expect(messages[0]).toMatch(/^import 2 instance\(s\) and 2 binding\(s\) from Service Fabrik\n/);
    expect(messages[1]).toMatch(/^import 4 instance\(s\) and 1 binding\(s\) from Service Fabrik\n/);
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
    expect(again.code).toBe(0);
    expect(again.out).toContain("to import: 0 instance(s)");
    expect(again.out).toContain("already in the GitOps repository: 6 instance(s)");
    expect(again.out).toContain("imported 0 instance(s) in 0 commit(s)");
    expect(await remoteHead(h.remoteDir)).toBe(head);
  });

  it("hands the objects over: stops the controllers, removes owner references and finalizers, deletes SF's resources orphaning them", async () => {
    const owned = (server: KubeApiServer) => server.store.list("acid.zalan.do/v1", "postgresql").filter((o) => (o.metadata.ownerReferences as unknown[] | undefined)?.length);
    expect(owned(east.server).length).toBeGreaterThan(0);
    const listed = await importCli();
    expect(listed.out).toMatch(/1\. stop Service Fabrik's controllers: 4 command\(s\)/);
    expect(listed.out).toMatch(/2\. remove its owner references from the imported objects: 6 command\(s\)/);
    expect(listed.out).toMatch(/3\. remove its finalizers from its resources: 18 command\(s\)/);
    expect(listed.out).toMatch(/4\. delete its resources, orphaning their dependents: 18 command\(s\)/);
    expect(listed.out).toContain(`kubectl --server ${east.server.url} -n sf-a-1 patch postgresql.acid.zalan.do sapcp-a-1 --type merge -p '{"metadata":{"ownerReferences":null}}'`);
    expect(listed.out).toContain(`kubectl --server ${master.url} -n sf-a-1 delete --cascade=orphan sfserviceinstance.osb.servicefabrik.io a-1`);
    expect(owned(east.server).length).toBeGreaterThan(0);

    const { code, out } = await importCli("--yes", "--hand-over");
    expect(code).toBe(0);
    expect(out).toContain("no imported object is owned by a Service Fabrik resource");
    expect(out).not.toContain("FAILED");
    const importedObjects = (server: KubeApiServer) => server.store.list("acid.zalan.do/v1", "postgresql").filter((o) => IMPORTED.some((id) => o.metadata.name === `sapcp-${id}`));
    for (const server of [east.server, west.server]) {
      for (const o of importedObjects(server)) expect(o.metadata.ownerReferences, o.metadata.name).toBeUndefined();
      expect(server.store.list("apps/v1", "Deployment", SF_NAMESPACE).map((d) => (d.spec as { replicas: number }).replicas)).toEqual([0]);
    }
    const sfNames = (server: KubeApiServer, kind: string) => server.store.list("osb.servicefabrik.io/v1alpha1", kind).map((o) => o.metadata.name).sort();
    // The imported instances' resources are gone (no finalizer held them); the others stay with Service Fabrik.
    expect(sfNames(master, "SFServiceInstance")).toEqual(["a-4", "a-5", "a-6", "a-8", "g-1", "w-3"]);
    expect(sfNames(master, "SFServiceBinding")).toEqual(["w-1-b2", "w-3-b1"]);
    expect(sfNames(east.server, "SFServiceInstance")).toEqual(["a-4", "a-5", "a-6", "a-8"]);
    // Objects of instances not imported keep their owner.
    expect(east.server.store.get({ apiVersion: "acid.zalan.do/v1", kind: "postgresql", namespace: "sf-a-4", name: "sapcp-a-4" })?.metadata.ownerReferences).toHaveLength(1);
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
      expect(results.length).toBe(cluster.id === "east" ? 4 : 2);
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
