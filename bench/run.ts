/**
 * `npm run bench [-- --quick]`: the write-path benchmark (ADR 0005, docs/benchmarks.md).
 *
 * Everything runs on this machine: one smart-HTTP Git server on loopback (the test remote of
 * test/support) serving a bare repository per size, pre-filled with N provisioned instances; real
 * broker processes (`gitops-broker serve`) and the naive baseline (bench/naive-broker.ts) provision
 * new instances on it through OSB. The remote's own gc runs between measurements, not during.
 * Prints markdown tables and the targets; progress goes to stderr.
 *
 *   --quick   1k and 10k instances only, shorter runs (a couple of minutes)
 *   --metrics the cost of /metrics: the gitwriter cells twice per size, without and with the
 *             Prometheus exporter (metrics.listen, scraped every second); no baseline, no restart
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startGitHttpServer, type GitHttpServer } from "../test/support/git-http-server.js";
import { spawnBroker, CREDENTIALS, type BrokerProcess } from "../test/write-path/broker-process.js";
import { run } from "./exec.js";
import { quantile, runLoad, type LoadResult } from "./load.js";
import { prefillRemote } from "./prefill.js";
import { measureWriterCost, type WriterCost } from "./writer-cost.js";

/** Commits the benchmark makes itself (pre-fill, maintenance) have a fixed identity. */
const BENCH_IDENTITY = {
  GIT_AUTHOR_NAME: "bench",
  GIT_AUTHOR_EMAIL: "bench@gitops-broker.invalid",
  GIT_COMMITTER_NAME: "bench",
  GIT_COMMITTER_EMAIL: "bench@gitops-broker.invalid",
};

const quick = process.argv.includes("--quick");
const metricsCost = process.argv.includes("--metrics");
/** A scrape per second: far more often than Prometheus (15-60 s), so the cost shows. */
const SCRAPE_MS = process.env.BENCH_SCRAPE_MS === undefined ? 1_000 : Number(process.env.BENCH_SCRAPE_MS);
const SIZES = quick ? [1_000, 10_000] : [1_000, 10_000, 100_000];
const CLIENTS = [1, 20, 200];
/** The baseline is serialized: more clients only queue longer. */
const NAIVE_CLIENTS = [1, 20];
const CELL_MS = quick ? 5_000 : 8_000;
const NAIVE_CELL_MS = quick ? 4_000 : 6_000;
const WRITER_COST_OPS = quick ? 1_000 : 2_000;
const NAIVE_BROKER = ["--import", "tsx", path.join(import.meta.dirname, "naive-broker.ts")];

interface Cell {
  instances: number;
  writer: "gitwriter" | "naive" | "gitwriter+metrics";
  load: LoadResult;
  /** Broker CPU (all threads of the node process) per acknowledged operation. */
  cpuMsPerOp: number;
  /** Operations per push (gitwriter only). */
  opsPerPush: number | undefined;
}

interface Start {
  instances: number;
  dataDir: "empty (clone)" | "existing (restart)";
  listeningS: number;
  firstAckS: number;
  peakRssMb: number;
}

const cells: Cell[] = [];
const starts: Start[] = [];
const roundTrips = new Map<number, number>();
const writerCosts = new Map<number, WriterCost>();
const peakUnderLoad = new Map<number, number>();

const bodies = new WeakMap<BrokerProcess, Record<string, unknown>>();
const started = performance.now();
const root = await mkdtemp(path.join(os.tmpdir(), "gitops-broker-bench-"));
await main();

async function main(): Promise<void> {
  // Brokers run as in production: the compiled build (bin/gitops-broker.js prefers it when fresh).
  await run("npm", ["run", "--silent", "build"], { cwd: path.join(import.meta.dirname, "..") });
  const server = await startGitHttpServer({ root });
  try {
    for (const instances of SIZES) await benchSize(server, instances);
  } finally {
    await server.close();
    await rm(root, { recursive: true, force: true });
  }
  printReport();
}

