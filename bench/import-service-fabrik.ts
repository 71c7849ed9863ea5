/**
 * The Service Fabrik import at landscape scale, against REAL kube-apiservers
 * (test/support/real-service-fabrik.ts: Service Fabrik's master, which is also its sister `west`,
 * and the sister `east`, each its own etcd and kube-apiserver): `--instances` instances, the
 * first `--bindings` of them bound once, on Service Fabrik's sample gotemplate plan, most in its
 * shared namespace. The import runs as the CLI does (`bin/gitops-broker.js import service-fabrik`,
 * the compiled build, a process of its own): a dry run, then `--yes` into a fresh GitOps remote
 * served over smart HTTP, once per `--workers` value (render workers, `--render-workers`) and,
 * with `--baseline DIR`, with the CLI of another checkout with its dist/ built (the code before
 * the parallel render: `git archive <commit> | tar -x -C DIR`, node_modules linked, `tsc -p
 * tsconfig.build.json`), alternating in each of `--rounds` rounds, so that the baseline and the
 * parallel render share the same machine at the same time. Prints instances/s, the CLI process's
 * CPU time and its peak RSS (GNU time: the kernel's accounting at its exit, threads included).
 *
 * `--profile`: one more dry run per workers value under `node --cpu-prof`, and how busy each
 * thread was: the main thread (reads, records, differences, YAML) and the module workers (the Go
 * WebAssembly renders), from the profiles' idle samples.
 *
 *   npx tsx bench/import-service-fabrik.ts [--instances 10000] [--bindings 5000] [--batch 500]
 *     [--workers 1,2] [--baseline DIR] [--rounds 1] [--profile]
 */
import { readdir, readFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { buildDist, currentBuild } from "../test/support/global-setup.js";
import { cleanUp, startProcess, trackedTempDir } from "../test/support/processes.js";
import { startRealLandscape } from "../test/support/real-service-fabrik.js";
import type { SfInstanceSpec } from "../test/support/service-fabrik-landscape.js";
import { buildTestTools } from "../test/support/test-tools.js";

const { values } = parseArgs({
  options: {
    instances: { type: "string", default: "10000" },
    bindings: { type: "string", default: "5000" },
    batch: { type: "string", default: "500" },
    workers: { type: "string", default: `1,${availableParallelism()}` },
    rounds: { type: "string", default: "1" },
    baseline: { type: "string" },
    profile: { type: "boolean", default: false },
  },
});
const INSTANCES = Number(values.instances);
const BINDINGS = Number(values.bindings);
const WORKERS = values.workers.split(",").map(Number);
const ROUNDS = Number(values.rounds);
const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../bin/gitops-broker.js");

const mb = (bytes: number) => `${Math.round(bytes / 1048576)} MB`;
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const load = async () => (await readFile("/proc/loadavg", "utf8")).split(" ").slice(0, 3).join(" ");

interface Run {
  ms: number;
  /** User and system CPU time of the CLI process, its threads included. */
  cpuMs: number;
  peakRss: number;
  out: string;
  code: number | null;
}

/**
 * The CLI as a process, under GNU time (`/usr/bin/time`): its CPU time and peak RSS as the kernel
 * counted them (wait4's rusage), the worker threads included. CPU time is what a loaded machine
 * changes least: the wall-clock time depends on how much of the cores the others left.
 */
async function cli(args: readonly string[], nodeArgs: readonly string[] = [], bin = BIN): Promise<Run> {
  const usage = path.join(await trackedTempDir("bench-import-usage-"), "usage");
  const started = performance.now();
  const p = startProcess("/usr/bin/time", ["-f", "%U %S %M", "-o", usage, process.execPath, ...nodeArgs, bin, "import", "service-fabrik", ...args]);
  const { code } = await p.exited;
  const ms = performance.now() - started;
  const [user, system, maxRssKb] = (await readFile(usage, "utf8")).trim().split("\n").pop()!.split(" ").map(Number);
  return { ms, cpuMs: 1000 * (user! + system!), peakRss: 1024 * maxRssKb!, out: `${p.stdout()}${p.stderr()}`, code };
}

/** Busy time of each thread a `--cpu-prof` run profiled: sampled time less the idle samples. */
async function threadsBusy(dir: string): Promise<{ file: string; busyMs: number; sampledMs: number; top: string[] }[]> {
  const out = [];
  for (const file of (await readdir(dir)).filter((f) => f.endsWith(".cpuprofile"))) {
    const profile = JSON.parse(await readFile(path.join(dir, file), "utf8")) as {
      nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
      samples: number[];
      timeDeltas: number[];
    };
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes as { id: number; children?: number[] }[]) for (const c of n.children ?? []) parent.set(c, n.id);
    const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === "(idle)").map((n) => n.id));
    let sampled = 0;
    let busy = 0;
    const self = new Map<string, number>();
    profile.samples.forEach((node, i) => {
      const dt = profile.timeDeltas[i] ?? 0;
      sampled += dt;
      if (idle.has(node)) return;
      busy += dt;
      const at = (id: number | undefined) => {
        const frame = id === undefined ? undefined : byId.get(id)?.callFrame;
        return frame === undefined ? "" : `${frame.functionName || "(anonymous)"} ${frame.url.replace(/^.*\/(node_modules|dist)\//, "$1/")}:${frame.lineNumber + 1}`;
      };
      const name = `${at(node)} < ${at(parent.get(node))}`;
      self.set(name, (self.get(name) ?? 0) + dt);
    });
    const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, 12).map(([name, us]) => `${(us / 1000).toFixed(0)} ms ${name}`);
    out.push({ file, busyMs: busy / 1000, sampledMs: sampled / 1000, top });
  }
  // The main thread's profile is the one sampled longest (the workers start later).
  return out.sort((a, b) => b.sampledMs - a.sampledMs);
}

