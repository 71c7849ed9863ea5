/**
 * `npx tsx bench/stores.ts [--quick]`: one store against four stores of the same total (ADR 0027),
 * side by side in one run. docs/benchmarks.md says what the figures mean.
 *
 * Everything is real and on this machine: one smart-HTTP Git server on loopback (the test remote
 * of test/support/git-http-server.ts) serving every bare repository; brokers started by
 * `startBroker` on port 0, each in a process of its own (bench/stores-broker.ts), so that its CPU
 * is its own; the OSB load of bench/load.ts. Every layout has the same four clusters c1..c4 and a
 * control repository (catalog, registry); the clusters' instances are
 *   - one store:    all four clusters in store `one` (one repository for every instance),
 *   - four stores:  cluster ci in store `si` (four repositories),
 *   - control only: (full run, for reference) all four in the control repository, no stores (the
 *                   layout of a broker before stores).
 * The repositories are pre-filled by bench/prefill.ts (git fast-import), the same number of
 * instances on every cluster.
 *
 * 1. Throughput: THROUGHPUT_INSTANCES in total, CLIENTS closed-loop clients provisioning new ids
 *    (round-robin over the four clusters) for CELL_MS per cell, the sides interleaved
 *    (A B, then B A, ...) so that the machine's other load hits them alike. Per cell: acknowledged
 *    ops/s, latency, CPU per acknowledged operation of the broker process, of the git processes
 *    it ran, of the remote's git services and of this process (load and the HTTP front of the
 *    remote), how busy the machine's CPUs were (/proc/stat), and per repository the pushes the
 *    remote took (its reflog), the fetches it answered (info/refs GETs that were no push) and the
 *    share of the cell a push of that repository was in flight (the writer's `pushed` lines).
 * 2. Start-up: per size, the same layouts at that total; startBroker to listening, to the first
 *    answered GET /v2/catalog, to the first acknowledged provision, with an empty data directory
 *    (clone) and again on the same one (restart), interleaved.
 *
 * Pacing is bench/push-pacing.ts's. Tables to stdout (markdown), progress to stderr.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Config } from "../src/config/index.js";
import { CREDENTIALS, testConfig } from "../test/support/broker-harness.js";
import { startGitHttpServer, type GitHttpServer } from "../test/support/git-http-server.js";
import { osbClient } from "../test/support/osb-client.js";
import { cleanUp, startProcess, type TrackedProcess } from "../test/support/processes.js";
import { memoryOf } from "../test/write-path/broker-process.js";
import { run } from "./exec.js";
import { median, quantile, runLoad, type LoadResult } from "./load.js";
import { prefillStores, type PrefillCluster, type SamplePlacement } from "./prefill.js";
import { remoteLatencyMs } from "./remote-latency.js";
import type { StartedMessage } from "./stores-broker.js";

const quick = process.argv.includes("--quick");
const CLIENTS = 200;
const THROUGHPUT_INSTANCES = 10_000;
const CELL_MS = quick ? 5_000 : 10_000;
/** Rounds of the throughput cells; each round runs every side once, the order alternating. */
const ROUNDS = quick ? 1 : 4;
const START_SIZES = quick ? [10_000] : [10_000, 100_000];
const START_ROUNDS = quick ? 1 : 2;
const CLUSTERS = ["c1", "c2", "c3", "c4"];
const CHILD = path.join(import.meta.dirname, "stores-broker.ts");
/** REMOTE_LATENCY_MS=150 for a hosted remote's latency (bench/remote-latency.ts); loopback by default. */
const REMOTE_LATENCY_MS = remoteLatencyMs(0);
/** How the brokers place new instances over the four clusters (SCHEDULER=least-utilized to compare). */
const SCHEDULER = (process.env.SCHEDULER ?? "round-robin") as Config["scheduler"]["type"];
const CLOCK_TICKS = 100;

type SideName = "one store" | "four stores" | "control only";
const THROUGHPUT_SIDES: SideName[] = quick ? ["one store", "four stores"] : ["one store", "four stores", "control only"];
const START_SIDES: SideName[] = ["one store", "four stores"];

