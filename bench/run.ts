/**
 * `npm run bench [-- --quick]`: the write-path benchmark (ADR 0005, docs/benchmarks.md).
 *
 * Everything runs on this machine: smart-HTTP Git servers on loopback (the test remote of
 * test/support), one answering at once and one answering every request REMOTE_LATENCY_MS later (a
 * hosted remote, bench/remote-latency.ts), both serving a bare repository per size, pre-filled
 * with N provisioned instances; real broker processes (`gitops-broker serve`) and the naive
 * baseline (bench/naive-broker.ts) provision new instances on it through OSB, 1, 20 and 200
 * clients each, every cell once per remote. The remote's own gc runs between measurements, not
 * during. Prints markdown tables and the targets; progress goes to stderr.
 *
 *   --quick            1k and 10k instances only, shorter runs
 *   --sizes=1k,100k    these sizes instead (k for thousands)
 *   --naive-sizes=10k  the naive writer at these sizes only (default: every size below 100k: at
 *                      100k it takes minutes per cell)
 *   --latencies=0,150  the remotes' latencies in ms (default 0 and REMOTE_LATENCY_MS, else 150)
 *   --cpu-prof=DIR     the brokers run with `node --cpu-prof`, profiles written to DIR on exit
 *   --metrics          the cost of /metrics: the gitwriter cells twice per size, without and with
 *                      the Prometheus exporter (metrics.listen, scraped every second); loopback
 *                      only, no baseline, no restart
 *   --starts           the start cells only: per size and remote, a new replica (clone) then a
 *                      restart of it, each with its first provision, `--rounds` times (default 3)
 *   --baseline=DIR     with --starts: each round starts another checkout's broker first (its
 *                      dist/ built), then this one's: alternated, side by side in the same run.
 *                      Without --starts: the broker cells only, this checkout's and the
 *                      baseline's brokers both running on the same remote, their cells
 *                      alternated `--rounds` times (the order swapped every round)
 *   --clients=200      the cells of these client counts only (default 1, 20, 200)
 *   --bitmap           with --starts: each start also on a copy of the remote repacked with a
 *                      reachability bitmap, as hosted remotes keep one (a clone's fetch counts
 *                      its objects from the bitmap instead of walking every tree)
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startGitHttpServer, type GitHttpServer } from "../test/support/git-http-server.js";
import { spawnBroker, CREDENTIALS, type BrokerProcess } from "../test/write-path/broker-process.js";
import { run } from "./exec.js";
import { median, quantile, runLoad, type LoadResult } from "./load.js";
import { NAIVE_STARTED } from "./naive-gitwriter.js";
import { prefillRemote } from "./prefill.js";
import { HOSTED_LATENCY_MS, remoteLatencyMs } from "./remote-latency.js";
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
const SIZES = numbers("sizes") ?? (quick ? [1_000, 10_000] : [1_000, 10_000, 100_000]);
const NAIVE_SIZES = numbers("naive-sizes") ?? SIZES.filter((n) => n < 100_000);
const LATENCIES = metricsCost ? [0] : (numbers("latencies") ?? [...new Set([0, remoteLatencyMs(HOSTED_LATENCY_MS)])]);
const CPU_PROF = option("cpu-prof");
const STARTS_ONLY = process.argv.includes("--starts");
const BASELINE = option("baseline");
const BITMAP = process.argv.includes("--bitmap");
const ROUNDS = numbers("rounds")?.[0] ?? 3;
const CLIENTS = numbers("clients") ?? [1, 20, 200];
const CELL_MS = quick ? 5_000 : 8_000;
/** Sending stops after this; a closed loop then waits for what is queued (200 clients: minutes). */
const NAIVE_CELL_MS = quick ? 4_000 : 6_000;
const WRITER_COST_OPS = quick ? 1_000 : 2_000;
const NAIVE_BROKER = ["--import", "tsx", path.join(import.meta.dirname, "naive-broker.ts")];
const GITWRITER_BROKER = [path.join(import.meta.dirname, "..", "bin", "gitops-broker.js"), "serve"];

