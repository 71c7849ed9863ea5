/**
 * 202 → ready with and without the nudge, in one run, in real time (no scaled clock).
 *
 * Two identical setups side by side, each its own GitOps remote (over smart HTTP on loopback), its
 * own broker (startBroker, status.mode live, scheduler single) and its own sync object, delivered by
 * the REAL agents (AGENTS=real, the default: Flux's source- and kustomize-controller or Argo CD
 * built from their modules, on a real kube-apiserver; bench/ready-real.ts) or by the doubles
 * (AGENTS=double: a Kubernetes API server double and an agent double per setup), polling Git every
 * POLL_S seconds (Argo CD's default timeout.reconciliation is 180 s), with a postgres-operator
 * that needs OPERATOR_MS to bootstrap a cluster. The only difference: the registry entry of the
 * `nudged` cluster has spec.sync.nudge (Argo CD: a signed GitHub push event to its /api/webhook;
 * Flux: requestedAt annotations), the `polled` one has none.
 *
 * N provisions per setup (plan medium, asynchronous), the i-th at a random time in the i-th of N
 * equal slices of one poll interval (both setups at the same times), so the polled ones see the
 * poll at every phase. For each: the time from the 202 to the first last_operation answering
 * `succeeded` (polled every POLL_MS_CLIENT), and the operator's own ready time (postgresql created
 * on the cluster → Running, seen on the API server double). The run takes about one poll
 * interval plus OPERATOR_MS.
 *
 *   npm run bench:ready                 # AGENTS=real AGENT=flux POLL_S=180 N=24 OPERATOR_MS=5000
 *   AGENT=argocd npm run bench:ready    # real Argo CD
 *   AGENTS=double npm run bench:ready   # the agent doubles of test/support/sync-agent.ts
 *   POLL_S=30 N=8 npm run bench:ready   # a quick look
 */
import { mkdir, rm } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { mkdtemp } from "node:fs/promises";
import { startBroker, type RunningBroker } from "../src/cli/serve.js";
import { silentLogger } from "../src/log/index.js";
import { clusterNamespacePath, namespaceManifest } from "../src/repo/index.js";
import { provisionBody, samplePlans } from "../test/broker/helpers.js";
import { CREDENTIALS, testConfig } from "../test/support/broker-harness.js";
import { createBareRemote } from "../test/support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../test/support/git-http-server.js";
import { osbClient, type OsbClient } from "../test/support/osb-client.js";
import { INSTANCE_NAMESPACE, sampleCatalogFiles, startSisterCluster } from "../test/support/sister-cluster.js";
import { startRealSetups } from "./ready-real.js";

const POLL_S = Number(process.env.POLL_S ?? 180);
const N = Number(process.env.N ?? 24);
const OPERATOR_MS = Number(process.env.OPERATOR_MS ?? 5_000);
const AGENTS = (process.env.AGENTS ?? "real") as "real" | "double";
const AGENT = (process.env.AGENT ?? (AGENTS === "real" ? "flux" : "argocd")) as "argocd" | "flux";
const POLL_MS_CLIENT = Number(process.env.POLL_MS_CLIENT ?? 200);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((sorted.length * p) / 100) - 1)]!;
const seconds = (ms: number) => (ms / 1000).toFixed(1);

export interface Setup {
  name: "polled" | "nudged";
  broker: RunningBroker;
  osb: OsbClient;
  serviceId: string;
  planId: string;
  /** postgresql name → when it appeared on the cluster / when it was Running (performance.now()). */
  created: Map<string, number>;
  running: Map<string, number>;
  /** The agent starts looking at Git now, then every POLL_S; the operator starts. */
  startAgent(): Promise<void>;
  /** Stops what the setup alone started (the doubles'); the real agents' setups stop with them. */
  close?(): Promise<void>;
}

/** One setup on the doubles: its own API server double, agent double and operator double. */
async function startSetup(name: Setup["name"], root: string, git: GitHttpServer): Promise<Setup> {
  const remotes = path.join(root, "remotes");
  const remoteDir = path.join(remotes, `${name}.git`);
  const remoteUrl = git.url(`${name}.git`);
  const cluster = await startSisterCluster({
    id: "local",
    sync: AGENT,
    remoteDir,
    dir: path.join(root, name),
    agent: { repoURL: remoteUrl },
    operatorReadyAfterMs: OPERATOR_MS,
  });
  const nudge = name === "polled" ? undefined : AGENT === "argocd" ? { via: "webhook", url: await cluster.agent.listen() } : { via: "annotation" };
  await createBareRemote(remotes, `${name}.git`, {
    ...(await sampleCatalogFiles()),
    "registry/clusters/local.yaml": cluster.registryEntry(nudge ? { nudge } : {}),
    [clusterNamespacePath("local")]: namespaceManifest(INSTANCE_NAMESPACE),
  });
  const created = new Map<string, number>();
  const running = new Map<string, number>();
  cluster.server.store.subscribe((_type, object) => {
    if (object.kind !== "postgresql") return;
    const pg = object.metadata.name!;
    if (!created.has(pg)) created.set(pg, performance.now());
    if ((object.status as { PostgresClusterStatus?: string } | undefined)?.PostgresClusterStatus === "Running" && !running.has(pg)) running.set(pg, performance.now());
  });
  // A loaded machine can make a push slow: the platform's request waits rather than gets a 503.
  const config = testConfig(root, `broker-${name}`, remoteUrl, { pushTimeoutSeconds: 120 });
  config.status = { ...config.status, mode: "live" };
  const broker = await startBroker(config, { version: "bench", logger: silentLogger() });
  const osb = osbClient(broker.url, CREDENTIALS);
  const plans = await samplePlans(osb);
  return {
    name,
    broker,
    osb,
    serviceId: plans.serviceId,
    planId: plans.medium.id,
    created,
    running,
    startAgent: async () => {
      cluster.operator.start(100);
      cluster.agent.start(POLL_S * 1000);
    },
    close: async () => {
      await broker.close();
      await cluster.close();
    },
  };
}