/** The clusters of a side, `total` instances spread evenly over them. */
function layout(side: SideName, total: number): PrefillCluster[] {
  const each = total / CLUSTERS.length;
  return CLUSTERS.map((id, i) => {
    const store = side === "one store" ? "one" : side === "four stores" ? `s${i + 1}` : undefined;
    return { id, instances: each, ...(store !== undefined ? { store } : {}) };
  });
}

interface Layout {
  side: SideName;
  instances: number;
  /** Directory of this layout's repositories below the server's root (`<dir>/<repo>.git`). */
  dir: string;
  /** Repository names as the server serves them (`<rel>/<name>.git`) -> store name ("control" for the control repository). */
  repos: Map<string, string>;
  config: Config;
  body: Record<string, unknown>;
}

const loadAtStart = os.loadavg().map((l) => l.toFixed(2)).join(" ");
const root = await mkdtemp(path.join(os.tmpdir(), "gitops-broker-bench-stores-"));
const started = performance.now();
const progress = (message: string): void => {
  process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s, load ${loadText()}] ${message}\n`);
};
const loadText = (): string => os.loadavg().map((l) => l.toFixed(2)).join(" ");

/** Pre-fills a layout's repositories below `<root>/<name>` and writes its broker configuration. */
async function makeLayout(git: GitHttpServer, name: string, side: SideName, instances: number): Promise<Layout> {
  const dir = path.join(root, name);
  await mkdir(dir, { recursive: true });
  const t = performance.now();
  const prefilled = await prefillStores(dir, layout(side, instances));
  for (const repo of [prefilled.controlDir, ...prefilled.storeDirs.values()]) {
    // The remote's background gc would compete for the two cores; it runs between cells instead.
    await run("git", ["config", "receive.autogc", "false"], { env: { GIT_DIR: repo } });
    // One reflog entry per accepted update of the branch: the pushes the remote took.
    await run("git", ["config", "core.logAllRefUpdates", "true"], { env: { GIT_DIR: repo } });
  }
  progress(`${name}: ${side}, ${instances} instances pre-filled in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const url = (repoDir: string) => git.url(`${name}/${path.basename(repoDir)}`);
  const config = testConfig(root, `${name}-broker`, url(prefilled.controlDir), { pushTimeoutSeconds: 120, activityTimeoutSeconds: 60 }, SCHEDULER);
  config.log = { ...config.log, level: "info" };
  config.stores = Object.fromEntries(
    [...prefilled.storeDirs].map(([store, repoDir]) => [store, { remote: url(repoDir), branch: "main", minPushIntervalSeconds: 0, pollIntervalSeconds: 3600 }]),
  );
  const repos = new Map<string, string>([[`/${name}/control.git`, "control"], ...[...prefilled.storeDirs.keys()].map((s): [string, string] => [`/${name}/${s}.git`, s])]);
  const placement: SamplePlacement = prefilled.placements.get(CLUSTERS[0]!)!;
  const body = { service_id: placement.service.id, plan_id: placement.plan.id, organization_guid: "bench-org", space_guid: "bench-space" };
  return { side, instances, dir, repos, config, body };
}

interface Pushed {
  store: string;
  ops: number;
  ms: number;
}

interface BrokerChild {
  proc: TrackedProcess;
  started: StartedMessage;
  /** The writers' `pushed` lines so far. */
  pushed: Pushed[];
  /** Log lines at error level so far. */
  errors: string[];
  stop(): Promise<void>;
}

