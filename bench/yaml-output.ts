/**
 * YAML output per document: the `yaml` library (a node tree per document, sorted, stringified) and
 * the emitter of src/yaml (ADR 0040), in the same run, on what the broker writes per provision:
 * the postgresql manifest of examples/catalog's plans and the instance record. DOCS different
 * instances (their own ids, times, parameters), so the emitter's scalar memo helps only where it
 * would in the broker. Rounds alternate library and emitter; the figure is each side's median.
 *
 *   npx tsx bench/yaml-output.ts [--rounds 15] [--docs 200] [--repeat 10]
 */
import { execFileSync } from "node:child_process";
import os from "node:os";
import { parseArgs } from "node:util";
import { render, type RenderValues } from "../src/render/index.js";
import { MANIFEST_STYLE } from "../src/render/yaml-output.js";
import { keyOf, LABEL_INSTANCE, LABEL_MANAGED_BY, MANAGED_BY, newInstanceRecord, type InstanceRecord } from "../src/repo/index.js";
import { RECORD_STYLE } from "../src/repo/records.js";
import { emitYaml, libraryYaml, type YamlStyle } from "../src/yaml/index.js";
import { loadExampleCatalog } from "../test/support/example-catalog.js";
import { median } from "./load.js";

const { values: args } = parseArgs({
  options: { rounds: { type: "string", default: "15" }, docs: { type: "string", default: "200" }, repeat: { type: "string", default: "10" } },
});
const ROUNDS = Number(args.rounds);
const DOCS = Number(args.docs);
const REPEAT = Number(args.repeat);
const NAMESPACE = "gitops-broker-instances";

function uuid(n: number): string {
  const hex = n.toString(16).padStart(12, "0");
  return `0304b210-fcfd-11e8-a31b-${hex}`;
}

function instanceRecord(n: number, serviceId: string, planId: string): InstanceRecord {
  const parameters = { version: ["14", "15", "16", "17"][n % 4]!, storageGB: 10 + (n % 90) };
  const at = new Date(Date.UTC(2026, 10, 29, 10, 0, 0, n)).toISOString();
  return newInstanceRecord(
    {
      instanceId: uuid(n),
      serviceId,
      planId,
      clusterId: `cluster-${n % 4}`,
      namespace: NAMESPACE,
      organizationGuid: `org-${n % 17}`,
      spaceGuid: `space-${n % 31}`,
      context: { platform: "cloudfoundry", organization_guid: `org-${n % 17}`, space_guid: `space-${n % 31}`, instance_name: `db-${n}`, organization_name: "Org", space_name: "dev" },
      parameters,
      maintenanceInfo: { version: "1.0.0" },
      originatingIdentity: { platform: "cloudfoundry", value: { user_id: uuid(n + 1_000_000) } },
    },
    { id: uuid(n + 2_000_000), action: "provision", at, planId, parameters, requestIdentity: uuid(n + 3_000_000) },
  );
}

async function inputs(): Promise<{ manifests: Record<string, unknown>[]; records: InstanceRecord[] }> {
  const catalog = await loadExampleCatalog();
  const plans = catalog.services.flatMap((s) => s.plans);
  const manifests: Record<string, unknown>[] = [];
  const records: InstanceRecord[] = [];
  for (let n = 0; n < DOCS; n++) {
    const plan = plans[n % plans.length]!;
    const instance = instanceRecord(n, plan.serviceId, plan.id);
    const bindings = Array.from({ length: n % 3 }, (_, b) => ({ kind: "ServiceBinding", metadata: { name: uuid(n * 10 + b + 4_000_000), namespace: NAMESPACE }, spec: {} }));
    const values = { service: catalog.services[0]!.raw, plan: plan.raw, instance, bindings } as unknown as RenderValues;
    const labels = { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_INSTANCE]: keyOf(instance.spec.instanceId) };
    for (const m of await render({ action: "provision", templates: plan.templates, values, defaultNamespace: NAMESPACE, labels, planName: plan.name })) manifests.push(m.object);
    records.push(instance);
  }
  return { manifests, records };
}

/** µs per document of `write` over `docs`, `REPEAT` passes. */
function time(docs: unknown[], write: (doc: unknown) => string | undefined): number {
  let bytes = 0;
  const started = process.hrtime.bigint();
  for (let r = 0; r < REPEAT; r++) for (const doc of docs) bytes += write(doc)?.length ?? 0;
  const ns = Number(process.hrtime.bigint() - started);
  if (bytes === 0) throw new Error("nothing written");
  return ns / 1000 / (REPEAT * docs.length);
}


function compare(name: string, docs: unknown[], style: YamlStyle): void {
  for (const doc of docs) {
    const emitted = emitYaml(doc, style);
    if (emitted === undefined) throw new Error(`${name}: the emitter fell back on a document`);
    if (emitted !== libraryYaml(doc, style)) throw new Error(`${name}: the emitter's text differs from the library's`);
  }
  const library: number[] = [];
  const emitter: number[] = [];
  time(docs, (d) => libraryYaml(d, style)); // warm-up
  time(docs, (d) => emitYaml(d, style));
  for (let round = 0; round < ROUNDS; round++) {
    const libraryFirst = round % 2 === 0;
    if (libraryFirst) library.push(time(docs, (d) => libraryYaml(d, style)));
    emitter.push(time(docs, (d) => emitYaml(d, style)));
    if (!libraryFirst) library.push(time(docs, (d) => libraryYaml(d, style)));
  }
  const l = median(library);
  const e = median(emitter);
  const bytes = median(docs.map((d) => emitYaml(d, style)!.length));
  console.log(`${name.padEnd(22)} ${String(docs.length).padStart(5)} docs, median ${bytes} bytes   library ${l.toFixed(1).padStart(7)} µs/doc   emitter ${e.toFixed(1).padStart(6)} µs/doc   ${(l / e).toFixed(1)}x`);
}

const load = () => os.loadavg().map((x) => x.toFixed(1)).join(" ");
function commitId(): string {
  try {
    return execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  } catch {
    return "unknown";
  }
}
const commit = commitId();
console.log(`node ${process.version}, ${os.cpus()[0]?.model ?? "?"}, ${os.cpus().length} cores, commit ${commit}, load average ${load()}`);
console.log(`${ROUNDS} alternating rounds of ${REPEAT} passes; µs per document, median of the rounds`);
const { manifests, records } = await inputs();
compare("postgresql manifest", manifests, MANIFEST_STYLE);
compare("instance record", records, RECORD_STYLE);
console.log(`load average at the end ${load()}`);