interface Cell {
  instances: number;
  /** The remote's latency per request, ms (0: loopback). */
  latencyMs: number;
  writer: "gitwriter" | "naive" | "gitwriter+metrics";
  load: LoadResult;
  /** Broker CPU (all threads of the node process) per acknowledged operation. */
  cpuMsPerOp: number;
  /** Operations per push (gitwriter only). */
  opsPerPush: number | undefined;
  /** One-minute load average before and after the cell. */
  loadAvg: [number, number];
  /** With --baseline (cells): which broker, and in which round. */
  variant?: { name: string; baseline: boolean; round: number };
}

interface Start {
  instances: number;
  latencyMs: number;
  dataDir: "empty (clone)" | "existing (restart)";
  /** Which broker: "this checkout", or the --baseline's. */
  broker: string;
  listeningS: number;
  firstAckS: number;
  peakRssMb: number;
  loadAvg: [number, number];
  /** From the broker's log lines, seconds after spawn: fetched (writer started), view loaded, a clone's repack started and ended. */
  phases: { fetchedS?: number | undefined; viewLoadedS?: number | undefined; repackStartS?: number | undefined; repackEndS?: number | undefined };
}

/** The broker a start runs: this checkout's, or the --baseline's. */
interface Variant {
  name: string;
  /** The --baseline's broker. */
  baseline: boolean;
  command: string[];
}

const cells: Cell[] = [];
const starts: Start[] = [];
/** Numbers the first provisions' instance ids: every start provisions a new instance. */
let firstProvisions = 0;
/** By `${instances}/${latencyMs}`. */
const roundTrips = new Map<string, number>();
const writerCosts = new Map<number, WriterCost>();
/** --baseline cells: each broker's peak RSS over all its cells. */
const abPeaks: { instances: number; latencyMs: number; name: string; peakMb: number }[] = [];
/** By `${instances}/${latencyMs}`. */
const peakUnderLoad = new Map<string, number>();

const bodies = new WeakMap<BrokerProcess, Record<string, unknown>>();
const started = performance.now();
const root = await mkdtemp(path.join(os.tmpdir(), "gitops-broker-bench-"));
await main();

async function main(): Promise<void> {
  // Brokers run as in production: the compiled build (bin/gitops-broker.js prefers it when fresh).
  await run("npm", ["run", "--silent", "build"], { cwd: path.join(import.meta.dirname, "..") });
  if (CPU_PROF !== undefined) await mkdir(CPU_PROF, { recursive: true });
  const servers = new Map<number, GitHttpServer>();
  try {
    for (const latencyMs of LATENCIES) servers.set(latencyMs, await startGitHttpServer({ root, latencyMs }));
    const what = STARTS_ONLY ? `start cells only, ${ROUNDS} rounds` : BASELINE !== undefined ? `broker cells only, ${ROUNDS} rounds` : `naive writer at ${NAIVE_SIZES.map(kilo).join(", ") || "none"}`;
    log(`sizes ${SIZES.map(kilo).join(", ")}; ${what}${BASELINE === undefined ? "" : `, baseline ${BASELINE}`}; remote latency ${LATENCIES.join(" and ")} ms`);
    for (const instances of SIZES) {
      if (STARTS_ONLY) await benchStarts(servers, instances);
      else if (BASELINE !== undefined) await benchAgainstBaseline(servers, instances);
      else await benchSize(servers, instances);
    }
  } finally {
    for (const server of servers.values()) await server.close();
    await rm(root, { recursive: true, force: true });
  }
  printReport();
}

/** The remote of one size, pre-filled, in its own directory under `root` (`n<instances>/remote.git`). */
async function prefilled(instances: number): Promise<{ dir: string } & Awaited<ReturnType<typeof prefillRemote>>> {
  const dir = path.join(root, `n${instances}`);
  await mkdir(dir);
  const t = performance.now();
  const filled = await prefillRemote(dir, instances);
  // The remote shares this machine's two cores: its background `git gc` after receiving pushes
  // would compete with the broker. A hosted remote runs its maintenance elsewhere; here it runs
  // between measurements (maintainRemote).
  await run("git", ["config", "receive.autogc", "false"], { env: { GIT_DIR: filled.remoteDir, ...BENCH_IDENTITY } });
  log(`${instances} instances: pre-filled in ${seconds(t)} s`);
  return { dir, ...filled };
}

