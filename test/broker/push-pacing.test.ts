/**
 * The real broker with git.minPushIntervalSeconds set, over HTTP: provisions that arrive within a
 * window share one push, and each is answered only once its commit is on the remote.
 */
import { readFileSync } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { instanceRecordPath } from "../../src/repo/index.js";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { git } from "../support/git-fixtures.js";
import type { OsbReply } from "../support/osb-client.js";
import { provisionBody, samplePlans } from "./helpers.js";

// The broker paces the starts of its pushes with a 10 % margin; the remote counts their arrivals,
// which lag the starts by the time git takes to connect: 1.3 s more for one push than another on a
// machine loaded 10x or more, past the margin of 6 windows of 2 s. 4 s windows leave 2.4 s.
const WINDOW_SECONDS = 4;

let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    configure: (c) => {
      c.git.minPushIntervalSeconds = WINDOW_SECONDS;
      c.metrics.listen = { host: "127.0.0.1", port: 0 };
    },
  });
  // Count the pushes where they land: one reflog entry per update of the branch.
  await git(["config", "core.logAllRefUpdates", "true"], h.remoteDir);
});
afterAll(async () => {
  await h?.close();
});

/** The remote's branch tip at the instant of the call (loose ref, else packed-refs). */
function remoteTipNow(): string {
  try {
    return readFileSync(path.join(h.remoteDir, "refs", "heads", "main"), "utf8").trim();
  } catch {
    const line = readFileSync(path.join(h.remoteDir, "packed-refs"), "utf8")
      .split("\n")
      .find((l) => l.endsWith(" refs/heads/main"));
    if (line === undefined) throw new Error("the remote has no main");
    return line.slice(0, 40);
  }
}

async function reflogEntries(): Promise<number> {
  const text = await fs.readFile(path.join(h.remoteDir, "logs", "refs", "heads", "main"), "utf8").catch(() => "");
  return text.split("\n").filter((l) => l !== "").length;
}

async function scrape(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const text = await (await fetch(h.broker.metricsUrl!)).text();
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m?.[1] !== name) continue;
    const have = (m[2] ?? "").split(",").filter((l) => l !== "");
    if (wanted.every((w) => have.includes(w))) return Number(m[3]);
  }
  return undefined;
}

/** When each push reached the remote (its POST to git-receive-pack), since `from`. */
function pushArrivals(from: number): number[] {
  return h.git.requests.filter((r) => r.method === "POST" && r.path.endsWith("/git-receive-pack") && r.at >= from).map((r) => r.at);
}

describe("push pacing in the broker (git.minPushIntervalSeconds)", () => {
  it("spaces pushes so that the remote counts at most k in any k windows (GitHub: 6 in any minute at 10 s)", async () => {
    const plans = await samplePlans(h.osb);
    const from = performance.now();
    // A provision every 150 ms for 15 windows: a push is always waiting for the window.
    const answers: Promise<OsbReply>[] = [];
    for (let i = 0; performance.now() - from < 15 * WINDOW_SECONDS * 1000; i++) {
      answers.push(h.osb.provision(`spaced-${i}`, provisionBody(plans.serviceId, plans.small.id)));
      await sleep(150);
    }
    for (const reply of await Promise.all(answers)) expect(reply.status).toBe(201);
    const arrivals = pushArrivals(from);
    expect(arrivals.length).toBeGreaterThanOrEqual(10);
    // Any 6 windows (12 s here, a minute at 10 s) hold at most 6 pushes as the remote saw them
    // arrive: the 1st and the 7th of any 7 are more than 6 windows apart.
    const k = 6;
    for (let i = 0; i + k < arrivals.length; i++) {
      expect(arrivals[i + k]! - arrivals[i]!, `pushes ${i} to ${i + k} of ${arrivals.length}`).toBeGreaterThan(k * WINDOW_SECONDS * 1000);
    }
  }, 240_000);

  it("answers each provision only once its commit is on the remote, several provisions to a push", async () => {
    const plans = await samplePlans(h.osb);
    const pushesBefore = await reflogEntries();
    const acceptedBefore = (await scrape("gitops_broker_git_pushes_total", { store: "control", result: "accepted" })) ?? 0;

    // A provision every 250 ms for over two windows: far more often than one push per window.
    const started = performance.now();
    const answers: Promise<{ id: string; reply: OsbReply; remoteTip: string }>[] = [];
    for (let i = 0; performance.now() - started < 2.5 * WINDOW_SECONDS * 1000; i++) {
      const id = `paced-${i}`;
      answers.push(h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id)).then((reply) => ({ id, reply, remoteTip: remoteTipNow() })));
      await sleep(250);
    }
    const replies = await Promise.all(answers);
    const durationMs = performance.now() - started;

    for (const { id, reply, remoteTip } of replies) {
      expect(reply.status, JSON.stringify(reply.body)).toBe(201);
      // The record was on the remote's branch when the answer came.
      const onRemote = await git(["cat-file", "-e", `${remoteTip}:${instanceRecordPath(id)}`], h.remoteDir).then(
        () => true,
        () => false,
      );
      expect(onRemote, `${id} answered before its commit was on the remote`).toBe(true);
    }

    const pushes = (await reflogEntries()) - pushesBefore;
    expect(pushes).toBeLessThanOrEqual(Math.ceil(durationMs / (WINDOW_SECONDS * 1000)) + 1);
    expect(pushes).toBeLessThan(replies.length);
    expect((await scrape("gitops_broker_git_pushes_total", { store: "control", result: "accepted" }))! - acceptedBefore).toBe(pushes);
    expect(await scrape("gitops_broker_git_push_window_wait_seconds_count", { store: "control" })).toBeGreaterThanOrEqual(replies.length);
  });
});