interface Timing {
  id: string;
  /** performance.now() of the 202 and of the first `succeeded`. */
  accepted: number;
  succeeded: number;
}

/** Provision `id` and poll until it succeeded. */
async function provisionUntilReady(setup: Setup, id: string): Promise<Timing> {
  let res = await setup.osb.provision(id, provisionBody(setup.serviceId, setup.planId), { query: { accepts_incomplete: "true" } });
  // A platform retries a 503 (remote unreachable) after Retry-After; so does the bench, and measures from the 202.
  for (let retry = 0; res.status === 503 && retry < 3; retry++) {
    console.log(`${setup.name} ${id}: 503, retrying: ${JSON.stringify(res.body)}`);
    await sleep(1_000);
    res = await setup.osb.provision(id, provisionBody(setup.serviceId, setup.planId), { query: { accepts_incomplete: "true" } });
  }
  const accepted = performance.now();
  if (res.status !== 202) throw new Error(`${setup.name} ${id}: provision answered ${res.status} ${JSON.stringify(res.body)}`);
  const operation = res.body.operation as string;
  const deadline = accepted + (POLL_S * 2 + 120) * 1000;
  for (;;) {
    const poll = await setup.osb.lastOperation(id, { operation });
    const state = poll.body.state;
    if (state === "succeeded") return { id, accepted, succeeded: performance.now() };
    if (state === "failed") throw new Error(`${setup.name} ${id}: failed: ${JSON.stringify(poll.body)}`);
    if (performance.now() > deadline) throw new Error(`${setup.name} ${id}: not ready after ${seconds(performance.now() - accepted)} s`);
    await sleep(POLL_MS_CLIENT);
  }
}

function summary(values: number[]): { p50: number; p99: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1)! };
}

async function main(): Promise<void> {
  const root = await mkdtemp(path.join(tmpdir(), "bench-ready-"));
  await mkdir(path.join(root, "remotes"));
  await mkdir(path.join(root, "polled"));
  await mkdir(path.join(root, "nudged"));
  const git = await startGitHttpServer({ root: path.join(root, "remotes") });
  const setups: Setup[] = [];
  let closeReal: (() => Promise<void>) | undefined;
  try {
    if (AGENTS === "real") {
      const real = await startRealSetups(AGENT, root, git, POLL_S, OPERATOR_MS);
      closeReal = real.close;
      setups.push(...real.setups);
    } else {
      setups.push(await startSetup("polled", root, git), await startSetup("nudged", root, git));
    }
    console.log(`${AGENTS === "real" ? "real" : "double of"} ${AGENT} polling every ${POLL_S} s, operator bootstrap ${OPERATOR_MS} ms, ${N} provisions per setup over one poll interval`);
    // Both agents look at Git now, then every POLL_S: the provisions below spread over one interval.
    for (const setup of setups) await setup.startAgent();
    const started = performance.now();
    const sliceMs = (POLL_S * 1000) / N;
    const results = new Map<Setup["name"], Timing[]>(setups.map((s) => [s.name, []]));
    await Promise.all(
      Array.from({ length: N }, async (_, i) => {
        await sleep(i * sliceMs + Math.random() * sliceMs);
        await Promise.all(setups.map(async (setup) => results.get(setup.name)!.push(await provisionUntilReady(setup, `db-${i}`))));
      }),
    );
    const wallS = (performance.now() - started) / 1000;

    const rows: string[] = [];
    for (const setup of setups) {
      const timings = results.get(setup.name)!;
      const ready = summary(timings.map((t) => t.succeeded - t.accepted));
      const operator = summary([...setup.running].map(([pg, at]) => at - setup.created.get(pg)!));
      // Where the rest goes: 202 → the postgresql on the cluster (push, nudge or poll, the agent's
      // apply), and Running → the first `succeeded` (watch, client poll every POLL_MS_CLIENT).
      const applied = summary(timings.map((t) => setup.created.get(`pg-${t.id}`)! - t.accepted));
      const noticed = summary(timings.map((t) => t.succeeded - setup.running.get(`pg-${t.id}`)!));
      const stats = setup.broker.nudger.stats().local ?? { sent: 0, failed: 0, folded: 0 };
      rows.push(
        `| ${setup.name} | ${AGENTS === "real" ? "" : "double of "}${AGENT} | ${POLL_S} s | ${N} | ${seconds(ready.p50)} s | ${seconds(ready.p99)} s | ${seconds(operator.p50)} s | ${seconds(operator.p99)} s | ${seconds(ready.p50 - operator.p50)} s | ${seconds(applied.p50)} s | ${seconds(noticed.p50)} s | ${stats.sent}/${stats.failed}/${stats.folded} |`,
      );
    }
    console.log("");
    console.log("| setup | agent | agent poll | provisions | 202 → succeeded p50 | p99 | operator ready p50 | p99 | p50 − operator p50 | 202 → on the cluster p50 | Running → succeeded p50 | nudges sent/failed/folded |");
    console.log("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (const row of rows) console.log(row);
    console.log("");
    console.log(`run: ${wallS.toFixed(0)} s wall time, real clock; load average at the end ${loadavg().map((l) => l.toFixed(1)).join(" ")} on ${cpus().length} CPUs`);
  } finally {
    for (const setup of setups) await setup.close?.();
    await closeReal?.();
    await git.close();
    await rm(root, { recursive: true, force: true });
  }
}

await main();
