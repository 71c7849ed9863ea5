/**
 * last_operation in status.mode live, at scale: INSTANCES provisioned instances in the GitOps
 * repo (bench/prefill.ts), their postgresqls Running on a Kubernetes API server double, and an
 * Argo CD Application that applied the tip.
 *
 * 1. The status watcher alone: heap it holds once every instance was answered, cost of a call.
 * 2. The real broker over HTTP: one poller, then POLLERS pollers (in a worker thread, keep-alive)
 *    paced at RATE/4 and RATE polls/s in total, then back to back; latency p50/p99 and
 *    Kubernetes API requests per poll.
 *
 *   npm run bench:status        # INSTANCES=10000 POLLERS=50 POLLS=50000 RATE=1000
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { stringify } from "yaml";
import { loadCatalog, loadClusters } from "../src/catalog/index.js";
import { startBroker } from "../src/cli/serve.js";
import { createGitWriter } from "../src/gitwriter/index.js";
import { silentLogger } from "../src/log/index.js";
import { LABEL_INSTANCE, LABEL_MANAGED_BY, MANAGED_BY, readInstance, type InstanceRecord } from "../src/repo/index.js";
import { createStatusWatcher } from "../src/status-watcher/index.js";
import { CREDENTIALS, testConfig } from "../test/support/broker-harness.js";
import { pushExternalCommit } from "../test/support/git-fixtures.js";
import { startKubeApiServer, type KubeApiServer } from "../test/support/kube-api-server.js";
import { POSTGRESQL } from "../test/support/postgres-operator.js";
import { APPLICATION } from "../test/support/sync-agent.js";
import { PREFILL_AUTHOR, prefillInstanceId, prefillRemote } from "./prefill.js";

const INSTANCES = Number(process.env.INSTANCES ?? 10_000);
const POLLERS = Number(process.env.POLLERS ?? 50);
const POLLS = Number(process.env.POLLS ?? 50_000);
/** Aggregate rate of the paced run: platforms poll an operation every few seconds (Retry-After 5). */
const RATE = Number(process.env.RATE ?? 1_000);
const NAMESPACE = "gitops-broker-instances";

const gc = (globalThis as { gc?: () => void }).gc;
function heapMiB(): number {
  gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
}
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The cluster as Argo CD and the operator left it: every postgresql Running, the tip applied. */
function preload(kube: KubeApiServer, tip: string): void {
  for (let i = 0; i < INSTANCES; i++) {
    const key = prefillInstanceId(i);
    kube.store.upsert({
      apiVersion: "acid.zalan.do/v1",
      kind: "postgresql",
      metadata: { name: `pg-${key}`, namespace: NAMESPACE, labels: { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_INSTANCE]: key } },
      spec: { teamId: "pg", numberOfInstances: 1 },
      status: { PostgresClusterStatus: "Running" },
    });
  }
  const at = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
  kube.store.upsert({
    apiVersion: "argoproj.io/v1alpha1",
    kind: "Application",
    metadata: { name: "local", namespace: "argocd" },
    status: {
      sync: { status: "Synced", revision: tip },
      health: { status: "Healthy" },
      reconciledAt: at,
      operationState: { phase: "Succeeded", finishedAt: at, syncResult: { revision: tip } },
    },
  });
}