async function benchSize(servers: Map<number, GitHttpServer>, instances: number): Promise<void> {
  const { dir, remoteDir, placement } = await prefilled(instances);
  for (const [latencyMs, git] of servers) {
    const remoteUrl = git.url(`n${instances}/remote.git`);
    const dataDir = path.join(dir, `gitwriter-${latencyMs}ms`);
    await benchBroker(instances, latencyMs, dataDir, remoteUrl, remoteDir);
    if (metricsCost) {
      await measureMetricsCost(instances, path.join(dir, "gitwriter-metrics"), remoteUrl, remoteDir);
      continue;
    }
    if (latencyMs === 0) {
      const cost = await measureWriterCost(path.join(dataDir, "work.git"), remoteUrl, placement, WRITER_COST_OPS);
      writerCosts.set(instances, cost);
      log(`${instances} instances: git writer alone ${cost.cpuMsPerOp.toFixed(2)} ms CPU per operation (${cost.ops} in ${(cost.wallMs / 1000).toFixed(1)} s)`);
    }
    if (NAIVE_SIZES.includes(instances)) await benchNaive(instances, latencyMs, path.join(dir, `naive-${latencyMs}ms`), remoteUrl, remoteDir);
  }
}

/** The broker: a new replica's start, the push round trip, the cells, at the largest size a restart. */
async function benchBroker(instances: number, latencyMs: number, dataDir: string, remoteUrl: string, remoteDir: string): Promise<void> {
  const key = `${instances}/${latencyMs}`;
  const broker = await startMeasured(instances, latencyMs, dataDir, remoteUrl, "empty (clone)");
  // On the repository as pre-filled, through the broker's clone (the broker is idle meanwhile).
  const t = performance.now();
  roundTrips.set(key, await pushRoundTrip(path.join(dataDir, "work.git"), remoteUrl));
  log(`${instances} instances, ${latencyMs} ms: push round trip ${ms(roundTrips.get(key)!)} ms (measured in ${seconds(t)} s)`);
  for (const clients of CLIENTS) {
    cells.push(await measure(broker, instances, latencyMs, "gitwriter", clients, CELL_MS));
    await maintainRemote(remoteDir);
  }
  peakUnderLoad.set(key, (await broker.memory()).peakMb);
  await broker.stop();
  if (!metricsCost && instances === SIZES[SIZES.length - 1]) {
    await (await startMeasured(instances, latencyMs, dataDir, remoteUrl, "existing (restart)")).stop();
  }
}

/**
 * --baseline without --starts: this checkout's broker and the baseline's, both cloned and running
 * on the same remote, their cells alternated ROUNDS times, the order swapped every round: the
 * same remote, load and machine for both. A broker whose turn comes finds the remote moved on;
 * its warm-up (not measured) takes the rejected push and the fetch that follows.
 */
async function benchAgainstBaseline(servers: Map<number, GitHttpServer>, instances: number): Promise<void> {
  const { dir, remoteDir } = await prefilled(instances);
  const variants = brokerVariants();
  for (const [latencyMs, git] of servers) {
    const remoteUrl = git.url(`n${instances}/remote.git`);
    const brokers: BrokerProcess[] = [];
    try {
      for (const [i, variant] of variants.entries()) {
        brokers.push(await spawnBroker({ dataDir: path.join(dir, `ab-${latencyMs}ms-${i}`), remoteUrl, command: variant.command }));
      }
      for (let round = 1; round <= ROUNDS; round++) {
        const order = round % 2 === 1 ? [0, 1] : [1, 0];
        for (const clients of CLIENTS) {
          for (const i of order) {
            const c = await measure(brokers[i]!, instances, latencyMs, "gitwriter", clients, CELL_MS, `r${round}-v${i}`);
            cells.push({ ...c, variant: { name: variants[i]!.name, baseline: variants[i]!.baseline, round } });
            log(`  (${variants[i]!.name}, round ${round})`);
            await maintainRemote(remoteDir);
          }
        }
      }
      for (const [i, broker] of brokers.entries()) abPeaks.push({ instances, latencyMs, name: variants[i]!.name, peakMb: (await broker.memory()).peakMb });
    } finally {
      for (const broker of brokers) await broker.stop();
    }
  }
}