/** Starts the broker of `l` on data directory `dataDir`; resolves once it answered GET /v2/catalog. */
async function startChild(l: Layout, dataDir: string): Promise<BrokerChild> {
  const config: Config = { ...l.config, dataDir };
  const file = path.join(root, `${path.basename(dataDir)}.json`);
  await writeFile(file, JSON.stringify(config));
  const proc = startProcess(process.execPath, ["--import", "tsx", CHILD, file], { stdio: ["ignore", "pipe", "pipe", "ipc"], keepOutput: false });
  const pushed: Pushed[] = [];
  const errors: string[] = [];
  proc.onLine((line) => {
    if (line.includes('"msg":"pushed"')) {
      const entry = JSON.parse(line) as { store?: string; ops: number; ms: number };
      pushed.push({ store: entry.store ?? "control", ops: entry.ops, ms: entry.ms });
    } else if (line.startsWith('{"level":50') || line.startsWith('{"level":60')) errors.push(line);
  });
  const message = await new Promise<StartedMessage>((resolve, reject) => {
    const ceiling = setTimeout(() => reject(new Error(`${l.side}: no start within 600 s; stderr: ${proc.stderr()}`)), 600_000);
    proc.child.on("message", (m: StartedMessage) => {
      clearTimeout(ceiling);
      resolve(m);
    });
    void proc.exited.then(({ code }) => {
      clearTimeout(ceiling);
      reject(new Error(`${l.side}: the broker exited (${String(code)}) before it started; stderr: ${proc.stderr()}`));
    });
  });
  brokerPids.add(proc.pid);
  return {
    proc,
    started: message,
    pushed,
    errors,
    async stop() {
      proc.signal("SIGTERM");
      await proc.exited;
      brokerPids.delete(proc.pid);
    },
  };
}

interface ProcCpu {
  ppid: number;
  /** utime+stime: the process, every thread (what process.cpuUsage() says inside it), seconds. */
  self: number;
  /** cutime+cstime: its children that exited and were waited for, seconds. */
  reaped: number;
}

/** Every process's CPU so far, from /proc/<pid>/stat. */
function processTable(): Map<number, ProcCpu> {
  const table = new Map<number, ProcCpu>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ").map(Number);
    table.set(Number(entry), { ppid: f[1]!, self: (f[11]! + f[12]!) / CLOCK_TICKS, reaped: (f[13]! + f[14]!) / CLOCK_TICKS });
  }
  return table;
}

/**
 * CPU seconds of `pid` itself and of everything below it: its live descendants (self and what they
 * reaped) and the children it reaped itself. Each CPU second is counted once, so the difference
 * of two readings is what the tree used between them, a child that exited meanwhile included.
 * Subtrees rooted at `exclude` are left out (the brokers, below this process).
 */
function treeCpu(table: Map<number, ProcCpu>, pid: number, exclude: ReadonlySet<number> = new Set()): { self: number; below: number } {
  const children = new Map<number, number[]>();
  for (const [child, p] of table) children.set(p.ppid, [...(children.get(p.ppid) ?? []), child]);
  const root = table.get(pid);
  if (root === undefined) return { self: 0, below: 0 };
  let below = root.reaped;
  const walk = (at: number): void => {
    for (const child of children.get(at) ?? []) {
      if (exclude.has(child)) continue;
      const p = table.get(child)!;
      below += p.self + p.reaped;
      walk(child);
    }
  };
  walk(pid);
  return { self: root.self, below };
}

/** Busy and total jiffies of the machine's CPUs (/proc/stat), every process counted. */
function machineTicks(): { busy: number; total: number } {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = fields[3]! + fields[4]!;
  return { busy: total - idle, total };
}

interface RepoFigures {
  store: string;
  pushes: number;
  fetches: number;
  /** Operations the broker's pushes of this repository carried. */
  ops: number;
  /** Sum of the pushes' durations (the writer's measure), ms. */
  pushMs: number;
  pushMsSorted: number[];
}

interface Cell {
  side: SideName;
  round: number;
  load: LoadResult;
  /** CPU seconds over the cell. */
  cpu: { broker: number; brokerGit: number; remoteGit: number; bench: number };
  /** Share of the machine's CPUs busy (every process, other work on the machine included). */
  machineBusy: number;
  loadBefore: number;
  loadAfter: number;
  repos: RepoFigures[];
}

/** Info/refs GETs per repository (store name) among the server's requests `from`..`to`: one per fetch and one per push. */
function advertisementsBy(git: GitHttpServer, from: number, to: number, l: Layout): Map<string, number> {
  const counts = new Map<string, number>([...l.repos.values()].map((store) => [store, 0]));
  for (const r of git.requests.slice(from, to)) {
    if (r.method !== "GET" || !r.path.endsWith("/info/refs")) continue;
    const repo = [...l.repos.keys()].find((prefix) => r.path === `${prefix}/info/refs`);
    if (repo !== undefined) counts.set(l.repos.get(repo)!, counts.get(l.repos.get(repo)!)! + 1);
  }
  return counts;
}

