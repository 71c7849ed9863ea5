/**
 * The gotemplate engine (ADR 0011) beside handlebars, in one run:
 * - module load: decompress + compile the WebAssembly module, start its worker, first render;
 * - per render: Service Fabrik's sample provision template (gotemplate) and the sample catalog's
 *   `small` provision template (handlebars), sequential, after a warm-up;
 * - provision throughput through the real broker (in process, smart-HTTP remote on loopback):
 *   the SF sample plan and the handlebars sample plan, same clients and duration.
 * Usage: npx tsx bench/gotemplate.ts [--seconds 15] [--clients 16]
 */
import { readFile, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { parse } from "yaml";
import { startBroker } from "../src/cli/serve.js";
import { loadCatalog } from "../src/catalog/index.js";
import { silentLogger } from "../src/log/index.js";
import { renderTemplateText, type RenderValues } from "../src/render/index.js";
import { compiledModule } from "../src/render/wasm-module.js";
import { dirTreeReader } from "../src/repo/index.js";
import { CREDENTIALS, testConfig } from "../test/support/broker-harness.js";
import { createBareRemote } from "../test/support/git-fixtures.js";
import { startGitHttpServer } from "../test/support/git-http-server.js";
import { sampleCatalogFiles } from "../test/support/sister-cluster.js";
import { quantile, runLoad } from "./load.js";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};
const SECONDS = arg("--seconds", 15);
const CLIENTS = arg("--clients", 16);
const RENDERS = 500;
const root = path.resolve(import.meta.dirname, "..");
const SF = path.join(root, "src/catalog/testdata/service-fabrik");

const fmt = (ms: number) => `${ms.toFixed(2)} ms`;

async function timeRenders(render: () => Promise<unknown>): Promise<{ mean: number; p50: number; p99: number }> {
  for (let i = 0; i < 50; i++) await render();
  const times: number[] = [];
  for (let i = 0; i < RENDERS; i++) {
    const t = performance.now();
    await render();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return { mean: times.reduce((a, b) => a + b, 0) / times.length, p50: quantile(times, 0.5), p99: quantile(times, 0.99) };
}

async function main(): Promise<void> {
  // 1. Module load (this process has not touched it yet).
  const sfPlan = parse(await readFile(path.join(SF, "sfplan-postgresql-v9.6-xxsmall.yaml"), "utf8")) as { spec: { templates: { action: string; type: string; content: string }[] } };
  const sfService = parse(await readFile(path.join(SF, "sfservice-postgresql.yaml"), "utf8")) as Record<string, unknown>;
  const instance = {
    metadata: { name: "bench", namespace: "gitops-broker-instances" },
    spec: { instanceId: "bench-1", serviceId: "s", planId: "p", clusterId: "1", context: { platform: "cloudfoundry" }, parameters: { foo: "bar" } },
  };
  const sfValues: RenderValues = { service: sfService, plan: sfPlan, instance, bindings: [] };
  const provision = sfPlan.spec.templates.find((t) => t.action === "provision")!;
  const sfTemplate = { action: "provision", type: "gotemplate", content: provision.content, source: "sf" };
  const t = performance.now();
  await compiledModule();
  const compileMs = performance.now() - t;
  await renderTemplateText(sfTemplate, sfValues, "sf");
  const loadMs = performance.now() - t;

  // 2. Per render.
  const catalogDir = await mkdtemp(path.join(os.tmpdir(), "bench-gotemplate-catalog-"));
  const { writeFile, mkdir } = await import("node:fs/promises");
  for (const [file, text] of Object.entries(await sampleCatalogFiles())) {
    await mkdir(path.dirname(path.join(catalogDir, file)), { recursive: true });
    await writeFile(path.join(catalogDir, file), text);
  }
  const hbCatalog = (await loadCatalog(dirTreeReader(catalogDir))).catalog;
  const hbService = hbCatalog.services.find((s) => s.name === "postgresql")!;
  const hbPlan = hbService.plans.find((p) => p.name === "small")!;
  const hbTemplate = hbPlan.templates.find((x) => x.action === "provision")!;
  const hbValues: RenderValues = { service: hbService.raw, plan: hbPlan.raw, instance, bindings: [] };
  const go = await timeRenders(() => renderTemplateText(sfTemplate, sfValues, "sf"));
  const hb = await timeRenders(() => renderTemplateText(hbTemplate, hbValues, "small"));
  await rm(catalogDir, { recursive: true, force: true });

  // 3. Provision throughput, one broker per catalog, same settings.
  const tmp = await mkdtemp(path.join(os.tmpdir(), "bench-gotemplate-"));
  const git = await startGitHttpServer({ root: tmp });
  const sfFiles = {
    "catalog/sfservice-postgresql.yaml": await readFile(path.join(SF, "sfservice-postgresql.yaml"), "utf8"),
    "catalog/sfplan-postgresql-v9.6-xxsmall.yaml": await readFile(path.join(SF, "sfplan-postgresql-v9.6-xxsmall.yaml"), "utf8"),
    "registry/clusters/1.yaml": await readFile(path.join(SF, "sfcluster-1.yaml"), "utf8"),
  };
  const hbFiles = { ...(await sampleCatalogFiles()), "registry/clusters/local.yaml": await readFile(path.join(root, "examples/registry/clusters/local.yaml"), "utf8") };
  const throughput: Record<string, { perSecond: number; p50: number; p99: number; failed: Record<number, number> }> = {};
  for (const [name, files, body] of [
    ["handlebars sample plan small", hbFiles, { service_id: hbService.id, plan_id: hbPlan.id, organization_guid: "o", space_guid: "s" }],
    [
      "SF sample plan v9.6-xxsmall (gotemplate)",
      sfFiles,
      { service_id: "24731fb8-7b84-5f57-914f-c3d55d793dd4", plan_id: "39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88", organization_guid: "o", space_guid: "s", parameters: { foo: "bar" } },
    ],
  ] as const) {
    const remote = await createBareRemote(tmp, `${name.split(" ")[0]}.git`, files);
    const broker = await startBroker(testConfig(tmp, `data-${name.split(" ")[0]}`, git.url(path.basename(remote))), { version: "bench", logger: silentLogger() });
    const load = await runLoad({ url: broker.url, credentials: CREDENTIALS, body: { ...body }, clients: CLIENTS, maxOps: 1e9, maxMs: SECONDS * 1000, idPrefix: name.split(" ")[0]! });
    throughput[name] = { perSecond: (load.acked * 1000) / load.elapsedMs, p50: quantile(load.latencies, 0.5), p99: quantile(load.latencies, 0.99), failed: load.failed };
    await broker.close();
  }
  await git.close();
  await rm(tmp, { recursive: true, force: true });

  console.log(`node ${process.version}, ${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(1)).join(" ")}`);
  console.log(`module load: decompress + compile ${fmt(compileMs)}; + worker start and first render ${fmt(loadMs)}`);
  console.log(`per render (${RENDERS}, sequential): gotemplate SF provision mean ${fmt(go.mean)} p50 ${fmt(go.p50)} p99 ${fmt(go.p99)}; handlebars small provision mean ${fmt(hb.mean)} p50 ${fmt(hb.p50)} p99 ${fmt(hb.p99)}`);
  for (const [name, r] of Object.entries(throughput)) {
    console.log(`provisions (${CLIENTS} clients, ${SECONDS} s): ${name}: ${r.perSecond.toFixed(0)}/s, p50 ${fmt(r.p50)}, p99 ${fmt(r.p99)}, failed ${JSON.stringify(r.failed)}`);
  }
  process.exit(0);
}

await main();