async function benchNaive(instances: number, latencyMs: number, dataDir: string, remoteUrl: string, remoteDir: string): Promise<void> {
  const t = performance.now();
  const naive = await spawnBroker({ dataDir, remoteUrl, command: NAIVE_BROKER });
  // The substitution happens at module resolution: fail, rather than compare the writer with itself.
  if (!naive.logs.some((l) => l.msg === NAIVE_STARTED)) {
    await naive.stop();
    throw new Error(`the naive broker did not log "${NAIVE_STARTED}": it runs src/gitwriter, not the naive writer (bench/naive-hooks.mjs)`);
  }
  log(`${instances} instances, ${latencyMs} ms: naive broker cloned and listening in ${seconds(t)} s`);
  for (const clients of CLIENTS) {
    cells.push(await measure(naive, instances, latencyMs, "naive", clients, NAIVE_CELL_MS));
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
        cells.push(await measure(broker, instances, 0, "gitwriter+metrics", clients, CELL_MS));
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

/**
 * --starts: per remote, `ROUNDS` rounds of a new replica (fresh data directory) and a restart of
 * it, each stopped after its first provision (a stop waits for the writer's background repack);
 * with --baseline the baseline's broker first in each round, then this checkout's.
 */
async function benchStarts(servers: Map<number, GitHttpServer>, instances: number): Promise<void> {
  const { dir, remoteDir } = await prefilled(instances);
  const variants = brokerVariants();
  const remotes = [{ label: "", name: `n${instances}/remote.git`, dir: remoteDir }];
  if (BITMAP) {
    await run("cp", ["-a", path.dirname(remoteDir), path.join(root, `n${instances}-bitmap`)]);
    const copy = path.join(root, `n${instances}-bitmap`, path.basename(remoteDir));
    await run("git", ["repack", "-adq", "--write-bitmap-index"], { env: { GIT_DIR: copy, ...BENCH_IDENTITY } });
    remotes.push({ label: ", remote with a bitmap", name: `n${instances}-bitmap/remote.git`, dir: copy });
  }
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [latencyMs, git] of servers) {
      for (const remote of remotes) {
        for (const variant of variants) {
          const dataDir = path.join(dir, `start-${round}-${latencyMs}ms-${variants.indexOf(variant)}`);
          for (const kind of ["empty (clone)", "existing (restart)"] as const) {
            await (await startMeasured(instances, latencyMs, dataDir, git.url(remote.name), kind, { ...variant, name: `${variant.name}${remote.label}` })).stop();
            await maintainRemote(remote.dir);
          }
          await rm(dataDir, { recursive: true, force: true });
        }
      }
    }
  }
}

/** Spawns the broker and provisions one instance: how long until listening, until acknowledged. */
async function startMeasured(
  instances: number,
  latencyMs: number,
  dataDir: string,
  remoteUrl: string,
  kind: Start["dataDir"],
  variant: Variant = thisCheckout(),
): Promise<BrokerProcess> {
  const loadBefore = os.loadavg()[0]!;
  const spawnedAtWall = Date.now();
  const broker = await spawnBroker({ dataDir, remoteUrl, command: variant.command });
  const reply = await broker.osb.provision(`first-${kind === "empty (clone)" ? "clone" : "restart"}-${++firstProvisions}`, await provisionBody(broker), {
    query: { accepts_incomplete: "true" },
  });
  if (reply.status >= 300) throw new Error(`first provision answered ${reply.status}: ${JSON.stringify(reply.body)}`);
  const firstAckMs = performance.now() - broker.spawnedAt;
  const start: Start = {
    instances,
    latencyMs,
    dataDir: kind,
    broker: variant.name,
    phases: {},
    listeningS: broker.startMs / 1000,
    firstAckS: firstAckMs / 1000,
    peakRssMb: (await broker.memory()).peakMb,
    loadAvg: [loadBefore, os.loadavg()[0]!],
  };
  starts.push(start);
  // The phases come from log lines, some after the first provision (the repack): read at exit.
  void broker.exited.then(() => (start.phases = phases(broker, spawnedAtWall)));
  log(`${variant.name}: ${instances} instances, ${latencyMs} ms, data dir ${kind}: listening after ${start.listeningS.toFixed(1)} s, first provision acknowledged after ${start.firstAckS.toFixed(1)} s, peak RSS ${start.peakRssMb.toFixed(0)} MB, load ${loadAvg(start.loadAvg)}`);
  return broker;
}

