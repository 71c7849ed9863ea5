/**
 * One process per data directory, and start-up failures as one JSON log line with exit code 2:
 * the real CLI (bin/gitops-broker.js) against a real remote over smart HTTP.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { lockDataDir } from "../../src/config/index.js";
import { BIN, CREDENTIALS, spawnBroker, type BrokerProcess } from "../write-path/broker-process.js";
import { startRemote, type Remote } from "../write-path/fixture.js";

interface Exit {
  code: number | null;
  /** The stdout lines that are JSON (log lines). */
  lines: Record<string, unknown>[];
  stdout: string;
  stderr: string;
}

/** Several broker processes per test on a loaded machine: a generous ceiling, not a budget. */
const CEILING_MS = 300_000;

const children = new Set<ChildProcess>();

/** Runs the CLI to its exit (120 s ceiling, then killed). */
function runCli(args: string[], env: Record<string, string>): Promise<Exit> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("GITOPS_BROKER_")));
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...clean, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const ceiling = setTimeout(() => child.kill("SIGKILL"), 120_000);
  return new Promise<Exit>((resolve) =>
    child.once("close", (code) => {
      clearTimeout(ceiling);
      children.delete(child);
      const lines = stdout
        .split("\n")
        .filter((l) => l.trim() !== "")
        .flatMap((l) => {
          try {
            return [JSON.parse(l) as Record<string, unknown>];
          } catch {
            return []; // not a log line (a command's own output)
          }
        });
      resolve({ code, lines, stdout, stderr });
    }),
  );
}

function serveEnv(dataDir: string, remoteUrl: string, listen = "127.0.0.1:0"): Record<string, string> {
  return {
    GITOPS_BROKER_DATA_DIR: dataDir,
    GITOPS_BROKER_GIT_REMOTE: remoteUrl,
    GITOPS_BROKER_LISTEN: listen,
    GITOPS_BROKER_USERNAME: CREDENTIALS.username,
    GITOPS_BROKER_PASSWORD: CREDENTIALS.password,
    GITOPS_BROKER_GIT_PUSH_TIMEOUT_SECONDS: "10",
    GITOPS_BROKER_LOG_LEVEL: "info",
  };
}

let remote: Remote;
let root: string;
const brokers: BrokerProcess[] = [];

beforeAll(async () => {
  remote = await startRemote("gitops-broker-startup-");
  root = await mkdtemp(path.join(tmpdir(), "gitops-broker-startup-data-"));
});
afterEach(async () => {
  for (const b of brokers.splice(0)) await b.kill();
  for (const child of children) child.kill("SIGKILL");
});
afterAll(async () => {
  await remote?.close();
  await rm(root, { recursive: true, force: true });
});

describe("one process per data directory", () => {
  it("a second serve on the same data directory exits 2 with one line naming the holder's PID, touching nothing", async () => {
    const dataDir = path.join(root, "second-serve");
    const first = await spawnBroker({ dataDir, remoteUrl: remote.url });
    brokers.push(first);
    const before = (await readdir(dataDir)).sort();

    const second = await runCli(["serve"], serveEnv(dataDir, remote.url));
    expect(second.code).toBe(2);
    expect(second.stderr).toBe("");
    expect(second.lines).toHaveLength(1);
    expect(second.lines[0]).toMatchObject({ level: 60, code: "DataDirLocked", holderPid: first.pid });
    expect(second.lines[0]!.msg).toMatch(new RegExp(`in use by gitops-broker serve: PID ${first.pid}\\b`));
    expect((await readdir(dataDir)).sort()).toEqual(before);

    // The first one is unaffected.
    expect((await first.osb.catalog()).status).toBe(200);
  }, CEILING_MS);

  it("a broker killed with -9 leaves a lock that the next start on this host takes at once", async () => {
    const dataDir = path.join(root, "killed");
    const first = await spawnBroker({ dataDir, remoteUrl: remote.url });
    await first.kill();
    const second = await spawnBroker({ dataDir, remoteUrl: remote.url });
    brokers.push(second);
    expect((await second.osb.catalog()).status).toBe(200);
  }, CEILING_MS);

  it("a CLI command that writes exits 2 naming the PID of the command holding the directory", async () => {
    const dataDir = path.join(root, "cli");
    const first = await spawnBroker({ dataDir, remoteUrl: remote.url });
    brokers.push(first);
    // This test process plays the other command.
    const held = await lockDataDir(dataDir, "cli");
    try {
      const move = await runCli(["move", "some-instance", "local", "--yes"], serveEnv(dataDir, remote.url));
      expect(move.code).toBe(2);
      expect(move.stderr.trim().split("\n")).toEqual([`data directory ${dataDir} is in use by a gitops-broker command: PID ${process.pid} on ${(await import("node:os")).hostname()}`]);
    } finally {
      await held.release();
    }
    // Commands and the running broker do not exclude each other (own clones): with the lock free it runs.
    const clusters = await runCli(["clusters", "--json"], serveEnv(dataDir, remote.url));
    expect(clusters.code).toBe(0);
  }, CEILING_MS);
});

describe("start-up failures: one JSON log line, exit code 2, nothing left behind", () => {
  it("the port in use", async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    const dataDir = path.join(root, "port");
    try {
      const res = await runCli(["serve"], serveEnv(dataDir, remote.url, `127.0.0.1:${port}`));
      expect(res.code).toBe(2);
      expect(res.stderr).toBe("");
      const fatal = res.lines.filter((l) => (l.level as number) >= 50);
      expect(fatal).toEqual([expect.objectContaining({ code: "EADDRINUSE", msg: `cannot listen on 127.0.0.1:${port}: the address is in use` })]);
      expect(res.stdout).not.toMatch(/\n\s+at /);
    } finally {
      blocker.close();
    }
    // Nothing half-started: the lock is free again and a broker starts on the directory.
    const next = await spawnBroker({ dataDir, remoteUrl: remote.url });
    brokers.push(next);
    expect((await next.osb.catalog()).status).toBe(200);
  }, CEILING_MS);

  it("an unreachable remote", async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const dataDir = path.join(root, "unreachable");
    const res = await runCli(["serve"], serveEnv(dataDir, `http://127.0.0.1:${port}/gitops.git`));
    expect(res.code).toBe(2);
    expect(res.stderr).toBe("");
    const fatal = res.lines.filter((l) => (l.level as number) >= 50);
    expect(fatal).toEqual([expect.objectContaining({ code: "GitRemoteError", msg: expect.stringMatching(/^cannot reach the Git remote at start-up: /) })]);
    expect(res.stdout).not.toMatch(/\n\s+at /);
    const next = await spawnBroker({ dataDir, remoteUrl: remote.url });
    brokers.push(next);
    expect((await next.osb.catalog()).status).toBe(200);
  }, CEILING_MS);
});