async function benchSize(git: GitHttpServer, instances: number): Promise<void> {
  const dir = path.join(root, `n${instances}`);
  await mkdir(dir);
  let t = performance.now();
  const { remoteDir, placement } = await prefillRemote(dir, instances);
  // The remote shares this machine's two cores: its background `git gc` after receiving pushes
  // would compete with the broker. A hosted remote runs its maintenance elsewhere; here it runs
  // between measurements (maintainRemote).
  await run("git", ["config", "receive.autogc", "false"], { env: { GIT_DIR: remoteDir, ...BENCH_IDENTITY } });
  log(`${instances} instances: pre-filled in ${seconds(t)} s`);
  const remoteUrl = git.url(`n${instances}/remote.git`);
  const dataDir = path.join(dir, "gitwriter");

  const broker = await startMeasured(instances, dataDir, remoteUrl, "empty (clone)");
  // On the repository as pre-filled, through the broker's clone (the broker is idle meanwhile).
  t = performance.now();
  roundTrips.set(instances, await pushRoundTrip(path.join(dataDir, "work.git"), remoteUrl));
  log(`${instances} instances: push round trip ${roundTrips.get(instances)!.toFixed(0)} ms (measured in ${seconds(t)} s)`);
  for (const clients of CLIENTS) {
    cells.push(await measure(broker, instances, "gitwriter", clients, CELL_MS));
    await maintainRemote(remoteDir);
  }
  peakUnderLoad.set(instances, (await broker.memory()).peakMb);
  await broker.stop();
  if (metricsCost) {
    await measureMetricsCost(instances, path.join(dir, "gitwriter-metrics"), remoteUrl, remoteDir);
    return;
  }
  if (instances === SIZES[SIZES.length - 1]) await (await startMeasured(instances, dataDir, remoteUrl, "existing (restart)")).stop();

  const cost = await measureWriterCost(path.join(dataDir, "work.git"), remoteUrl, placement, WRITER_COST_OPS);
  writerCosts.set(instances, cost);
  log(`${instances} instances: git writer alone ${cost.cpuMsPerOp.toFixed(2)} ms CPU per operation (${cost.ops} in ${(cost.wallMs / 1000).toFixed(1)} s)`);

  t = performance.now();
  const naive = await spawnBroker({ dataDir: path.join(dir, "naive"), remoteUrl, command: NAIVE_BROKER, keepLogs: false });
  log(`${instances} instances: naive broker cloned and listening in ${seconds(t)} s`);
  for (const clients of NAIVE_CLIENTS) {
    cells.push(await measure(naive, instances, "naive", clients, NAIVE_CELL_MS));
    await maintainRemote(remoteDir);
  }
  await naive.stop();
}

/** The same cells as the plain broker, by a broker exporting metrics and scraped meanwhile. */
async function measureMetricsCost(instances: number, dataDir: string, remoteUrl: string, remoteDir: string): Promise<void> {
  const broker = await spawnBroker({ dataDir, remoteUrl, env: { GITOPS_BROKER_METRICS_LISTEN: "127.0.0.1:0" } });
  try {
    const url = String((await broker.waitForLog((l) => l.msg === "metrics served")).url);
    // The first scrape folds the repository's records cold (bindings): a start-up cost, timed
    // here apart from the cells, as the plain broker's first provision is.
    const first = performance.now();
    await (await fetch(url)).text();
    log(`${instances} instances: first scrape of /metrics (cold) took ${ms(performance.now() - first)} ms`);
    let scrapes = 0;
    log(`scrape interval: ${SCRAPE_MS === 0 ? "never" : `${SCRAPE_MS} ms`}`);
    const scraper = SCRAPE_MS === 0 ? undefined : setInterval(() => {
      fetch(url)
        .then((r) => r.text())
        .then(() => {
          scrapes++;
        })
        .catch((e: unknown) => log(`scrape failed: ${String(e)}`));
    }, SCRAPE_MS);
    try {
      for (const clients of CLIENTS) {
        cells.push(await measure(broker, instances, "gitwriter+metrics", clients, CELL_MS));
        await maintainRemote(remoteDir);
      }
    } finally {
      clearInterval(scraper);
    }
    log(`${instances} instances: ${scrapes} scrapes of /metrics during the metrics cells`);
  } finally {
    await broker.stop();
  }
}