/**
 * Accepted updates of the branch per repository (store name), from the remotes' reflogs. Not the
 * receive-pack POSTs: git sends a large push's pack after a probe POST, so those count some pushes twice.
 */
function refUpdatesBy(l: Layout): Map<string, number> {
  return new Map(
    [...l.repos].map(([repo, store]) => {
      let text = "";
      try {
        text = readFileSync(path.join(root, repo, "logs", "refs", "heads", "main"), "utf8");
      } catch {
        // no update yet
      }
      return [store, text.split("\n").filter((line) => line !== "").length];
    }),
  );
}

/** Every broker process this run started and has not stopped: their CPU is not the remote's. */
const brokerPids = new Set<number>();

async function measure(git: GitHttpServer, l: Layout, broker: BrokerChild, round: number): Promise<Cell> {
  const prefix = `${l.side.replace(" ", "-")}-r${round}`;
  // Warm-up, not measured: JIT, connection pool, the first folds.
  await runLoad({ url: broker.started.url, credentials: CREDENTIALS, body: l.body, clients: 10, maxOps: 20, maxMs: CELL_MS, idPrefix: `${prefix}-warm` });
  const loadBefore = os.loadavg()[0]!;
  const requestsBefore = git.requests.length;
  const updatesBefore = refUpdatesBy(l);
  const pushedBefore = broker.pushed.length;
  const readings = () => {
    const table = processTable();
    return { broker: treeCpu(table, broker.proc.pid), bench: treeCpu(table, process.pid, brokerPids), machine: machineTicks() };
  };
  const before = readings();
  const load = await runLoad({ url: broker.started.url, credentials: CREDENTIALS, body: l.body, clients: CLIENTS, maxOps: 1_000_000, maxMs: CELL_MS, idPrefix: prefix });
  const after = readings();
  const loadAfter = os.loadavg()[0]!;
  const advertisements = advertisementsBy(git, requestsBefore, git.requests.length, l);
  const updatesAfter = refUpdatesBy(l);
  const pushed = broker.pushed.slice(pushedBefore);
  const repos = [...advertisements].map(([store, gets]): RepoFigures => {
    const mine = pushed.filter((p) => p.store === store);
    const pushes = updatesAfter.get(store)! - updatesBefore.get(store)!;
    if (pushes !== mine.length) progress(`${l.side}: ${store} took ${pushes} pushes, the broker logged ${mine.length}`);
    return {
      store,
      pushes,
      fetches: gets - pushes,
      ops: mine.reduce((n, p) => n + p.ops, 0),
      pushMs: mine.reduce((n, p) => n + p.ms, 0),
      pushMsSorted: mine.map((p) => p.ms).sort((a, b) => a - b),
    };
  });
  const cell: Cell = {
    side: l.side,
    round,
    load,
    cpu: {
      broker: after.broker.self - before.broker.self,
      brokerGit: after.broker.below - before.broker.below,
      remoteGit: after.bench.below - before.bench.below,
      bench: after.bench.self - before.bench.self,
    },
    machineBusy: (after.machine.busy - before.machine.busy) / (after.machine.total - before.machine.total),
    loadBefore,
    loadAfter,
    repos,
  };
  progress(`${l.side}, round ${round}: ${rate(load).toFixed(1)} acknowledged ops/s, p50 ${quantile(load.latencies, 0.5).toFixed(0)} ms, broker CPU ${((cell.cpu.broker * 1000) / Math.max(1, load.acked)).toFixed(2)} ms/op, machine busy ${(cell.machineBusy * 100).toFixed(0)} %`);
  for (const line of broker.errors.splice(0)) progress(`${l.side}: the broker logged an error: ${line}`);
  await maintain(l);
  return cell;
}

