/**
 * Push pacing (minPushIntervalMs) against a real remote over smart HTTP: pushes are counted where
 * they land, in the remote's reflog (one entry per accepted ref update), and each acknowledgement
 * is checked against the remote's ref at the moment it is given.
 */
import { readFileSync } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Registry } from "prom-client";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ConflictError, InvalidArgumentError } from "../errors/index.js";
import { createInstruments, createPrometheusMetrics, type PrometheusMetrics } from "../metrics/index.js";
import { createBareRemote, createTempDir, git, gitLog, pushExternalCommit, readRemoteFiles } from "../../test/support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../../test/support/git-http-server.js";
import { waitUntil } from "../../test/support/processes.js";
import { createGitWriter, type GitWriter, type GitWriterOptions, type Operation, type SubmitResult } from "./index.js";

const AUTHOR = { name: "gitops-broker", email: "broker@example.com" };
const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

let root: string;
let server: GitHttpServer;
let repoCount = 0;
const writers: GitWriter[] = [];

beforeAll(async () => {
  root = await createTempDir("push-pacing-test-");
  server = await startGitHttpServer({ root: path.join(root, "remotes") });
});

afterEach(async () => {
  await Promise.all(writers.splice(0).map((w) => w.close()));
});

afterAll(async () => {
  await server.close();
  await fs.rm(root, { recursive: true, force: true });
});

interface Setup {
  bare: string;
  writer: GitWriter;
  prometheus: PrometheusMetrics;
  /** Ref updates of `main` on the remote since the writer started (pushes it accepted). */
  remotePushes: () => Promise<number>;
}

/** A seeded bare remote that keeps a reflog, served over HTTP, and a started writer on it with Prometheus instruments. */
async function setup(options: Partial<GitWriterOptions>): Promise<Setup> {
  repoCount += 1;
  const name = `repo-${repoCount}.git`;
  const bare = await createBareRemote(path.join(root, "remotes"), name, { "README.md": "seed\n" });
  await git(["config", "core.logAllRefUpdates", "true"], bare);
  const prometheus = createPrometheusMetrics(new Registry());
  const writer = createGitWriter({
    gitdir: path.join(root, `work-${repoCount}.git`),
    remoteUrl: server.url(name),
    branch: "main",
    author: AUTHOR,
    logger: silent,
    metrics: createInstruments(prometheus).gitwriter,
    ...options,
  });
  writers.push(writer);
  await writer.start();
  const reflog = path.join(bare, "logs", "refs", "heads", "main");
  const entries = async () => (await fs.readFile(reflog, "utf8").catch(() => "")).split("\n").filter((l) => l !== "").length;
  const before = await entries();
  return { bare, writer, prometheus, remotePushes: async () => (await entries()) - before };
}

/** The remote's tip, read synchronously from its ref files: the truth at the instant of the call. */
function remoteTipNow(bare: string): string {
  try {
    return readFileSync(path.join(bare, "refs", "heads", "main"), "utf8").trim();
  } catch {
    const packed = readFileSync(path.join(bare, "packed-refs"), "utf8");
    const line = packed.split("\n").find((l) => l.endsWith(" refs/heads/main"));
    if (line === undefined) throw new Error(`${bare} has no main`);
    return line.slice(0, 40);
  }
}

async function isAncestor(bare: string, commit: string, of: string): Promise<boolean> {
  return git(["merge-base", "--is-ancestor", commit, of], bare).then(
    () => true,
    () => false,
  );
}

function writeOp(file: string, content: string): Operation<string> {
  return async (draft) => {
    draft.write(file, content);
    return { commit: { subject: `write ${file}`, trailers: {} }, result: file };
  };
}

/** The value of the sample `name{labels}` in the exposition text (undefined: none). */
async function sample(prometheus: PrometheusMetrics, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const text = await prometheus.exposition();
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m?.[1] !== name) continue;
    const have = (m[2] ?? "").split(",").filter((l) => l !== "");
    if (have.length === wanted.length && wanted.every((w) => have.includes(w))) return Number(m[3]);
  }
  return undefined;
}

/** Submits `op` and records the remote's tip at the instant the submit resolves. */
function submitObserved<R>(writer: GitWriter, bare: string, op: Operation<R>): Promise<{ result: SubmitResult<R>; remoteTip: string }> {
  return writer.submit(op).then((result) => ({ result, remoteTip: remoteTipNow(bare) }));
}

