/**
 * The helm engine (ADR 0015) beside the other engines, in one run: the time one provision spends
 * rendering its plan (`render` as the broker calls it: templates to checked manifests), for
 * - a helm plan: the kvstore chart of test/broker/testdata/charts (helpers, include/tpl/required,
 *   a subchart on by its condition, a CRD, NOTES.txt), values from a gotemplate `content`;
 * - the Service Fabrik sample plan's provision (gotemplate);
 * - the sample catalog's `small` provision (handlebars);
 * sequential, after a warm-up, in this process (the module's worker started beforehand).
 * Usage: npx tsx bench/helm.ts [--renders 300]
 */
import { cp, mkdtemp, readFile, rm, writeFile, mkdir } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { parse } from "yaml";
import { loadCatalog, type Plan } from "../src/catalog/index.js";
import { render, type RenderValues } from "../src/render/index.js";
import { dirTreeReader } from "../src/repo/index.js";
import { sampleCatalogFiles } from "../test/support/sister-cluster.js";
import { quantile } from "./load.js";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};
const RENDERS = arg("--renders", 300);
const root = path.resolve(import.meta.dirname, "..");
const SF = path.join(root, "src/catalog/testdata/service-fabrik");
const fmt = (ms: number) => `${ms.toFixed(2)} ms`;

const HELM_PLAN = `apiVersion: osb.servicefabrik.io/v1alpha1
kind: SFPlan
metadata:
  name: kv-plan
spec:
  id: kv-plan
  name: kv
  serviceId: 4de30cf9-a981-48c9-9acf-909805db46bc
  description: kvstore chart
  context:
    replicas: 3
  templates:
  - action: provision
    type: helm
    url: catalog/charts/kvstore
    content: |
      auth:
        username: {{ .instance.spec.parameters.user | default "" | quote }}
      replicas: {{ .plan.spec.context.replicas }}
      exporter:
        enabled: {{ .instance.spec.parameters.monitoring }}
`;

async function time(fn: () => Promise<unknown>): Promise<{ mean: number; p50: number; p99: number }> {
  for (let i = 0; i < 30; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < RENDERS; i++) {
    const t = performance.now();
    await fn();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return { mean: times.reduce((a, b) => a + b, 0) / times.length, p50: quantile(times, 0.5), p99: quantile(times, 0.99) };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "bench-helm-"));
  for (const [file, text] of Object.entries(await sampleCatalogFiles())) {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), text);
  }
  await cp(path.join(root, "test/broker/testdata/charts/kvstore"), path.join(dir, "catalog/charts/kvstore"), { recursive: true });
  await writeFile(path.join(dir, "catalog/kv-plan.yaml"), HELM_PLAN);
  const { catalog, problems } = await loadCatalog(dirTreeReader(dir));
  if (problems.length > 0) throw new Error(JSON.stringify(problems));
  const service = catalog.services.find((s) => s.name === "postgresql")!;
  const instance = {
    metadata: { name: "bench-1", namespace: "gitops-broker-instances" },
    spec: { instanceId: "bench-1", serviceId: service.id, planId: "p", clusterId: "local", context: { platform: "cloudfoundry" }, parameters: { user: "admin", monitoring: true, foo: "bar" } },
  };
  const request = (plan: Plan, values: RenderValues) => () =>
    render({ action: "provision", templates: plan.templates, values, defaultNamespace: "gitops-broker-instances", labels: { "gitops-broker.io/instance-id": "bench-1" }, planName: plan.name });
  const helmPlan = catalog.planById("kv-plan")!;
  const small = service.plans.find((p) => p.name === "small")!;
  const sfPlan = parse(await readFile(path.join(SF, "sfplan-postgresql-v9.6-xxsmall.yaml"), "utf8")) as Record<string, unknown>;
  const sfService = parse(await readFile(path.join(SF, "sfservice-postgresql.yaml"), "utf8")) as Record<string, unknown>;
  const sfProvision = ((sfPlan.spec as { templates: { action: string; type: string; content: string }[] }).templates).find((t) => t.action === "provision")!;
  const sf: Plan = { ...small, name: "v9.6-xxsmall", templates: [{ ...sfProvision, source: "sf" }], raw: sfPlan };

  const t = performance.now();
  const objects = (await request(helmPlan, { service: service.raw, plan: helmPlan.raw, instance, bindings: [] })()).length;
  const firstMs = performance.now() - t;
  const helm = await time(request(helmPlan, { service: service.raw, plan: helmPlan.raw, instance, bindings: [] }));
  const go = await time(request(sf, { service: sfService, plan: sfPlan, instance, bindings: [] }));
  const hb = await time(request(small, { service: service.raw, plan: small.raw, instance, bindings: [] }));
  await rm(dir, { recursive: true, force: true });

  console.log(`node ${process.version}, ${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(1)).join(" ")}`);
  console.log(`first helm render in this process (module compile, worker start): ${fmt(firstMs)}, ${objects} objects`);
  for (const [name, r] of [
    [`helm kvstore chart (${objects} objects, values by gotemplate)`, helm],
    ["gotemplate SF sample provision", go],
    ["handlebars sample small provision", hb],
  ] as const) {
    console.log(`render per provision, ${name}: mean ${fmt(r.mean)}, p50 ${fmt(r.p50)}, p99 ${fmt(r.p99)} (${RENDERS} sequential)`);
  }
  process.exit(0);
}

await main();