/** Spawns the broker and provisions one instance: how long until listening, until acknowledged. */
async function startMeasured(instances: number, dataDir: string, remoteUrl: string, kind: Start["dataDir"]): Promise<BrokerProcess> {
  const broker = await spawnBroker({ dataDir, remoteUrl });
  const reply = await broker.osb.provision(`first-${kind === "empty (clone)" ? "clone" : "restart"}`, await provisionBody(broker), {
    query: { accepts_incomplete: "true" },
  });
  if (reply.status >= 300) throw new Error(`first provision answered ${reply.status}: ${JSON.stringify(reply.body)}`);
  const firstAckMs = performance.now() - broker.spawnedAt;
  const start: Start = {
    instances,
    dataDir: kind,
    listeningS: broker.startMs / 1000,
    firstAckS: firstAckMs / 1000,
    peakRssMb: (await broker.memory()).peakMb,
  };
  starts.push(start);
  log(`${instances} instances, data dir ${kind}: listening after ${start.listeningS.toFixed(1)} s, first provision acknowledged after ${start.firstAckS.toFixed(1)} s, peak RSS ${start.peakRssMb.toFixed(0)} MB`);
  return broker;
}

async function measure(broker: BrokerProcess, instances: number, writer: Cell["writer"], clients: number, maxMs: number): Promise<Cell> {
  const body = await provisionBody(broker);
  const prefix = `${writer}-${clients}`;
  // Warm-up, not measured: JIT, connection pool, caches.
  await runLoad({ url: broker.url, credentials: CREDENTIALS, body, clients: Math.min(clients, 10), maxOps: 10, maxMs, idPrefix: `${prefix}-warm` });
  const pushesBefore = broker.logs.filter((l) => l.msg === "pushed").length;
  const cpuBefore = await broker.cpuSeconds();
  const load = await runLoad({ url: broker.url, credentials: CREDENTIALS, body, clients, maxOps: 1_000_000, maxMs, idPrefix: prefix });
  const cpuMsPerOp = ((await broker.cpuSeconds()) - cpuBefore) * 1000 / Math.max(1, load.acked);
  const pushes = broker.logs.filter((l) => l.msg === "pushed").length - pushesBefore;
  const cell: Cell = { instances, writer, load, cpuMsPerOp, opsPerPush: writer === "gitwriter" && pushes > 0 ? load.acked / pushes : undefined };
  log(`${instances} instances, ${writer}, ${clients} clients: ${opsPerSecond(load).toFixed(1)} ops/s, p50 ${ms(quantile(load.latencies, 0.5))} ms, p99 ${ms(quantile(load.latencies, 0.99))} ms`);
  return cell;
}

/** Plan `small` of the sample catalog (synchronous: 201 once pushed). */
async function provisionBody(broker: BrokerProcess): Promise<Record<string, unknown>> {
  let body = bodies.get(broker);
  if (body === undefined) {
    const { body: catalog } = await broker.osb.catalog();
    const service = (catalog.services as { id: string; name: string; plans: { id: string; name: string }[] }[]).find((s) => s.name === "postgresql");
    const plan = service?.plans.find((p) => p.name === "small");
    if (!service || !plan) throw new Error("the sample catalog has no postgresql/small");
    body = { service_id: service.id, plan_id: plan.id, organization_guid: "bench-org", space_guid: "bench-space" };
    bodies.set(broker, body);
  }
  return body;
}

/**
 * One push round trip on the remote of this size: fetch, then 5 times a commit adding one file
 * pushed with `git push` as the writer does it (smart HTTP, pack.window=0); the median.
 */
async function pushRoundTrip(gitdir: string, url: string): Promise<number> {
  const git = (args: string[], input?: string) =>
    run("git", args, { env: { GIT_DIR: gitdir, ...BENCH_IDENTITY }, ...(input !== undefined ? { input } : {}) });
  await git(["fetch", "-q", url, "+refs/heads/main:refs/remotes/rtt/main"]);
  let tip = (await git(["rev-parse", "refs/remotes/rtt/main"])).trim();
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    const blob = (await git(["hash-object", "-w", "--stdin"], `round trip ${i}\n`)).trim();
    const entries = (await git(["ls-tree", tip])).split("\n").filter((line) => line !== "" && !line.endsWith("\tbench-rtt.txt"));
    const tree = (await git(["mktree"], [...entries, `100644 blob ${blob}\tbench-rtt.txt`].join("\n") + "\n")).trim();
    const commit = (await git(["commit-tree", tree, "-p", tip, "-m", "bench: push round trip"])).trim();
    const t = performance.now();
    await git(["-c", "pack.window=0", "push", "-q", url, `${commit}:refs/heads/main`]);
    samples.push(performance.now() - t);
    tip = commit;
  }
  return quantile(samples.sort((a, b) => a - b), 0.5);
}