/** Seconds from spawn to the log lines of a start's phases (pino's `time`: wall-clock ms). */
function phases(broker: BrokerProcess, spawnedAtWall: number): Start["phases"] {
  const at = (msg: string): number | undefined => {
    const line = broker.logs.find((l) => l.msg === msg);
    return typeof line?.time === "string" ? (Date.parse(line.time) - spawnedAtWall) / 1000 : undefined;
  };
  return {
    fetchedS: at("git writer started"),
    viewLoadedS: at("repository view loaded"),
    repackStartS: at("repacking the fetched pack with short delta chains") ?? repackStart(broker, at("fetched pack repacked with short delta chains")),
    repackEndS: at("fetched pack repacked with short delta chains"),
  };
}

/** A broker that does not log the repack's start (before 2026-11-29): its end less its duration. */
function repackStart(broker: BrokerProcess, endS: number | undefined): number | undefined {
  const ms = broker.logs.find((l) => l.msg === "fetched pack repacked with short delta chains")?.ms;
  return endS === undefined || typeof ms !== "number" ? undefined : endS - ms / 1000;
}

/** The brokers a run compares: the --baseline's first (if any), then this checkout's. */
function brokerVariants(): Variant[] {
  return [
    ...(BASELINE === undefined ? [] : [{ name: `baseline (${BASELINE})`, baseline: true, command: [path.resolve(BASELINE, "bin", "gitops-broker.js"), "serve"] }]),
    thisCheckout(),
  ];
}

function thisCheckout(): Variant {
  return { name: "this checkout", baseline: false, command: brokerCommand() };
}

/** The broker's command line; with --cpu-prof, node writes a profile into that directory on exit. */
function brokerCommand(): string[] {
  return CPU_PROF === undefined ? GITWRITER_BROKER : ["--cpu-prof", `--cpu-prof-dir=${CPU_PROF}`, ...GITWRITER_BROKER];
}

async function measure(broker: BrokerProcess, instances: number, latencyMs: number, writer: Cell["writer"], clients: number, maxMs: number, tag = ""): Promise<Cell> {
  const body = await provisionBody(broker);
  const prefix = `${writer}-${latencyMs}ms-${clients}${tag === "" ? "" : `-${tag}`}`;
  // Warm-up, not measured: JIT, connection pool, caches.
  await runLoad({ url: broker.url, credentials: CREDENTIALS, body, clients: Math.min(clients, 10), maxOps: 10, maxMs, idPrefix: `${prefix}-warm` });
  const pushesBefore = broker.logs.filter((l) => l.msg === "pushed").length;
  const cpuBefore = await broker.cpuSeconds();
  const loadBefore = os.loadavg()[0]!;
  const load = await runLoad({ url: broker.url, credentials: CREDENTIALS, body, clients, maxOps: 1_000_000, maxMs, idPrefix: prefix });
  const cpuMsPerOp = ((await broker.cpuSeconds()) - cpuBefore) * 1000 / Math.max(1, load.acked);
  const pushes = broker.logs.filter((l) => l.msg === "pushed").length - pushesBefore;
  const cell: Cell = {
    instances,
    latencyMs,
    writer,
    load,
    cpuMsPerOp,
    opsPerPush: writer !== "naive" && pushes > 0 ? load.acked / pushes : undefined,
    loadAvg: [loadBefore, os.loadavg()[0]!],
  };
  log(`${instances} instances, ${latencyMs} ms, ${writer}, ${clients} clients: ${opsPerSecond(load).toFixed(1)} ops/s, p50 ${ms(quantile(load.latencies, 0.5))} ms, p99 ${ms(quantile(load.latencies, 0.99))} ms, ${cpuMsPerOp.toFixed(2)} ms CPU/op, load ${loadAvg(cell.loadAvg)}`);
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
  out.push("| instances | remote latency | writer | clients | acked ops/s | p50 ms | p99 ms | acked | non-2xx | ops/push | broker CPU ms/op | load avg |");
  out.push("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const c of cells) {
    const failed = Object.values(c.load.failed).reduce((a, b) => a + b, 0);
    out.push(
      `| ${kilo(c.instances)} | ${c.latencyMs} ms | ${c.writer} | ${c.load.clients} | ${opsPerSecond(c.load).toFixed(1)} | ${ms(quantile(c.load.latencies, 0.5))} | ${ms(quantile(c.load.latencies, 0.99))} | ${c.load.acked} | ${failed} | ${c.opsPerPush?.toFixed(1) ?? "-"} | ${c.cpuMsPerOp.toFixed(2)} | ${loadAvg(c.loadAvg)} |`,
    );
  }
  if (metricsCost) {
    printMetricsCost(out);
    return;
  }
  if (BASELINE !== undefined && !STARTS_ONLY) {
    out.splice(2);
    write([...out, ...againstBaselineTable()]);
    return;
  }
  if (STARTS_ONLY) {
    out.splice(2);
    write([...out, ...startsTable(), "", "| target | measured | |", "|---|---|---|", ...startTargets()]);
    return;
  }
  const compared = cells.filter((c) => c.writer === "naive").map((n) => ({ naive: n, broker: cell(n.instances, n.latencyMs, "gitwriter", n.load.clients) }));
  out.push("", "| instances | remote latency | clients | broker ops/s | naive ops/s | broker / naive | load avg (broker; naive) |", "|---:|---:|---:|---:|---:|---:|---|");
  for (const { naive, broker } of compared) {
    out.push(`| ${kilo(naive.instances)} | ${naive.latencyMs} ms | ${naive.load.clients} | ${rate(broker).toFixed(1)} | ${rate(naive).toFixed(1)} | ${(rate(broker) / rate(naive)).toFixed(1)}x | ${broker ? loadAvg(broker.loadAvg) : "-"}; ${loadAvg(naive.loadAvg)} |`);
  }
  out.push("", "| instances | remote latency | one push round trip (median of 5, before the load) | git writer alone, CPU per operation | peak RSS under load |", "|---:|---:|---:|---:|---:|");
  for (const n of SIZES) {
    for (const latencyMs of LATENCIES) {
      const cost = latencyMs === 0 ? writerCosts.get(n) : undefined;
      const key = `${n}/${latencyMs}`;
      out.push(`| ${kilo(n)} | ${latencyMs} ms | ${ms(roundTrips.get(key) ?? NaN)} ms | ${cost ? `${cost.cpuMsPerOp.toFixed(2)} ms (${cost.ops} ops)` : "-"} | ${(peakUnderLoad.get(key) ?? NaN).toFixed(0)} MB |`);
    }
  }
  out.push(...startsTable());
  out.push("", "| target | measured | |", "|---|---|---|");
  out.push(...targets(compared));
  write(out);
}