/** Part 1: a status watcher on its own, over the same repository and cluster. */
async function watcherAlone(dir: string, remoteDir: string, kube: KubeApiServer): Promise<void> {
  const writer = createGitWriter({ gitdir: path.join(dir, "watcher.git"), remoteUrl: remoteDir, branch: "main", author: PREFILL_AUTHOR, logger: silentLogger() });
  await writer.start();
  const tree = writer.snapshot();
  const [{ catalog }, { clusters }] = await Promise.all([loadCatalog(tree), loadClusters(tree)]);
  const records: InstanceRecord[] = [];
  for (let i = 0; i < INSTANCES; i++) records.push((await readInstance(tree, prefillInstanceId(i)))!);
  const requestsBefore = kube.requests.length;

  const heapBefore = heapMiB();
  const watcher = createStatusWatcher({ view: { catalog: () => catalog, clusters: () => clusters }, writer, logger: silentLogger(), defaultMode: "live" });
  const status = (r: InstanceRecord) => watcher.instanceStatus(r, r.status.operations[0]!);
  const warmStart = performance.now();
  let evaluateMs = 0;
  let evaluations = 0;
  for (let pending = records; pending.length > 0; await sleep(50)) {
    const t = performance.now();
    pending = pending.filter((r) => status(r).state !== "succeeded");
    evaluateMs += performance.now() - t;
    evaluations++;
    if (performance.now() - warmStart > 120_000) throw new Error(`${pending.length} instances never succeeded`);
  }
  const warmSeconds = (performance.now() - warmStart) / 1000;
  const heapAfter = heapMiB();
  const opened = kube.requests.length - requestsBefore;

  const calls: number[] = [];
  for (let i = 0; i < 100_000; i++) {
    const r = records[Math.floor(Math.random() * INSTANCES)]!;
    const t = performance.now();
    status(r);
    calls.push((performance.now() - t) * 1000);
  }
  calls.sort((a, b) => a - b);
  console.log(`\nstatus watcher alone (${INSTANCES} instances, live, Argo CD):`);
  table(
    ["what", "value"],
    [
      ["Kubernetes API requests to get there (discovery, lists, watches)", String(opened)],
      ["first answer of every instance (sync passes, includes waiting for the lists)", `${warmSeconds.toFixed(1)} s, ${evaluations} passes, ${evaluateMs.toFixed(0)} ms evaluating`],
      ["heap used: before / after every instance answered", `${heapBefore.toFixed(1)} / ${heapAfter.toFixed(1)} MiB (+${(heapAfter - heapBefore).toFixed(1)} MiB)`],
      ["instanceStatus() of a succeeded operation: p50 / p99 / max", `${percentile(calls, 50).toFixed(1)} / ${percentile(calls, 99).toFixed(1)} / ${calls[calls.length - 1]!.toFixed(1)} µs`],
      ["Kubernetes API requests during the 100k calls", String(kube.requests.length - requestsBefore - opened)],
    ],
  );
  await watcher.close();
  await writer.close();
}

/** Part 2: the broker over HTTP. */
async function brokerOverHttp(dir: string, remoteDir: string, kube: KubeApiServer): Promise<void> {
  const config = testConfig(dir, "broker", remoteDir);
  config.status = { ...config.status, mode: "live" };
  const broker = await startBroker(config, { version: "bench", logger: silentLogger() });
  try {
    const auth = `Basic ${Buffer.from(`${CREDENTIALS.username}:${CREDENTIALS.password}`).toString("base64")}`;
    const poll = (options: PollOptions) => runPollers({ url: broker.url, auth, instances: INSTANCES, ...options });
    const warm = await poll({ pollers: POLLERS, polls: INSTANCES, sequential: true, untilSucceeded: true });

    const rows: string[][] = [];
    // Paced runs last 20 s each.
    const paced = (rate: number): [string, PollOptions] => [`${POLLERS} pollers, ${rate}/s in total`, { pollers: POLLERS, polls: Math.min(POLLS, rate * 20), ratePerSecond: rate }];
    const runs: Array<[string, PollOptions]> = [
      ["1 poller, back to back", { pollers: 1, polls: Math.min(POLLS, 5_000) }],
      paced(RATE / 4),
      paced(RATE),
      [`${POLLERS} pollers, back to back`, { pollers: POLLERS, polls: POLLS }],
    ];
    for (const [name, options] of runs) {
      const requestsBefore = kube.requests.length;
      const { latencies, seconds } = await poll(options);
      const sorted = latencies.sort((a, b) => a - b);
      rows.push([
        name,
        String(sorted.length),
        (sorted.length / seconds).toFixed(0),
        percentile(sorted, 50).toFixed(2),
        percentile(sorted, 99).toFixed(2),
        sorted[sorted.length - 1]!.toFixed(2),
        ((kube.requests.length - requestsBefore) / sorted.length).toFixed(4),
      ]);
    }
    console.log(`\nGET last_operation over HTTP, the broker in status.mode live (warm-up: ${warm.latencies.length} polls until every instance succeeded):`);
    table(["run", "polls", "polls/s", "p50 ms", "p99 ms", "max ms", "kube API requests/poll"], rows);
  } finally {
    await broker.close();
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), "bench-last-operation-"));
  const kube = await startKubeApiServer({ resources: [POSTGRESQL, APPLICATION] });
  try {
    console.error(`pre-filling ${INSTANCES} instances ...`);
    const { remoteDir } = await prefillRemote(dir, INSTANCES);
    const kubeconfig = path.join(dir, "local.kubeconfig");
    await writeFile(kubeconfig, kube.kubeconfig());
    const registry = {
      apiVersion: "gitops-broker.io/v1alpha1",
      kind: "Cluster",
      metadata: { name: "local" },
      spec: { namespace: NAMESPACE, kubeconfig: { path: kubeconfig }, status: { mode: "live" }, sync: { kind: "argocd", name: "local" } },
    };
    const tip = await pushExternalCommit(remoteDir, { "registry/clusters/local.yaml": stringify(registry) }, "registry: watch cluster local");
    preload(kube, tip);
    console.log(`last_operation with ${INSTANCES} live instances (Node ${process.version}${gc ? "" : ", run with --expose-gc for exact heap figures"})`);
    await watcherAlone(dir, remoteDir, kube);
    await brokerOverHttp(dir, remoteDir, kube);
  } finally {
    await kube.close();
    await rm(dir, { recursive: true, force: true });
  }
}

