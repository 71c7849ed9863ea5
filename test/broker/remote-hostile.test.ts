/**
 * A hostile remote: one that accepts connections and never answers, and one whose branch is
 * force-pushed under the broker, erasing acknowledged operations. The real broker (in process,
 * port 0) on a real remote over smart HTTP.
 */
import { execFile } from "node:child_process";
import { Writable } from "node:stream";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { startBroker, type RunningBroker } from "../../src/cli/serve.js";
import { createLogger } from "../../src/log/index.js";
import type { Metrics } from "../../src/metrics/index.js";
import { CREDENTIALS, testConfig } from "../support/broker-harness.js";
import { createTempDir } from "../support/git-fixtures.js";
import { startHangProxy, type HangProxy } from "../support/hang-proxy.js";
import { osbClient, type OsbClient } from "../support/osb-client.js";
import { startRemote, type Remote } from "../write-path/fixture.js";
import { provisionBody, readyz, remoteHead, samplePlans } from "./helpers.js";

const run = promisify(execFile);

interface Started {
  broker: RunningBroker;
  osb: OsbClient;
  logs: Record<string, unknown>[];
  /** Last value set on each gauge, by metric name. */
  gauges: Map<string, number>;
  /** Stops the broker (once; afterEach stops it otherwise). */
  close(): Promise<void>;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(root: string, remoteUrl: string, git: Parameters<typeof testConfig>[3] = {}): Promise<Started> {
  const logs: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n")) if (line.trim()) logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const gauges = new Map<string, number>();
  const ignore = { inc: () => undefined, observe: () => undefined, set: () => undefined, reset: () => undefined };
  const metrics: Metrics = {
    counter: () => ignore,
    histogram: () => ignore,
    // The git writer's gauges by name and store (the control repository's is "control").
    gauge: (name) => ({ ...ignore, set: (value, labels) => void gauges.set(labels?.store === undefined ? name : `${name}{store="${labels.store}"}`, value) }),
    onCollect: () => undefined,
  };
  const broker = await startBroker(testConfig(root, "broker", remoteUrl, git), {
    version: "test",
    logger: createLogger({ level: "info", destination }),
    metrics,
  });
  let stopping: Promise<void> | undefined;
  const close = () => (stopping ??= broker.close());
  cleanups.push(close);
  return { broker, osb: osbClient(broker.url, CREDENTIALS), logs, gauges, close };
}

async function remote(): Promise<Remote> {
  const r = await startRemote("gitops-broker-remote-hostile-");
  cleanups.push(() => r.close());
  return r;
}

/** Polls until `check` passes (every 100 ms, generous ceiling). */
async function eventually<T>(probe: () => Promise<T>, check: (value: T) => boolean, ceilingMs = 60_000): Promise<T> {
  const until = performance.now() + ceilingMs;
  for (;;) {
    const value = await probe();
    if (check(value) || performance.now() > until) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe("a remote that accepts connections and never answers", () => {
  it("is reported by /readyz after the activity timeout, long before the push timeout; answers resume after", async () => {
    const r = await remote();
    const proxy: HangProxy = await startHangProxy(r.server.port);
    cleanups.push(() => proxy.close());
    const root = await createTempDir("gitops-broker-hang-");
    const { broker, osb } = await start(root, `http://127.0.0.1:${proxy.port}/${r.url.split("/").pop()}`, {
      pushTimeoutSeconds: 120,
      activityTimeoutSeconds: 2,
    });
    const plans = await samplePlans(osb);
    expect((await readyz(broker.url)).status).toBe(200);

    proxy.setHanging(true);
    const hungAt = performance.now();
    const pending = osb.provision("hang-1", provisionBody(plans.serviceId, plans.small.id));
    const notReady = await eventually(() => readyz(broker.url), (res) => res.status === 503);
    const noticedMs = performance.now() - hungAt;
    expect(notReady.status).toBe(503);
    expect(notReady.body.checks).toContainEqual(
      expect.objectContaining({ name: "git-remote", ok: false, message: expect.stringMatching(/has not answered for \d+ s/) }),
    );
    expect(proxy.hungConnections).toBeGreaterThan(0);
    // Noticed after the 2 s activity timeout, nowhere near the 120 s push timeout.
    expect(noticedMs).toBeLessThan(60_000);

    // The remote answers again: the push goes through (retried), the request is acknowledged.
    proxy.setHanging(false);
    expect((await pending).status).toBe(201);
    expect((await eventually(() => readyz(broker.url), (res) => res.status === 200)).status).toBe(200);
  });
});

describe("history rewritten under the broker (force-push erasing acknowledged operations)", () => {
  it("logs an error naming the lost instances and commits, warns on /readyz, answers from the remote's truth", async () => {
    const r = await remote();
    const root = await createTempDir("gitops-broker-rewrite-");
    const { broker, osb, logs, gauges } = await start(root, r.url);
    const plans = await samplePlans(osb);
    expect((await osb.provision("kept-1", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    const before = await remoteHead(r.dir);
    expect((await osb.provision("lost-1", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    expect((await osb.provision("lost-2", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    const erased = await remoteHead(r.dir);
    const lostCommits = (await run("git", ["rev-list", erased, `^${before}`], { cwd: r.dir })).stdout.trim().split("\n");
    expect(lostCommits).toHaveLength(2);

    // Someone force-pushes the branch back.
    await run("git", ["update-ref", "refs/heads/main", before], { cwd: r.dir });
    await broker.writer.refresh();

    const line = logs.find((l) => l.msg === "the remote branch was rewritten: acknowledged operations are gone from it; following the remote");
    expect(line).toMatchObject({ level: 50, previousTip: erased, tip: before });
    expect(new Set(line?.lostInstances as string[])).toEqual(new Set(["lost-1", "lost-2"]));
    expect(new Set(line?.lostCommits as string[])).toEqual(new Set(lostCommits));

    expect(gauges.get('gitops_broker_git_history_lost_commits{store="control"}')).toBe(2);
    const ready = await readyz(broker.url);
    expect(ready.status).toBe(200);
    const history = ready.body.checks.find((c) => c.name === "git-history");
    expect(history).toMatchObject({ ok: false, severity: "warning" });
    expect(history?.message).toMatch(/2 commit\(s\) erased, operations of instance\(s\) (lost-1, lost-2|lost-2, lost-1)/);

    // The remote's truth: the erased instances do not exist, the kept one does.
    expect((await osb.getInstance("lost-1")).status).toBe(404);
    expect((await osb.getInstance("kept-1")).status).toBe(200);

    // The operator pushes the erased commits back: the warning clears.
    await run("git", ["update-ref", "refs/heads/main", erased], { cwd: r.dir });
    await broker.writer.refresh();
    expect((await readyz(broker.url)).body.checks.map((c) => c.name)).not.toContain("git-history");
    expect(logs.some((l) => l.msg === "the commits erased by the history rewrite are on the branch again")).toBe(true);
    expect(gauges.get('gitops_broker_git_history_lost_commits{store="control"}')).toBe(0);
    expect((await osb.getInstance("lost-1")).status).toBe(200);
  });

  it("a rewrite made while the broker was down is noticed at start", async () => {
    const r = await remote();
    const root = await createTempDir("gitops-broker-rewrite-restart-");
    const first = await start(root, r.url);
    const plans = await samplePlans(first.osb);
    const before = await remoteHead(r.dir);
    expect((await first.osb.provision("gone-1", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    await first.close();
    await run("git", ["update-ref", "refs/heads/main", before], { cwd: r.dir });

    const second = await start(root, r.url);
    expect(second.logs.find((l) => l.level === 50 && (l.lostInstances as string[] | undefined)?.includes("gone-1"))).toBeDefined();
    const history = (await readyz(second.broker.url)).body.checks.find((c) => c.name === "git-history");
    expect(history?.message).toMatch(/gone-1/);
  });
});
