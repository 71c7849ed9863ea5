/**
 * Issue 28's import benchmark: a Service Fabrik landscape of `--instances` instances with
 * `--bindings` bindings (Service Fabrik's sample gotemplate plan, two sister clusters) in
 * API-server doubles (test/support/service-fabrik-landscape.ts), imported end to end into a
 * bare remote served over smart HTTP: read (client-node lists on the master and the sisters),
 * render (records, the plan's templates, the bindings' patches), diff (against the live
 * objects), commit and push (batches of `--batch`). Prints instances/s, the share of time per
 * step and the process's peak RSS.
 *
 *   npx tsx bench/import-service-fabrik.ts [--instances 10000] [--bindings 5000] [--batch 500]
 */
import { randomUUID } from "node:crypto";
import { readFile, rm } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { loadCatalog, loadClusters } from "../src/catalog/index.js";
import { createGitWriter } from "../src/gitwriter/index.js";
import { routedWriter } from "../src/stores/index.js";
import { clusterClient, commitImport, planImport, readLandscape } from "../src/import/index.js";
import { silentLogger } from "../src/log/index.js";
import { noopInstruments } from "../src/metrics/index.js";
import { createBareRemote, createTempDir } from "../test/support/git-fixtures.js";
import { startGitHttpServer } from "../test/support/git-http-server.js";
import { startKubeApiServer } from "../test/support/kube-api-server.js";
import { POSTGRESQL } from "../test/support/postgres-operator.js";
import { registerServiceFabrik, seedLandscape, type SfInstanceSpec } from "../test/support/service-fabrik-landscape.js";
import { tempDirTree } from "../test/support/dir-tree.js";
import { stringify } from "yaml";

const { values } = parseArgs({
  options: { instances: { type: "string", default: "10000" }, bindings: { type: "string", default: "5000" }, batch: { type: "string", default: "500" } },
});
const INSTANCES = Number(values.instances);
const BINDINGS = Number(values.bindings);
const BATCH = Number(values.batch);
const SF = new URL("../src/catalog/testdata/service-fabrik/", import.meta.url);
const SERVICE_ID = "24731fb8-7b84-5f57-914f-c3d55d793dd4";
const PLAN_ID = "39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88";

let peakRss = 0;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
const mb = (n: number) => `${Math.round(n / 1048576)} MB`;