/** The remote's housekeeping between cells: roll up the packs the pushes left (as bench/run.ts). */
async function maintain(l: Layout): Promise<void> {
  for (const repo of l.repos.keys()) {
    await run("git", ["repack", "-d", "-q", "--geometric=2", "--no-write-bitmap-index"], { env: { GIT_DIR: path.join(root, repo) } });
  }
}

const rate = (load: LoadResult): number => (load.acked * 1000) / load.elapsedMs;

interface Start {
  side: SideName;
  instances: number;
  round: number;
  dataDir: "empty (clone)" | "existing (restart)";
  listeningMs: number;
  catalogMs: number;
  firstAckMs: number;
  peakRssMb: number;
  loadBefore: number;
  loadAfter: number;
}

async function measureStart(l: Layout, dataDir: string, kind: Start["dataDir"], round: number): Promise<Start> {
  const loadBefore = os.loadavg()[0]!;
  const broker = await startChild(l, dataDir);
  try {
    const osb = osbClient(broker.started.url, CREDENTIALS);
    const reply = await osb.provision(`first-${kind === "empty (clone)" ? "clone" : "restart"}-r${round}`, l.body, { query: { accepts_incomplete: "true" } });
    if (reply.status >= 300) throw new Error(`${l.side}: the first provision answered ${reply.status}: ${JSON.stringify(reply.body)}`);
    const firstAckMs = performance.timeOrigin + performance.now() - broker.started.startedAt;
    const start: Start = {
      side: l.side,
      instances: l.instances,
      round,
      dataDir: kind,
      listeningMs: broker.started.listeningMs,
      catalogMs: broker.started.catalogMs,
      firstAckMs,
      peakRssMb: (await memoryOf(broker.proc.pid)).peakMb,
      loadBefore,
      loadAfter: os.loadavg()[0]!,
    };
    progress(`${l.side}, ${l.instances} instances, ${kind}: listening after ${(start.listeningMs / 1000).toFixed(2)} s, catalog ${(start.catalogMs / 1000).toFixed(2)} s, first provision ${(firstAckMs / 1000).toFixed(2)} s`);
    return start;
  } finally {
    await broker.stop();
  }
}

/** The order of the sides in round `round`: A B, then B A, ... */
function order<T>(sides: readonly T[], round: number): T[] {
  return round % 2 === 0 ? [...sides] : [...sides].reverse();
}

async function main(): Promise<void> {
  const git = await startGitHttpServer({ root, latencyMs: REMOTE_LATENCY_MS });
  const cells: Cell[] = [];
  const starts: Start[] = [];
  try {
    progress(`${os.cpus().length} CPUs, ${quick ? "--quick" : "full run"}`);
    // Start-up first, on repositories as pre-filled.
    for (const size of START_SIZES) {
      const layouts = await Promise.all(START_SIDES.map(async (side, i) => makeLayout(git, `start-${size}-${i}`, side, size)));
      for (let round = 0; round < START_ROUNDS; round++) {
        const dirs = new Map(layouts.map((l) => [l, path.join(root, `${path.basename(l.dir)}-data-r${round}`)]));
        for (const l of order(layouts, round)) starts.push(await measureStart(l, dirs.get(l)!, "empty (clone)", round));
        for (const l of order(layouts, round + 1)) starts.push(await measureStart(l, dirs.get(l)!, "existing (restart)", round));
      }
      for (const l of layouts) await rm(l.dir, { recursive: true, force: true });
      for (let round = 0; round < START_ROUNDS; round++) {
        for (const l of layouts) await rm(path.join(root, `${path.basename(l.dir)}-data-r${round}`), { recursive: true, force: true });
      }
    }

    const layouts: Layout[] = [];
    for (const [i, side] of THROUGHPUT_SIDES.entries()) layouts.push(await makeLayout(git, `load-${i}`, side, THROUGHPUT_INSTANCES));
    const brokers = new Map<Layout, BrokerChild>();
    try {
      for (const l of layouts) {
        brokers.set(l, await startChild(l, path.join(root, `${path.basename(l.dir)}-data`)));
        progress(`${l.side}: broker listening`);
      }
      for (let round = 0; round < ROUNDS; round++) {
        for (const l of order(layouts, round)) cells.push(await measure(git, l, brokers.get(l)!, round));
      }
    } finally {
      for (const b of brokers.values()) await b.stop();
    }
  } finally {
    await git.close();
    await rm(root, { recursive: true, force: true });
  }
  report(cells, starts);
}

