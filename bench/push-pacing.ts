/**
 * Push pacing (git.minPushIntervalSeconds, ADR 0005), in one run: the real broker (startBroker,
 * on port 0, status.mode commit) writing to a local remote over smart HTTP on loopback, under a
 * steady RATE provisions/s (open loop: each sent on schedule whatever the answers before it) for
 * DURATION_S seconds, once with a window of 0 (push as soon as a commit is ready) and once with
 * WINDOW_S seconds, one after the other, each with its own remote and broker.
 *
 * Per run: pushes the remote took (its reflog: one entry per accepted ref update), the most pushes
 * that started in any 60 s (the hosted-Git guidance counts pushes per minute) and the average per
 * minute, operations per push, and the acknowledgement latency (send to 201: the commit is on the
 * remote) p50/p99. The window-0 p50 is about one push round trip: the target of the paced run is
 * at most 6 pushes in any minute with a 10 s window and a p50 of at most the window plus that.
 *
 *   npx tsx bench/push-pacing.ts                    # RATE=2 DURATION_S=60 WINDOW_S=10
 */
import fs from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { createLogger } from "../src/log/index.js";
import { provisionBody, samplePlans } from "../test/broker/helpers.js";
import { startHarness } from "../test/support/broker-harness.js";
import { git } from "../test/support/git-fixtures.js";
import { cleanUp } from "../test/support/processes.js";

const RATE = Number(process.env.RATE ?? 2);
const DURATION_S = Number(process.env.DURATION_S ?? 60);
const WINDOW_S = Number(process.env.WINDOW_S ?? 10);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Nearest-rank percentile of ascending values. */
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((sorted.length * p) / 100) - 1))]!;

interface RunResult {
  windowS: number;
  sent: number;
  acked: number;
  failed: Record<number, number>;
  pushes: number;
  /** Most pushes that started within any 60 s (half-open). */
  maxPerMinute: number;
  /** Pushes per minute over the run, first send to last answer. */
  averagePerMinute: number;
  opsPerPush: number;
  /** Acknowledgement latencies, ms, ascending. */
  latencies: number[];
  /** Duration of the broker's pushes (the writer's own measure), ms, ascending. */
  pushMs: number[];
  /** Shortest time between the starts of two pushes, ms. */
  minGapMs: number;
  loadBefore: number;
  loadAfter: number;
}

/** The most of `times` (ms, ascending) within any half-open interval of `spanMs`. */
function maxWithin(times: number[], spanMs: number): number {
  let best = 0;
  let from = 0;
  for (let to = 0; to < times.length; to++) {
    while (times[to]! - times[from]! >= spanMs) from++;
    best = Math.max(best, to - from + 1);
  }
  return best;
}

async function run(windowS: number): Promise<RunResult> {
  // The writer's "pushed" lines (ms: the push's duration) give each accepted push's start.
  const pushes: { start: number; ms: number }[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const now = performance.now();
      for (const line of chunk.toString().split("\n")) {
        if (!line.includes('"msg":"pushed"')) continue;
        const { ms } = JSON.parse(line) as { ms: number };
        pushes.push({ start: now - ms, ms });
      }
      done();
    },
  });
  const h = await startHarness({
    configure: (c) => {
      c.git.minPushIntervalSeconds = windowS;
      c.git.pushTimeoutSeconds = 60;
    },
    logger: createLogger({ level: "info", destination }),
  });
  try {
    await git(["config", "core.logAllRefUpdates", "true"], h.remoteDir);
    const reflog = path.join(h.remoteDir, "logs", "refs", "heads", "main");
    const reflogEntries = async () => (await fs.readFile(reflog, "utf8").catch(() => "")).split("\n").filter((l) => l !== "").length;
    const plans = await samplePlans(h.osb);
    const body = provisionBody(plans.serviceId, plans.small.id);

    const pushesBefore = await reflogEntries();
    const logged = pushes.length;
    const loadBefore = loadavg()[0]!;

    const latencies: number[] = [];
    const failed: Record<number, number> = {};
    const answers: Promise<void>[] = [];
    const total = Math.round(DURATION_S * RATE);
    const started = performance.now();
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const sent = performance.now();
      answers.push(
        h.osb.provision(`w${windowS}-${i}`, body).then((reply) => {
          if (reply.status === 201) latencies.push(performance.now() - sent);
          else failed[reply.status] = (failed[reply.status] ?? 0) + 1;
        }),
      );
    }
    await Promise.all(answers);
    const elapsedMs = performance.now() - started;
    const loadAfter = loadavg()[0]!;
    const taken = (await reflogEntries()) - pushesBefore;
    const ours = pushes.slice(logged);
    if (taken !== ours.length) throw new Error(`the remote took ${taken} pushes, the writer logged ${ours.length}`);
    const starts = ours.map((p) => p.start).sort((a, b) => a - b);
    latencies.sort((a, b) => a - b);
    return {
      windowS,
      sent: total,
      acked: latencies.length,
      failed,
      pushes: taken,
      maxPerMinute: maxWithin(starts, 60_000),
      averagePerMinute: (taken / elapsedMs) * 60_000,
      opsPerPush: latencies.length / taken,
      latencies,
      pushMs: ours.map((p) => p.ms).sort((a, b) => a - b),
      minGapMs: Math.min(...starts.slice(1).map((t, i) => t - starts[i]!)),
      loadBefore,
      loadAfter,
    };
  } finally {
    await h.close();
  }
}