const root = await createTempDir("bench-import-");
const servers: { close(): Promise<void> }[] = [];
try {
  const master = await startKubeApiServer();
  const sisters = { east: await startKubeApiServer({ resources: [POSTGRESQL] }), west: await startKubeApiServer({ resources: [POSTGRESQL] }) };
  servers.push(master, sisters.east, sisters.west);
  for (const s of [master, sisters.east, sisters.west]) registerServiceFabrik(s);
  const files: Record<string, string> = {
    "catalog/sfservice-postgresql.yaml": await readFile(new URL("sfservice-postgresql.yaml", SF), "utf8"),
    "catalog/sfplan-postgresql-v9.6-xxsmall.yaml": await readFile(new URL("sfplan-postgresql-v9.6-xxsmall.yaml", SF), "utf8"),
  };
  const kubeconfigs: Record<string, string> = {};
  for (const [id, server] of Object.entries(sisters)) {
    kubeconfigs[id] = path.join(root, `${id}.kubeconfig`);
    await import("node:fs/promises").then((fs) => fs.writeFile(kubeconfigs[id]!, server.kubeconfig(), { mode: 0o600 }));
    files[`registry/clusters/${id}.yaml`] = stringify({ apiVersion: "gitops-broker.io/v1alpha1", kind: "Cluster", metadata: { name: id }, spec: { namespace: "gitops-broker-instances", kubeconfig: { path: kubeconfigs[id] } } });
  }
  const tree = await tempDirTree();
  await tree.write(files);
  const { catalog } = await loadCatalog(tree.tree);
  const { clusters } = await loadClusters(tree.tree);
  await tree.remove();
  const service = catalog.serviceById(SERVICE_ID)!;
  const plan = service.plans.find((p) => p.id === PLAN_ID)!;
  const landscape: SfInstanceSpec[] = Array.from({ length: INSTANCES }, (_, i) => ({
    id: `sf-${i}`,
    clusterId: i % 2 === 0 ? "east" : "west",
    ...(i < BINDINGS ? { bindings: [{ id: `sf-${i}-b` }] } : {}),
  }));
  let t = performance.now();
  await seedLandscape({ master, sisters, service, plan, instances: landscape, renderOnce: true });
  // The doubles' objects live in this process: what the import adds is measured from here.
  const seededRss = process.memoryUsage().rss;
  peakRss = seededRss;
  console.log(`seeded ${INSTANCES} instances, ${BINDINGS} bindings in ${Math.round(performance.now() - t)} ms (rss ${mb(seededRss)})`);

  const remotes = path.join(root, "remotes");
  await createBareRemote(remotes, "remote.git", files);
  const git = await startGitHttpServer({ root: remotes });
  servers.push(git);
  let pushMs = 0;
  const metrics = { ...noopInstruments.gitwriter, pushSeconds: { observe: (s: number) => void (pushMs += s * 1000) } } as typeof noopInstruments.gitwriter;
  const writer = createGitWriter({ gitdir: path.join(root, "work.git"), remoteUrl: git.url("remote.git"), branch: "main", author: { name: "bench", email: "bench@example.invalid" }, logger: silentLogger(), metrics });
  await writer.start();

  const started = performance.now();
  t = started;
  const { KubeConfig } = await import("@kubernetes/client-node");
  const kc = (yaml: string) => {
    const k = new KubeConfig();
    k.loadFromString(yaml);
    return k;
  };
  const masterClient = await clusterClient(kc(master.kubeconfig()), "master");
  const sisterClients = { east: await clusterClient(kc(sisters.east.kubeconfig()), "east"), west: await clusterClient(kc(sisters.west.kubeconfig()), "west") };
  const read = await readLandscape(masterClient, async (id) => sisterClients[id as "east" | "west"]);
  const readMs = performance.now() - t;
  const planned = await planImport({ landscape: read, catalog, clusters, base: writer.snapshot(), now: () => new Date(), newId: randomUUID });
  if (planned.imported.length !== INSTANCES) throw new Error(`planned ${planned.imported.length}, refused ${JSON.stringify(planned.refused.slice(0, 3))}`);
  t = performance.now();
  const committed = await commitImport(routedWriter(writer), planned, { batchSize: BATCH, brokerVersion: "bench" });
  const commitAndPushMs = performance.now() - t;
  const totalMs = performance.now() - started;
  await writer.close();
  clearInterval(sampler);

  const { renderMs, diffMs } = planned.timings;
  const steps = { read: readMs, render: renderMs, diff: diffMs, commit: commitAndPushMs - pushMs, push: pushMs };
  const accounted = Object.values(steps).reduce((a, b) => a + b, 0);
  console.log(`imported ${committed.imported.length} instances (${planned.imported.reduce((n, i) => n + i.bindingIds.length, 0)} bindings) in ${committed.commits.length} commits`);
  console.log(`total ${(totalMs / 1000).toFixed(1)} s: ${(INSTANCES / (totalMs / 1000)).toFixed(0)} instances/s; peak RSS ${mb(peakRss)}, of which the import ${mb(peakRss - seededRss)} above the seeded doubles (${mb(seededRss)})`);
  for (const [step, ms] of Object.entries(steps)) console.log(`  ${step.padEnd(7)} ${(ms / 1000).toFixed(1).padStart(6)} s  ${((100 * ms) / totalMs).toFixed(0).padStart(3)} %`);
  console.log(`  other   ${((totalMs - accounted) / 1000).toFixed(1).padStart(6)} s  ${((100 * (totalMs - accounted)) / totalMs).toFixed(0).padStart(3)} %`);
} finally {
  clearInterval(sampler);
  for (const s of servers.reverse()) await s.close();
  await rm(root, { recursive: true, force: true });
}
process.exit(0);