const ms = (x: number): string => x.toFixed(0);
const s2 = (x: number): string => (x / 1000).toFixed(2);

function report(cells: Cell[], starts: Start[]): void {
  const out: string[] = [];
  const cpuModel = os.cpus()[0]?.model.trim() ?? "?";
  out.push(`## Stores, ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} CPUs (${cpuModel}), node ${process.version}${quick ? ", --quick" : ""}`, "");
  out.push(`### Throughput: ${THROUGHPUT_INSTANCES} instances pre-filled, ${CLIENTS} clients, ${CELL_MS / 1000} s per cell, scheduler ${SCHEDULER}, remote latency ${REMOTE_LATENCY_MS} ms`, "");
  out.push("| side | round | acked ops/s | p50 ms | p99 ms | acked | non-2xx | fetches/op | broker CPU ms/op | its git ms/op | remote git ms/op | bench ms/op | CPU of these, % of 2 cores | machine busy | load before / after |");
  out.push("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
  const perOp = (c: Cell, seconds: number) => ((seconds * 1000) / Math.max(1, c.load.acked)).toFixed(2);
  for (const c of cells) {
    const failed = Object.entries(c.load.failed).map(([status, n]) => `${n}x${status}`).join(" ") || "0";
    const ours = (c.cpu.broker + c.cpu.brokerGit + c.cpu.remoteGit + c.cpu.bench) / (c.load.elapsedMs / 1000) / os.cpus().length;
    out.push(
      `| ${c.side} | ${c.round + 1} | ${rate(c.load).toFixed(1)} | ${ms(quantile(c.load.latencies, 0.5))} | ${ms(quantile(c.load.latencies, 0.99))} | ${c.load.acked} | ${failed} | ${(c.repos.reduce((n, r) => n + r.fetches, 0) / Math.max(1, c.load.acked)).toFixed(2)} | ${perOp(c, c.cpu.broker)} | ${perOp(c, c.cpu.brokerGit)} | ${perOp(c, c.cpu.remoteGit)} | ${perOp(c, c.cpu.bench)} | ${(ours * 100).toFixed(0)} % | ${(c.machineBusy * 100).toFixed(0)} % | ${c.loadBefore.toFixed(2)} / ${c.loadAfter.toFixed(2)} |`,
    );
  }
  out.push("", "Per repository (pushes: the remote's accepted updates of the branch; fetches: its info/refs GETs that were no push):", "");
  out.push("| side | round | repository | acked ops | pushes | pushes/min | fetches/min | ops/push | push p50 ms | push in flight, % of the cell |");
  out.push("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|");
  for (const c of cells) {
    const minutes = c.load.elapsedMs / 60_000;
    for (const r of c.repos) {
      out.push(
        `| ${c.side} | ${c.round + 1} | ${r.store} | ${r.ops} | ${r.pushes} | ${(r.pushes / minutes).toFixed(0)} | ${(r.fetches / minutes).toFixed(0)} | ${r.pushes > 0 ? (r.ops / r.pushes).toFixed(1) : "-"} | ${r.pushes > 0 ? ms(quantile(r.pushMsSorted, 0.5)) : "-"} | ${((r.pushMs / c.load.elapsedMs) * 100).toFixed(0)} % |`,
      );
    }
  }
  const medianOf = (side: SideName, pick: (c: Cell) => number) => median(cells.filter((c) => c.side === side).map(pick));
  const allCpu = (c: Cell) => c.cpu.broker + c.cpu.brokerGit + c.cpu.remoteGit + c.cpu.bench;
  const stores = (c: Cell) => c.repos.filter((r) => r.store !== "control" || c.side === "control only");
  out.push("", "Medians of the rounds, per side (CPU: every process of the setup; pushes and in flight: over the repositories holding instances):", "");
  out.push("| side | acked ops/s | CPU ms/op, all | broker CPU ms/op | fetches/op | pushes/min per repository | push in flight, busiest repository | CPU of these, % of 2 cores | machine busy |");
  out.push("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const side of THROUGHPUT_SIDES) {
    const m = (pick: (c: Cell) => number) => medianOf(side, pick);
    const fetches = (c: Cell) => c.repos.reduce((n, r) => n + r.fetches, 0) / Math.max(1, c.load.acked);
    const pushesPerMinute = (c: Cell) => stores(c).reduce((n, r) => n + r.pushes, 0) / stores(c).length / (c.load.elapsedMs / 60_000);
    const busiest = (c: Cell) => Math.max(...stores(c).map((r) => r.pushMs / c.load.elapsedMs));
    const share = (c: Cell) => allCpu(c) / (c.load.elapsedMs / 1000) / os.cpus().length;
    out.push(
      `| ${side} | ${m((c) => rate(c.load)).toFixed(1)} | ${m((c) => (allCpu(c) * 1000) / Math.max(1, c.load.acked)).toFixed(2)} | ${m((c) => (c.cpu.broker * 1000) / Math.max(1, c.load.acked)).toFixed(2)} | ${m(fetches).toFixed(2)} | ${m(pushesPerMinute).toFixed(0)} | ${(m(busiest) * 100).toFixed(0)} % | ${(m(share) * 100).toFixed(0)} % | ${(m((c) => c.machineBusy) * 100).toFixed(0)} % |`,
    );
  }
  const [one, four] = [medianOf("one store", (c) => rate(c.load)), medianOf("four stores", (c) => rate(c.load))];
  out.push("", "| target | measured | |", "|---|---|---|");
  out.push(`| four stores >= 1.5x one store's acknowledged ops/s (median of the rounds) | ${four.toFixed(1)} vs ${one.toFixed(1)} ops/s = ${(four / one).toFixed(2)}x | ${four >= 1.5 * one ? "met" : "MISSED"} |`);

  out.push("", "### Start-up", "");
  out.push("| instances | side | data dir | round | listening | first GET /v2/catalog | first provision acked | peak RSS | load before / after |");
  out.push("|---:|---|---|---:|---:|---:|---:|---:|---|");
  for (const st of starts) {
    out.push(
      `| ${st.instances} | ${st.side} | ${st.dataDir} | ${st.round + 1} | ${s2(st.listeningMs)} s | ${s2(st.catalogMs)} s | ${s2(st.firstAckMs)} s | ${st.peakRssMb.toFixed(0)} MB | ${st.loadBefore.toFixed(2)} / ${st.loadAfter.toFixed(2)} |`,
    );
  }
  out.push("", "| target: four stores start within 1.5x one store's time (median of the rounds) | listening | first GET /v2/catalog | first provision acked | |", "|---|---:|---:|---:|---|");
  for (const size of START_SIZES) {
    for (const kind of ["empty (clone)", "existing (restart)"] as const) {
      const of = (side: SideName, pick: (st: Start) => number) => median(starts.filter((st) => st.instances === size && st.side === side && st.dataDir === kind).map(pick));
      const ratio = (pick: (st: Start) => number) => of("four stores", pick) / of("one store", pick);
      const cellText = (pick: (st: Start) => number) => `${s2(of("four stores", pick))} vs ${s2(of("one store", pick))} s = ${ratio(pick).toFixed(2)}x`;
      const met = ratio((st) => st.listeningMs) <= 1.5 && ratio((st) => st.catalogMs) <= 1.5;
      out.push(`| 4x${size / 4} vs 1x${size}, ${kind} | ${cellText((st) => st.listeningMs)} | ${cellText((st) => st.catalogMs)} | ${cellText((st) => st.firstAckMs)} | ${met ? "met" : "MISSED"} |`);
    }
  }
  out.push("", `Total run time ${((performance.now() - started) / 1000).toFixed(0)} s; load average at the start ${loadAtStart}, at the end ${loadText()}.`);
  process.stdout.write(`\n${out.join("\n")}\n`);
}

main()
  .catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(() => cleanUp());