interface PollOptions {
  pollers: number;
  polls: number;
  /** Paced: the pollers together poll at this rate. Default: back to back. */
  ratePerSecond?: number;
  /** Poll instances 0..polls-1 in order (else at random). */
  sequential?: boolean;
  /** Poll an instance again (after 200 ms) until it answers succeeded. */
  untilSucceeded?: boolean;
}

/**
 * The pollers run in a worker thread: like a platform on another machine, their HTTP client does
 * not share the broker's event loop. Plain JavaScript, keep-alive connections.
 */
const POLLER = `
const http = require("node:http");
const { parentPort, workerData: o } = require("node:worker_threads");
const agent = new http.Agent({ keepAlive: true, maxSockets: o.pollers });
const url = new URL(o.url);
// A keep-alive connection the server closes as a request goes out: GET is safe to retry.
const get = (i) => request(i).catch((e) => { if (e.code === "ECONNRESET") return request(i); throw e; });
const request = (i) => new Promise((resolve, reject) => {
  const req = http.get({ agent, host: url.hostname, port: url.port, path: "/v2/service_instances/prefill-" + i + "/last_operation",
    headers: { authorization: o.auth, "x-broker-api-version": "2.17" } }, (res) => {
    let body = "";
    res.on("data", (c) => (body += c));
    res.on("end", () => res.statusCode === 200 ? resolve(JSON.parse(body).state) : reject(new Error("HTTP " + res.statusCode + ": " + body)));
  });
  req.on("error", reject);
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
  const latencies = [];
  let next = 0;
  const started = performance.now();
  const interval = o.ratePerSecond ? (1000 * o.pollers) / o.ratePerSecond : 0;
  await Promise.all(Array.from({ length: o.pollers }, async (_, p) => {
    let due = performance.now() + (interval * p) / o.pollers;
    while (next < o.polls) {
      const i = o.sequential ? next : Math.floor(Math.random() * o.instances);
      next++;
      if (interval) { await sleep(Math.max(0, due - performance.now())); due += interval; }
      for (;;) {
        const t = performance.now();
        const state = await get(i);
        latencies.push(performance.now() - t);
        if (state === "succeeded") break;
        if (!o.untilSucceeded) throw new Error("prefill-" + i + ": " + state);
        await sleep(200);
      }
    }
  }));
  agent.destroy();
  parentPort.postMessage({ latencies, seconds: (performance.now() - started) / 1000 });
})();
`;

function runPollers(options: PollOptions & { url: string; auth: string; instances: number }): Promise<{ latencies: number[]; seconds: number }> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(POLLER, { eval: true, workerData: options });
    worker.once("message", resolve);
    worker.once("error", reject);
  });
}

function table(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(" | ")} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
  for (const row of rows) console.log(line(row));
}

await main();