/** The report's tables to stdout, and the run's total time. */
function write(tables: string[]): void {
  process.stdout.write(`\n${[...tables, "", `Total run time ${seconds(started)} s.`].join("\n")}\n`);
}

/** --baseline cells: per round both brokers side by side, then the medians and their ratio. */
function againstBaselineTable(): string[] {
  const out = ["| instances | remote latency | clients | round | baseline ops/s | this ops/s | baseline CPU ms/op | this CPU ms/op | load avg (baseline; this) |", "|---:|---:|---:|---:|---:|---:|---:|---:|---|"];
  const summary = ["", "| instances | remote latency | clients | rounds | ops/s: baseline / this (median) | CPU ms/op: baseline / this (median) | CPU this / baseline |", "|---:|---:|---:|---:|---:|---:|---:|"];
  for (const n of SIZES) {
    for (const latencyMs of LATENCIES) {
      for (const clients of CLIENTS) {
        const of = (baseline: boolean) => cells.filter((c) => c.instances === n && c.latencyMs === latencyMs && c.load.clients === clients && c.variant?.baseline === baseline);
        const [base, mine] = [of(true), of(false)];
        for (let round = 1; round <= ROUNDS; round++) {
          const [b, m] = [base.find((c) => c.variant!.round === round), mine.find((c) => c.variant!.round === round)];
          if (b && m) out.push(`| ${kilo(n)} | ${latencyMs} ms | ${clients} | ${round} | ${rate(b).toFixed(1)} | ${rate(m).toFixed(1)} | ${b.cpuMsPerOp.toFixed(2)} | ${m.cpuMsPerOp.toFixed(2)} | ${loadAvg(b.loadAvg)}; ${loadAvg(m.loadAvg)} |`);
        }
        if (base.length === 0 || mine.length === 0) continue;
        const [rb, rm] = [median(base.map(rate)), median(mine.map(rate))];
        const [cb, cm] = [median(base.map((c) => c.cpuMsPerOp)), median(mine.map((c) => c.cpuMsPerOp))];
        summary.push(`| ${kilo(n)} | ${latencyMs} ms | ${clients} | ${Math.min(base.length, mine.length)} | ${rb.toFixed(1)} / ${rm.toFixed(1)} | ${cb.toFixed(2)} / ${cm.toFixed(2)} | ${(cm / cb).toFixed(2)}x |`);
      }
    }
  }
  const peaks = ["", "| instances | remote latency | broker | peak RSS over its cells |", "|---:|---:|---|---:|"];
  for (const p of abPeaks) peaks.push(`| ${kilo(p.instances)} | ${p.latencyMs} ms | ${p.name} | ${p.peakMb.toFixed(0)} MB |`);
  return [...out, ...summary, ...peaks];
}