function row(label: string, values: string[]): string {
  return `| ${label} | ${values.join(" | ")} |`;
}

async function main(): Promise<void> {
  console.log(`push pacing: ${RATE} provisions/s for ${DURATION_S} s to one repository, window 0 and ${WINDOW_S} s; ${cpus().length} cores`);
  const results: RunResult[] = [];
  for (const windowS of [0, WINDOW_S]) {
    const result = await run(windowS);
    results.push(result);
    console.log(`window ${windowS} s: done (${result.acked}/${result.sent} acknowledged, ${result.pushes} pushes)`);
  }
  const s = (ms: number) => (ms / 1000).toFixed(2);
  console.log("");
  console.log(row("", results.map((r) => `window ${r.windowS} s`)));
  console.log(row("---", results.map(() => "---")));
  console.log(row("provisions sent / acknowledged", results.map((r) => `${r.sent} / ${r.acked}${Object.keys(r.failed).length ? ` (failed ${JSON.stringify(r.failed)})` : ""}`)));
  console.log(row("pushes (remote reflog)", results.map((r) => String(r.pushes))));
  console.log(row("most pushes in any 60 s", results.map((r) => String(r.maxPerMinute))));
  console.log(row("pushes per minute, average", results.map((r) => r.averagePerMinute.toFixed(1))));
  console.log(row("operations per push", results.map((r) => r.opsPerPush.toFixed(1))));
  console.log(row("ack latency p50 (s)", results.map((r) => s(percentile(r.latencies, 50)))));
  console.log(row("ack latency p99 (s)", results.map((r) => s(percentile(r.latencies, 99)))));
  console.log(row("ack latency max (s)", results.map((r) => s(r.latencies.at(-1)!))));
  console.log(row("push duration p50 / max (s)", results.map((r) => `${s(percentile(r.pushMs, 50))} / ${s(r.pushMs.at(-1)!)}`)));
  console.log(row("shortest gap between push starts (s)", results.map((r) => s(r.minGapMs))));
  console.log(row("load average (1 min) before / after", results.map((r) => `${r.loadBefore.toFixed(2)} / ${r.loadAfter.toFixed(2)}`)));
  const [unpaced, paced] = results as [RunResult, RunResult];
  const roundTrip = percentile(unpaced.latencies, 50);
  const p50Bound = WINDOW_S * 1000 + roundTrip;
  const perMinuteBound = Math.floor(60 / WINDOW_S);
  console.log("");
  console.log(
    `target (window ${WINDOW_S} s): at most ${perMinuteBound} pushes in any minute: ${paced.maxPerMinute} ${paced.maxPerMinute <= perMinuteBound ? "met" : "MISSED"}; ` +
      `p50 at most ${s(p50Bound)} s (window + one push round trip, the window-0 p50): ${s(percentile(paced.latencies, 50))} s ${percentile(paced.latencies, 50) <= p50Bound ? "met" : "MISSED"}`,
  );
}

main()
  .catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(() => cleanUp());