/** The remote's housekeeping, between measurements: roll the packs pushes left up. */
async function maintainRemote(remoteDir: string): Promise<void> {
  await run("git", ["repack", "-d", "-q", "--geometric=2", "--no-write-bitmap-index"], { env: { GIT_DIR: remoteDir, ...BENCH_IDENTITY } });
}


function printReport(): void {
  const out: string[] = [];
  out.push(`## gitops-broker write path, ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model.trim() ?? "?"}), node ${process.version}${quick ? ", --quick" : ""}`, "");
  out.push("| instances | writer | clients | acked ops/s | p50 ms | p99 ms | acked | non-2xx | ops/push | broker CPU ms/op |");
  out.push("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const c of cells) {
    const failed = Object.values(c.load.failed).reduce((a, b) => a + b, 0);
    out.push(
      `| ${kilo(c.instances)} | ${c.writer} | ${c.load.clients} | ${opsPerSecond(c.load).toFixed(1)} | ${ms(quantile(c.load.latencies, 0.5))} | ${ms(quantile(c.load.latencies, 0.99))} | ${c.load.acked} | ${failed} | ${c.opsPerPush?.toFixed(1) ?? "-"} | ${c.cpuMsPerOp.toFixed(2)} |`,
    );
  }
  out.push("", "| instances | one push round trip (median of 5, before the load) | git writer alone, CPU per operation | peak RSS under load |", "|---:|---:|---:|---:|");
  for (const n of SIZES) {
    const cost = writerCosts.get(n);
    out.push(`| ${kilo(n)} | ${ms(roundTrips.get(n) ?? NaN)} ms | ${cost ? `${cost.cpuMsPerOp.toFixed(2)} ms (${cost.ops} ops)` : "-"} | ${(peakUnderLoad.get(n) ?? NaN).toFixed(0)} MB |`);
  }
  out.push("", "| instances | data dir | listening after | first provision acknowledged after | peak RSS |", "|---:|---|---:|---:|---:|");
  for (const s of starts) out.push(`| ${kilo(s.instances)} | ${s.dataDir} | ${s.listeningS.toFixed(1)} s | ${s.firstAckS.toFixed(1)} s | ${s.peakRssMb.toFixed(0)} MB |`);

  const cell = (n: number, writer: Cell["writer"], clients: number) => cells.find((c) => c.instances === n && c.writer === writer && c.load.clients === clients);
  const rate = (c: Cell | undefined) => (c === undefined ? NaN : opsPerSecond(c.load));
  const verdict = (ok: boolean) => (ok ? "met" : "MISSED");
  const mid = SIZES.includes(10_000) ? 10_000 : SIZES[SIZES.length - 1]!;
  const big = SIZES[SIZES.length - 1]!;
  const best = rate(cell(mid, "gitwriter", 200));
  const naiveBest = Math.max(...NAIVE_CLIENTS.map((c) => rate(cell(mid, "naive", c))));
  if (metricsCost) {
    out.push("", "| instances | clients | ops/s without metrics | with metrics | change | CPU ms/op without | with | change |", "|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (const n of SIZES) {
      for (const clients of CLIENTS) {
        const [a, b] = [cell(n, "gitwriter", clients), cell(n, "gitwriter+metrics", clients)];
        if (!a || !b) continue;
        const pct = (x: number, y: number) => `${(((y - x) / x) * 100).toFixed(1)} %`;
        out.push(`| ${kilo(n)} | ${clients} | ${rate(a).toFixed(1)} | ${rate(b).toFixed(1)} | ${pct(rate(a), rate(b))} | ${a.cpuMsPerOp.toFixed(2)} | ${b.cpuMsPerOp.toFixed(2)} | ${pct(a.cpuMsPerOp, b.cpuMsPerOp)} |`);
      }
    }
    out.push("", `Total run time ${seconds(started)} s.`);
    process.stdout.write(`\n${out.join("\n")}\n`);
    return;
  }
  out.push("", "| target | measured | |", "|---|---|---|");
  out.push(`| >= 300 acknowledged ops/s, 200 clients, ${kilo(mid)} instances | ${best.toFixed(1)} ops/s | ${verdict(best >= 300)} |`);
  out.push(`| >= 50x the naive writer (its best, ${kilo(mid)} instances) | ${(best / naiveBest).toFixed(1)}x (${naiveBest.toFixed(1)} ops/s) | ${verdict(best / naiveBest >= 50)} |`);
  for (const n of SIZES) {
    const rtt = roundTrips.get(n) ?? NaN;
    const inRoundTrips = CLIENTS.map((clients) => ({ clients, p99: quantile(cell(n, "gitwriter", clients)?.load.latencies ?? [], 0.99) / rtt }));
    const met = inRoundTrips.filter((x) => x.p99 <= 3).map((x) => x.clients);
    out.push(
      `| p99 ack latency <= 3 push round trips, ${kilo(n)} (one round trip: ${ms(rtt)} ms) | ${inRoundTrips.map((x) => `${x.clients} clients: ${x.p99.toFixed(1)}`).join(", ")} | ${met.length === CLIENTS.length ? "met" : met.length > 0 ? `met with ${met.join(" and ")} client(s) only` : "MISSED"} |`,
    );
  }
  const small = cell(SIZES[0]!, "gitwriter", 200);
  const large = cell(big, "gitwriter", 200);
  if (small && large) {
    const cost = (c: Cell) => 1000 / opsPerSecond(c.load);
    out.push(`| per-op cost at ${kilo(big)} within 1.5x of ${kilo(SIZES[0]!)} (200 clients, wall ms/op) | ${cost(large).toFixed(2)} vs ${cost(small).toFixed(2)} ms = ${(cost(large) / cost(small)).toFixed(2)}x | ${verdict(cost(large) <= 1.5 * cost(small))} |`);
    out.push(`| same, broker CPU ms/op | ${large.cpuMsPerOp.toFixed(2)} vs ${small.cpuMsPerOp.toFixed(2)} ms = ${(large.cpuMsPerOp / small.cpuMsPerOp).toFixed(2)}x | ${verdict(large.cpuMsPerOp <= 1.5 * small.cpuMsPerOp)} |`);
    const [costSmall, costLarge] = [writerCosts.get(SIZES[0]!), writerCosts.get(big)];
    if (costSmall && costLarge) {
      const ratio = costLarge.cpuMsPerOp / costSmall.cpuMsPerOp;
      out.push(`| same, git writer alone CPU ms/op | ${costLarge.cpuMsPerOp.toFixed(2)} vs ${costSmall.cpuMsPerOp.toFixed(2)} ms = ${ratio.toFixed(2)}x | ${verdict(ratio <= 1.5)} |`);
    }
  }
  for (const s of starts.filter((x) => x.instances === big)) {
    out.push(`| cold start at ${kilo(big)} <= 10 s, RSS <= 400 MB (data dir ${s.dataDir}) | first ack ${s.firstAckS.toFixed(1)} s, ${s.peakRssMb.toFixed(0)} MB | ${verdict(s.firstAckS <= 10 && s.peakRssMb <= 400)} |`);
  }
  out.push("", `Total run time ${seconds(started)} s.`);
  process.stdout.write(`\n${out.join("\n")}\n`);
}

function opsPerSecond(load: LoadResult): number {
  return (load.acked * 1000) / load.elapsedMs;
}

function kilo(n: number): string {
  return n >= 1000 ? `${n / 1000}k` : String(n);
}

function ms(value: number): string {
  return Number.isNaN(value) ? "-" : value.toFixed(0);
}

function seconds(since: number): string {
  return ((performance.now() - since) / 1000).toFixed(1);
}

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}