function startsTable(): string[] {
  const out = ["", "| instances | remote latency | broker | data dir | listening after | first provision acknowledged after | peak RSS | load avg | fetched / view loaded / repack s |", "|---:|---:|---|---|---:|---:|---:|---:|---|"];
  const s1 = (x: number | undefined) => (x === undefined ? "-" : x.toFixed(1));
  for (const s of starts) {
    const p = s.phases;
    const repack = p.repackEndS === undefined ? "none" : `${s1(p.repackStartS)}-${s1(p.repackEndS)}`;
    out.push(`| ${kilo(s.instances)} | ${s.latencyMs} ms | ${s.broker} | ${s.dataDir} | ${s.listeningS.toFixed(1)} s | ${s.firstAckS.toFixed(1)} s | ${s.peakRssMb.toFixed(0)} MB | ${loadAvg(s.loadAvg)} | ${s1(p.fetchedS)} / ${s1(p.viewLoadedS)} / ${repack} |`);
  }
  return out;
}

function targets(compared: { naive: Cell; broker: Cell | undefined }[]): string[] {
  const out: string[] = [];
  const verdict = (ok: boolean) => (ok ? "met" : "MISSED");
  const hosted = Math.max(...LATENCIES);
  const mid = SIZES.includes(10_000) ? 10_000 : SIZES[SIZES.length - 1]!;
  const [smallest, big] = [SIZES[0]!, SIZES[SIZES.length - 1]!];
  const loopback = cell(mid, 0, "gitwriter", 200);
  if (loopback) out.push(`| >= 300 acknowledged ops/s, 200 clients, ${kilo(mid)} instances, loopback | ${rate(loopback).toFixed(1)} ops/s | ${verdict(rate(loopback) >= 300)} |`);
  for (const [clients, factor] of [[200, 20], [20, 5]] as const) {
    const [b, n] = [cell(mid, hosted, "gitwriter", clients), cell(mid, hosted, "naive", clients)];
    if (b && n) out.push(`| >= ${factor}x the naive writer, ${clients} clients, ${kilo(mid)}, ${hosted} ms remote | ${(rate(b) / rate(n)).toFixed(1)}x (${rate(b).toFixed(1)} vs ${rate(n).toFixed(1)} ops/s) | ${verdict(rate(b) >= factor * rate(n))} |`);
  }
  if (compared.length > 0) {
    const slower = compared.filter(({ naive, broker }) => !(rate(broker) >= rate(naive)));
    const worst = Math.min(...compared.map(({ naive, broker }) => rate(broker) / rate(naive)));
    out.push(`| never slower than the naive writer (${compared.length} cells) | lowest ratio ${worst.toFixed(1)}x${slower.length > 0 ? `; slower: ${slower.map(({ naive }) => `${kilo(naive.instances)}/${naive.latencyMs} ms/${naive.load.clients}`).join(", ")}` : ""} | ${verdict(slower.length === 0)} |`);
  }
  for (const latencyMs of LATENCIES) {
    for (const [n, limit] of [[10_000, 1.5], [100_000, 2]] as const) {
      const c = cell(n, latencyMs, "gitwriter", 200);
      if (c) out.push(`| broker CPU <= ${limit} ms per acknowledged op, 200 clients, ${kilo(n)}, ${latencyMs} ms remote | ${c.cpuMsPerOp.toFixed(2)} ms | ${verdict(c.cpuMsPerOp <= limit)} |`);
    }
    const [small, large] = [cell(smallest, latencyMs, "gitwriter", 200), cell(big, latencyMs, "gitwriter", 200)];
    if (small && large && big > smallest) {
      const ratio = large.cpuMsPerOp / small.cpuMsPerOp;
      out.push(`| broker CPU per op at ${kilo(big)} within 1.5x of ${kilo(smallest)}, 200 clients, ${latencyMs} ms remote | ${large.cpuMsPerOp.toFixed(2)} vs ${small.cpuMsPerOp.toFixed(2)} ms = ${ratio.toFixed(2)}x | ${verdict(ratio <= 1.5)} |`);
    }
    const rtt = roundTrips.get(`${mid}/${latencyMs}`) ?? NaN;
    const inRoundTrips = CLIENTS.map((clients) => ({ clients, p99: quantile(cell(mid, latencyMs, "gitwriter", clients)?.load.latencies ?? [], 0.99) / rtt }));
    const met = inRoundTrips.filter((x) => x.p99 <= 3).map((x) => x.clients);
    out.push(
      `| p99 ack latency <= 3 push round trips, ${kilo(mid)}, ${latencyMs} ms remote (one round trip: ${ms(rtt)} ms) | ${inRoundTrips.map((x) => `${x.clients} clients: ${x.p99.toFixed(1)}`).join(", ")} | ${met.length === CLIENTS.length ? "met" : met.length > 0 ? `met with ${met.join(" and ")} client(s) only` : "MISSED"} |`,
    );
  }
  const [costSmall, costLarge] = [writerCosts.get(smallest), writerCosts.get(big)];
  if (costSmall && costLarge && big > smallest) {
    const ratio = costLarge.cpuMsPerOp / costSmall.cpuMsPerOp;
    out.push(`| git writer alone, CPU per op at ${kilo(big)} within 1.5x of ${kilo(smallest)} | ${costLarge.cpuMsPerOp.toFixed(2)} vs ${costSmall.cpuMsPerOp.toFixed(2)} ms = ${ratio.toFixed(2)}x | ${verdict(ratio <= 1.5)} |`);
  }
  out.push(...startTargets());
  return out;
}