describe("push pacing", () => {
  it("sends a steady stream in at most one push per window; each operation is acknowledged only once its commit is on the remote", async () => {
    const windowMs = 2_000;
    // When each push started: the time of its "pushed" line less the push's duration.
    const pushStarts: number[] = [];
    const logger = {
      ...silent,
      info: (obj: object, msg: string) => {
        if (msg === "pushed") pushStarts.push(performance.now() - (obj as { ms: number }).ms);
      },
    };
    const { bare, writer, prometheus, remotePushes } = await setup({ minPushIntervalMs: windowMs, store: "paced", logger });
    const pushEvents: number[] = [];
    writer.onPushed((event) => pushEvents.push(event.commits.length));

    // One operation every 150 ms for three windows and a half: far more often than the window.
    const started = performance.now();
    const pending: Promise<{ result: SubmitResult<string>; remoteTip: string }>[] = [];
    const ids: string[] = [];
    while (performance.now() - started < 3.5 * windowMs) {
      const id = `op-${ids.length}`;
      ids.push(id);
      pending.push(submitObserved(writer, bare, writeOp(`ops/${id}`, `${id}\n`)));
      await sleep(150);
    }
    const acked = await Promise.all(pending);
    const durationMs = performance.now() - started;

    // Every acknowledgement came when the remote's branch already held its commit.
    for (const { result, remoteTip } of acked) {
      expect(result.commit).not.toBeNull();
      expect(await isAncestor(bare, result.commit!, remoteTip), `${result.result} acknowledged before its commit was on the remote`).toBe(true);
    }
    // Nothing lost: one commit per operation, in submit order, every file on the remote.
    const log = await gitLog(bare);
    expect(log.slice(0, ids.length).map((c) => c.oid).reverse()).toEqual(acked.map((a) => a.result.commit));
    expect(log[ids.length]!.subject).toBe("initial commit");
    expect(await readRemoteFiles(bare, "main", ids.map((id) => `ops/${id}`))).toEqual(ids.map((id) => `${id}\n`));

    // The pushes the remote took: at most one per window started, whatever the machine's speed.
    const pushes = await remotePushes();
    expect(pushes).toBeLessThanOrEqual(Math.ceil(durationMs / windowMs) + 1);
    expect(pushes).toBe(pushEvents.length);
    expect(pushEvents.reduce((a, b) => a + b, 0)).toBe(ids.length);
    expect(ids.length).toBeGreaterThan(pushes);

    // Metrics, labelled with the store: the pushes, and one window wait per pushed operation.
    expect(await sample(prometheus, "gitops_broker_git_pushes_total", { store: "paced", result: "accepted" })).toBe(pushes);
    expect(await sample(prometheus, "gitops_broker_git_batch_operations_sum", { store: "paced" })).toBe(ids.length);
    expect(await sample(prometheus, "gitops_broker_git_push_window_wait_seconds_count", { store: "paced" })).toBe(ids.length);
    // Every push started a window after the one before it. (Whether an operation waited for it
    // depends on the machine: on a loaded one a push takes longer than the window, and the next
    // finds its window open.)
    expect(pushStarts).toHaveLength(pushes);
    for (let i = 1; i < pushStarts.length; i++) expect(pushStarts[i]! - pushStarts[i - 1]!).toBeGreaterThanOrEqual(windowMs - 2);
    expect(await sample(prometheus, "gitops_broker_git_queued_operations", { store: "paced" })).toBe(0);
    expect(await sample(prometheus, "gitops_broker_git_last_fetch_age_seconds", { store: "paced" })).toBeGreaterThanOrEqual(0);
  });

  it("without a window (0, the default) pushes each operation as soon as it is ready, as before", async () => {
    const { bare, writer, prometheus, remotePushes } = await setup({});
    const acked: { result: SubmitResult<string>; remoteTip: string }[] = [];
    // One after the other: each finds the writer idle, so each is a batch of its own, pushed at once.
    for (let i = 0; i < 4; i++) acked.push(await submitObserved(writer, bare, writeOp(`seq/${i}`, `${i}\n`)));

    expect(await remotePushes()).toBe(4);
    for (const { result, remoteTip } of acked) expect(remoteTip).toBe(result.commit);
    expect(await sample(prometheus, "gitops_broker_git_pushes_total", { store: "control", result: "accepted" })).toBe(4);
    // No window: nothing waits for one, and the histogram has no series.
    expect(await sample(prometheus, "gitops_broker_git_push_window_wait_seconds_count", { store: "control" })).toBeUndefined();
  });

  it("lets a refresh through while the chain waits for the window; close() pushes the waiting chain at once", async () => {
    // A window no test waits for: everything below must happen without it opening.
    const { bare, writer } = await setup({ minPushIntervalMs: 600_000 });
    const first = await writer.submit(writeOp("first.txt", "1"));
    expect(remoteTipNow(bare)).toBe(first.commit);

    let heldSettled = false;
    const held = submitObserved(writer, bare, writeOp("held.txt", "h")).finally(() => (heldSettled = true));
    const external = await pushExternalCommit(bare, { "external.txt": "e\n" }, "external");

    const refreshed = await Promise.race([writer.refresh(), sleep(60_000).then(() => "refresh waited for the window")]);
    expect(refreshed).toBe(external);
    expect(heldSettled).toBe(false);
    expect(remoteTipNow(bare)).toBe(external);

    await Promise.race([writer.close(), sleep(60_000).then(() => Promise.reject(new Error("close() waited for the window")))]);
    const { result, remoteTip } = await held;
    expect(remoteTip).toBe(result.commit);
    // Re-run on the fetched tip: on top of the external commit, which it keeps.
    expect((await gitLog(bare)).slice(0, 3).map((c) => c.subject)).toEqual(["write held.txt", "external", "write first.txt"]);
  });

  it("re-runs a batch whose paced push lost a race on the new tip, and keeps the other writer's commit", async () => {
    const windowMs = 1_000;
    const { bare, writer, remotePushes } = await setup({ minPushIntervalMs: windowMs });
    await writer.submit(writeOp("first.txt", "1"));
    let runs = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const held = submitObserved(writer, bare, async (draft) => {
      runs += 1;
      // The first run (on the chain waiting for the window) ends only after the other writer pushed.
      await gate;
      draft.write("second.txt", "2");
      return { commit: { subject: "second", trailers: {} }, result: await draft.readText("external.txt") };
    });
    await waitUntil(() => runs === 1, "the operation running on the waiting chain", { ceilingMs: 60_000 });
    // Another writer pushes while ours waits for its window: our push is rejected, fetched, re-run.
    const external = await pushExternalCommit(bare, { "external.txt": "theirs\n" }, "external");
    release();

    const { result, remoteTip } = await held;
    expect(runs).toBe(2);
    expect(result.result).toBe("theirs\n");
    expect(remoteTip).toBe(result.commit);
    const log = await gitLog(bare);
    expect(log[0]).toMatchObject({ oid: result.commit, subject: "second", parents: [external] });
    // Ours: the first push and the re-run; the external commit is the third ref update.
    expect(await remotePushes()).toBe(3);
  });

  it("confirms a refusal with a fetch at once, not after the window, and re-runs the chain on what it fetched", async () => {
    const { bare, writer } = await setup({
      minPushIntervalMs: 600_000,
      confirmRejection: (error) => error instanceof ConflictError,
    });
    const tips: (string | null)[] = [];
    writer.onTip((tip) => tips.push(tip));
    await writer.submit(writeOp("first.txt", "1"));

    let settled = 0;
    const waiting = submitObserved(writer, bare, writeOp("waiting.txt", "w")).finally(() => (settled += 1));
    // Another replica wrote the claim after our last contact with the remote; our view does not show it.
    const external = await pushExternalCommit(bare, { "claims/x": "claimed\n" }, "claim x");
    const needsClaim = submitObserved(writer, bare, async (draft) => {
      if ((await draft.readText("claims/x")) === null) throw new ConflictError("x is not claimed");
      draft.write("uses-x.txt", "u");
      return { commit: { subject: "use x", trailers: {} }, result: "used" };
    }).finally(() => (settled += 1));

    // The refusal was not given: the writer fetched (the window still closed) and adopted the claim.
    await waitUntil(() => tips.includes(external), "the confirming fetch", { ceilingMs: 60_000 });
    expect(settled).toBe(0);

    await writer.close();
    const [w, n] = await Promise.all([waiting, needsClaim]);
    expect(n.result.result).toBe("used");
    // Each answered once the remote held its commit (close() pushes what is on the chain at once,
    // so the two may go out in one push or in two).
    expect(await isAncestor(bare, w.result.commit!, w.remoteTip)).toBe(true);
    expect(n.remoteTip).toBe(n.result.commit);
    expect((await gitLog(bare)).slice(0, 3).map((c) => c.subject)).toEqual(["use x", "write waiting.txt", "claim x"]);
  });

  it("validates the new options", () => {
    const valid: GitWriterOptions = { gitdir: path.join(root, "unused.git"), remoteUrl: "https://git.example.com/x.git", branch: "main", author: AUTHOR, logger: silent };
    expect(() => createGitWriter({ ...valid, minPushIntervalMs: 10_000, store: "eu-1" })).not.toThrow();
    for (const bad of [{ minPushIntervalMs: -1 }, { minPushIntervalMs: Number.NaN }, { minPushIntervalMs: Number.POSITIVE_INFINITY }, { store: "" }]) {
      expect(() => createGitWriter({ ...valid, ...bad }), JSON.stringify(bad)).toThrow(InvalidArgumentError);
    }
  });
});
