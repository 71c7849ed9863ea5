/**
 * What records GC (ADR 0018) buys and costs: a remote with `--live` provisioned instances (the
 * pre-fill of the write-path benchmark) and `--dead` records of instances deprovisioned 100 days
 * ago; a fresh broker-side clone and the cold instance-summary fold (what start-up pays) on it,
 * then records GC run to the end (commits of `--batch` records, pushed), then the same clone and
 * fold on the collected tip. Baseline and result come from the same run on the same machine.
 *
 *   npx tsx bench/records-gc.ts [--live 2000] [--dead 20000] [--batch 100]
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { createGitWriter, type GitWriter } from "../src/gitwriter/index.js";
import { silentLogger } from "../src/log/index.js";
import { createRecordsCollector } from "../src/reconcile/index.js";
import { createInstanceSummaryCache, instanceRecordPath, RECORD_API_VERSION, recordYaml, summarizeInstances, type InstanceRecord } from "../src/repo/index.js";
import { createCommitStatusWatcher } from "../src/status-watcher/index.js";
import { PREFILL_AUTHOR, prefillRemote } from "./prefill.js";

const { values } = parseArgs({
  options: { live: { type: "string", default: "2000" }, dead: { type: "string", default: "20000" }, batch: { type: "string", default: "100" } },
});
const LIVE = Number(values.live);
const DEAD = Number(values.dead);
const BATCH = Number(values.batch);
const DEPROVISIONED_AT = new Date("2026-01-03T00:00:00Z");
/** The collector's clock: 100 days after the deprovisions. */
const NOW = new Date(DEPROVISIONED_AT.getTime() + 100 * 86_400_000);

function deadRecord(i: number, plan: { serviceId: string; planId: string }): InstanceRecord {
  const id = `dead-${i}`;
  return {
    apiVersion: RECORD_API_VERSION,
    kind: "ServiceInstance",
    metadata: { name: id, namespace: "gitops-broker-instances" },
    spec: { instanceId: id, serviceId: plan.serviceId, planId: plan.planId, clusterId: "local", parameters: {} },
    status: {
      deleted: true,
      operations: [
        { id: `${id}-p`, action: "provision", at: "2026-01-02T00:00:00.000Z", planId: plan.planId },
        { id: `${id}-d`, action: "deprovision", at: DEPROVISIONED_AT.toISOString() },
      ],
    },
  };
}

/** One commit adding DEAD deprovisioned records (their manifests are gone, as after a deprovision). */
async function addDeadRecords(remoteDir: string, plan: { serviceId: string; planId: string }): Promise<void> {
  const child = spawn("git", ["fast-import", "--quiet", "--done"], { env: { ...process.env, GIT_DIR: remoteDir }, stdio: ["pipe", "ignore", "inherit"] });
  const exited = once(child, "exit") as Promise<[number | null]>;
  const write = async (chunk: string) => {
    if (!child.stdin.write(chunk)) await once(child.stdin, "drain");
  };
  const data = (content: string) => `data ${Buffer.byteLength(content)}\n${content}\n`;
  const time = Math.floor(DEPROVISIONED_AT.getTime() / 1000);
  await write(`commit refs/heads/main\ncommitter ${PREFILL_AUTHOR.name} <${PREFILL_AUTHOR.email}> ${time} +0000\n`);
  await write(data(`bench: ${DEAD} deprovisioned records\n`));
  await write("from refs/heads/main^0\n");
  for (let i = 0; i < DEAD; i++) {
    const r = deadRecord(i, plan);
    await write(`M 100644 inline ${instanceRecordPath(r.spec.instanceId)}\n${data(recordYaml(r))}`);
  }
  await write("\ndone\n");
  child.stdin.end();
  const [code] = await exited;
  if (code !== 0) throw new Error(`git fast-import exited with ${String(code)}`);
}

function writerOn(remoteDir: string, gitdir: string): GitWriter {
  return createGitWriter({ gitdir, remoteUrl: remoteDir, branch: "main", author: PREFILL_AUTHOR, logger: silentLogger() });
}

interface StartFigures {
  records: number;
  cloneMs: number;
  foldMs: number;
}

/** A fresh clone and the cold summary fold, as a broker's start-up does them. */
async function coldStart(remoteDir: string, gitdir: string): Promise<StartFigures> {
  const writer = writerOn(remoteDir, gitdir);
  try {
    const t0 = performance.now();
    await writer.start();
    const t1 = performance.now();
    const summary = await summarizeInstances(writer.snapshot(), createInstanceSummaryCache());
    const t2 = performance.now();
    let live = 0;
    for (const plans of summary.live.values()) for (const n of plans.values()) live += n;
    const tree = writer.snapshot();
    const instances = (await tree.list(""))?.find((e) => e.name === "instances")?.oid;
    const records = instances && tree.bulk ? (await tree.bulk.walk(instances, (p, type) => type === "tree" || p.endsWith("/instance.yaml"))).filter((e) => e.type === "blob").length : 0;
    if (live !== LIVE) throw new Error(`expected ${LIVE} live instances, folded ${live}`);
    return { records, cloneMs: t1 - t0, foldMs: t2 - t1 };
  } finally {
    await writer.close();
  }
}

async function main(): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), "gitops-broker-bench-gc-"));
  try {
    process.stderr.write(`pre-filling ${LIVE} live instances and ${DEAD} deprovisioned records...\n`);
    const { remoteDir, placement } = await prefillRemote(path.join(root, "remote"), LIVE);
    await addDeadRecords(remoteDir, { serviceId: placement.service.id, planId: placement.plan.id });

    process.stderr.write("cold start before GC...\n");
    const before = await coldStart(remoteDir, path.join(root, "before.git"));

    process.stderr.write(`records GC, batches of ${BATCH}...\n`);
    const writer = writerOn(remoteDir, path.join(root, "gc.git"));
    await writer.start();
    const collector = createRecordsCollector({
      writer,
      status: createCommitStatusWatcher(),
      logger: silentLogger(),
      brokerVersion: "gitops-broker/bench",
      retentionDays: 90,
      intervalMs: 60_000,
      batchSize: BATCH,
      now: () => NOW,
    });
    let commits = 0;
    let removed = 0;
    const t0 = performance.now();
    for (;;) {
      const ids = await collector.collect();
      if (ids.length === 0) break;
      commits++;
      removed += ids.length;
    }
    const gcMs = performance.now() - t0;
    await collector.close();
    await writer.close();
    if (removed !== DEAD) throw new Error(`GC removed ${removed} records, expected ${DEAD}`);

    process.stderr.write("cold start after GC...\n");
    const after = await coldStart(remoteDir, path.join(root, "after.git"));

    const row = (label: string, f: StartFigures) => `| ${label} | ${f.records} | ${f.cloneMs.toFixed(0)} | ${f.foldMs.toFixed(0)} |`;
    process.stdout.write(
      [
        `## Records GC: ${LIVE} live instances, ${DEAD} deprovisioned records (${os.cpus().length} CPUs)`,
        "",
        "| tip | records on the tip | clone ms | cold summary fold ms |",
        "|---|---|---|---|",
        row("before GC (baseline)", before),
        row("after GC", after),
        "",
        `GC: ${removed} records in ${commits} commits of at most ${BATCH}, ${(gcMs / 1000).toFixed(1)} s in all, ${(gcMs / commits).toFixed(0)} ms per commit (scan, operation, push; no interval waits).`,
        "",
      ].join("\n"),
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

await main();