function startTargets(): string[] {
  return starts.filter((x) => x.instances === 100_000).map((s) => {
    const met = s.firstAckS <= 10 && s.peakRssMb <= 400;
    return `| start at 100k: first provision <= 10 s, RSS <= 400 MB (${s.broker}, data dir ${s.dataDir}, ${s.latencyMs} ms remote) | first ack ${s.firstAckS.toFixed(1)} s, ${s.peakRssMb.toFixed(0)} MB | ${met ? "met" : "MISSED"} |`;
  });
}

function printMetricsCost(out: string[]): void {
  out.push("", "| instances | clients | ops/s without metrics | with metrics | change | CPU ms/op without | with | change |", "|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const n of SIZES) {
    for (const clients of CLIENTS) {
      const [a, b] = [cell(n, 0, "gitwriter", clients), cell(n, 0, "gitwriter+metrics", clients)];
      if (!a || !b) continue;
      const pct = (x: number, y: number) => `${(((y - x) / x) * 100).toFixed(1)} %`;
      out.push(`| ${kilo(n)} | ${clients} | ${rate(a).toFixed(1)} | ${rate(b).toFixed(1)} | ${pct(rate(a), rate(b))} | ${a.cpuMsPerOp.toFixed(2)} | ${b.cpuMsPerOp.toFixed(2)} | ${pct(a.cpuMsPerOp, b.cpuMsPerOp)} |`);
    }
  }
  write(out);
}

function cell(instances: number, latencyMs: number, writer: Cell["writer"], clients: number): Cell | undefined {
  return cells.find((c) => c.instances === instances && c.latencyMs === latencyMs && c.writer === writer && c.load.clients === clients);
}

function rate(c: Cell | undefined): number {
  return c === undefined ? NaN : opsPerSecond(c.load);
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

function loadAvg([before, after]: [number, number]): string {
  return `${before.toFixed(1)}-${after.toFixed(1)}`;
}

/** `--name=value` of the command line. */
function option(name: string): string | undefined {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  return arg?.slice(name.length + 3);
}

/** `--name=1k,10000`: numbers, `k` for thousands. */
function numbers(name: string): number[] | undefined {
  const value = option(name);
  if (value === undefined) return undefined;
  return value.split(",").filter((v) => v !== "").map((v) => {
    const n = v.endsWith("k") ? Number(v.slice(0, -1)) * 1000 : Number(v);
    if (!Number.isFinite(n) || n < 0) throw new Error(`--${name}=${value}: numbers, k for thousands`);
    return n;
  });
}
