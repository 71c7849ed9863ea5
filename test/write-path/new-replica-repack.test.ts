import { mkdir, readdir, rm } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { prefillRemote } from "../../bench/prefill.js";
import { createGitWriter } from "../../src/gitwriter/index.js";
import { createTempDir, fsck, git } from "../support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import { PROCESS_TEST_TIMEOUT_MS, stopProcesses } from "../support/processes.js";
import { spawnBroker } from "./broker-process.js";
import { samplePlans } from "./fixture.js";

/**
 * A new replica (ADR 0005; ADR 0038, 2026-11-29): the pack its clone fetched is repacked with
 * delta chains of at most 4 once the broker's view is loaded (the cold fold of every record), not
 * during the load; it serves as it did. A writer closed before its hold ended closes without
 * repacking and leaves the repack owed: the next start runs it.
 */

/** Over the 20,000 objects of a fetch the writer repacks (src/gitwriter/repacker.ts). */
const INSTANCES = 4_000;
const REPACK_START = "repacking the fetched pack with short delta chains";
const REPACKED = "fetched pack repacked with short delta chains";

let root: string;
let server: GitHttpServer;
let remoteDir: string;
let url: string;

beforeAll(async () => {
  root = await createTempDir("gitops-broker-new-replica-");
  const remotes = path.join(root, "remotes");
  await mkdir(remotes);
  ({ remoteDir } = await prefillRemote(remotes, INSTANCES));
  server = await startGitHttpServer({ root: remotes });
  url = server.url(path.basename(remoteDir));
}, PROCESS_TEST_TIMEOUT_MS);

afterAll(async () => {
  await stopProcesses();
  await server?.close();
  await rm(root, { recursive: true, force: true });
}, PROCESS_TEST_TIMEOUT_MS);

async function objectsIn(gitdir: string): Promise<number> {
  const out = await git(["--git-dir", gitdir, "count-objects", "-v"]);
  return Number(/^in-pack: (\d+)$/m.exec(out)?.[1] ?? NaN);
}

/** The longest delta chain in the packs of `gitdir`. */
async function longestChain(gitdir: string): Promise<number> {
  const packs = path.join(gitdir, "objects", "pack");
  const indexes = (await readdir(packs)).filter((f) => f.endsWith(".idx")).map((f) => path.join(packs, f));
  const out = await git(["verify-pack", "-s", ...indexes]);
  return Math.max(0, ...[...out.matchAll(/chain length = (\d+)/g)].map((m) => Number(m[1])));
}

/** A writer on `gitdir` cloning the prefilled remote, its log messages in `logs`. */
function writerAt(gitdir: string, logs: string[], holdRepacksUntil?: Promise<never>) {
  const log = (_obj: object, msg: string) => void logs.push(msg);
  return createGitWriter({
    gitdir,
    remoteUrl: url,
    branch: "main",
    author: { name: "t", email: "t@example.com" },
    logger: { debug: log, info: log, warn: log, error: log },
    ...(holdRepacksUntil ? { holdRepacksUntil } : {}),
  });
}

describe("a new replica's repack", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("runs after the broker's view is loaded, not before, and the broker serves as before", async () => {
    expect(await objectsIn(remoteDir)).toBeGreaterThanOrEqual(20_000);
    const dataDir = path.join(root, "replica");
    const broker = await spawnBroker({ dataDir, remoteUrl: url });
    let body: Record<string, unknown>;
    try {
      const plans = await samplePlans(broker.osb);
      body = { service_id: plans.serviceId, plan_id: plans.small, organization_guid: "org", space_guid: "space" };
      expect((await broker.osb.provision("after-clone", body)).status).toBe(201);
      await broker.waitForLog((l) => l.msg === REPACKED);
      // The log is written in the order things happen, one process, one stream.
      const order = ["git writer started", "repository view loaded", REPACK_START, REPACKED].map((msg) => broker.logs.findIndex((l) => l.msg === msg));
      expect(order.every((i) => i >= 0), JSON.stringify(order)).toBe(true);
      expect([...order].sort((a, b) => a - b)).toEqual(order);
      expect(broker.logs.find((l) => l.msg === REPACK_START)).toMatchObject({ objects: expect.any(Number) as number });
      // What the repack is for: no object reads through a chain longer than 4.
      expect(await longestChain(path.join(dataDir, "work.git"))).toBeLessThanOrEqual(4);
    } finally {
      await broker.stop();
    }
    await fsck(path.join(dataDir, "work.git"));

    // A restart fetches only what is new: nothing to repack; the instance is there.
    const again = await spawnBroker({ dataDir, remoteUrl: url });
    try {
      expect((await again.osb.provision("after-clone", body)).status).toBe(200);
      expect((await again.osb.provision("after-restart", body)).status).toBe(201);
      expect(again.logs.some((l) => l.msg === REPACK_START)).toBe(false);
    } finally {
      await again.stop();
    }
  });

  it("a writer closed while its repack is held closes without repacking; the next start repacks", async () => {
    const gitdir = path.join(root, "closed-early.git");
    const logs: string[] = [];
    // A view that never loads (a start that failed after the clone).
    const writer = writerAt(gitdir, logs, new Promise<never>(() => undefined));
    await writer.start();
    expect(logs).toContain("git writer started");
    expect(logs).not.toContain(REPACK_START);
    await writer.close();
    expect(logs.filter((m) => m === REPACK_START || m === REPACKED || m === "git writer closed")).toEqual(["git writer closed"]);
    expect(await longestChain(gitdir)).toBeGreaterThan(4);

    const next: string[] = [];
    const again = writerAt(gitdir, next);
    await again.start();
    await vi.waitFor(() => expect(next).toContain(REPACKED), { timeout: PROCESS_TEST_TIMEOUT_MS, interval: 100 });
    await again.close();
    expect(next.filter((m) => m === REPACK_START || m === REPACKED)).toEqual([REPACK_START, REPACKED]);
    expect(await longestChain(gitdir)).toBeLessThanOrEqual(4);
  });

  it("a start whose process stopped before its repack ran (killed during the fold): the next start repacks", async () => {
    const gitdir = path.join(root, "killed-early.git");
    const writer = (logs: string[], holdRepacksUntil?: Promise<never>) => writerAt(gitdir, logs, holdRepacksUntil);
    // Started and never closed, its hold never settling: what a kill during the fold leaves.
    const first: string[] = [];
    const abandoned = writer(first, new Promise<never>(() => undefined));
    await abandoned.start();
    expect(first).not.toContain(REPACK_START);
    expect(await longestChain(gitdir)).toBeGreaterThan(4);

    const logs: string[] = [];
    const next = writer(logs);
    await next.start();
    await next.close();
    expect(logs.filter((m) => m === REPACK_START || m === REPACKED)).toEqual([REPACK_START, REPACKED]);
    expect(await longestChain(gitdir)).toBeLessThanOrEqual(4);

    // Owed no more: a further start does not repack.
    const after: string[] = [];
    const third = writer(after);
    await third.start();
    await third.close();
    expect(after).toContain("git writer started");
    expect(after).not.toContain(REPACK_START);
    await abandoned.close(); // its files, for the test's sake
  });
});