const expectLine = (run: Run, line: string, what: string) => {
  if (run.code !== 0 || !run.out.includes(line)) throw new Error(`${what}: exit ${String(run.code)}, expected "${line}" in:\n${run.out.slice(-3000)}`);
};

const specs: SfInstanceSpec[] = Array.from({ length: INSTANCES }, (_, i) => ({
  id: `sf-${String(i).padStart(5, "0")}`,
  clusterId: i % 2 === 0 ? "east" : "west",
  ...(i % 10 === 3 ? {} : { namespace: "sf-services" }),
  ...(i < BINDINGS ? { bindings: [{ id: `sf-${String(i).padStart(5, "0")}-b` }] } : {}),
}));

try {
  await buildTestTools(["kube-apiserver", "etcd"]);
  if ((await currentBuild()) === undefined) await buildDist();
  console.error(`creating ${INSTANCES} instances and ${BINDINGS} bindings on two real control planes (load ${await load()}) ...`);
  const started = performance.now();
  const land = await startRealLandscape("bench-import-", specs, { concurrency: 32 });
  console.log(`landscape: ${land.created.objects} objects created in ${s(land.created.ms)} (${s(performance.now() - started)} with the control planes)`);
  console.log(`| round | CLI | load before | dry run | instances/s | CPU | peak RSS | --yes | instances/s | CPU | peak RSS |`);
  console.log(`|---|---|---|---|---|---|---|---|---|---|---|`);
  const variants = [
    ...(values.baseline === undefined ? [] : [{ name: `baseline (${values.baseline})`, bin: path.resolve(values.baseline, "bin/gitops-broker.js"), flags: [] as string[] }]),
    ...WORKERS.map((w) => ({ name: `${w} render worker(s)`, bin: BIN, flags: ["--render-workers", String(w)] })),
  ];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [i, variant] of (round % 2 === 1 ? variants : [...variants].reverse()).entries()) {
      const remote = await land.remote(`r${round}-${i}`);
      const flags = [...remote.args, ...variant.flags, "--differences", "summary"];
      const before = await load();
      const dry = await cli(flags, [], variant.bin);
      expectLine(dry, `to import: ${INSTANCES} instance(s) with ${BINDINGS} binding(s)`, `${variant.name}: dry run`);
      const real = await cli([...flags, "--yes", "--batch-size", values.batch], [], variant.bin);
      expectLine(real, `imported ${INSTANCES} instance(s)`, `${variant.name}: --yes`);
      const rate = (r: Run) => (INSTANCES / (r.ms / 1000)).toFixed(0);
      const row = (r: Run) => `${s(r.ms)} | ${rate(r)} | ${s(r.cpuMs)} | ${mb(r.peakRss)}`;
      console.log(`| ${round} | ${variant.name} | ${before} | ${row(dry)} | ${row(real)} |`);
    }
  }
  if (values.profile) {
    for (const workers of WORKERS) {
      const dir = await trackedTempDir(`bench-import-profile-${workers}-`);
      const remote = await land.remote(`profile-w${workers}`);
      const run = await cli([...remote.args, "--render-workers", String(workers), "--differences", "summary"], ["--cpu-prof", "--cpu-prof-dir", dir]);
      expectLine(run, `to import: ${INSTANCES} instance(s)`, "profiled dry run");
      const [main, ...rest] = await threadsBusy(dir);
      const share = (ms: number) => `${((100 * ms) / run.ms).toFixed(0)} %`;
      console.log(`profile, ${workers} render worker(s), dry run ${s(run.ms)}: main thread busy ${s(main!.busyMs)} (${share(main!.busyMs)})` +
        `; module workers busy ${rest.map((w) => `${s(w.busyMs)} (${share(w.busyMs)})`).join(", ")}`);
      console.log(`  the main thread's functions by own time:\n    ${main!.top.join("\n    ")}`);
    }
  }
  await land.close();
} finally {
  await cleanUp();
}
process.exit(0);
