/**
 * One process per data directory, and start-up failures as one JSON log line with exit code 2:
 * the real CLI (bin/gitops-broker.js) against a real remote over smart HTTP.
 *
 * Broker starts are what this file costs, so the tests share them where that changes nothing they
 * show: the broker holding a data directory serves the second-serve and the CLI-command tests,
 * and is the one then killed with -9; both start-up failures happen on one data directory, so the
 * second failed start (which gets as far as listening) shows the first left nothing behind, and
 * one broker started after both shows the second did not either.
 */
import net from "node:net";
import { hostname } from "node:os";
import { readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lockDataDir } from "../../src/config/index.js";
import { EVENT_CEILING_MS, runProcess, stopProcesses, trackedTempDir } from "../support/processes.js";
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

/** Runs the CLI to its exit (a tracked process group: killed after the ceiling, and after the file whatever happened). */
async function runCli(args: string[], env: Record<string, string>): Promise<Exit> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("GITOPS_BROKER_")));
  const { code, stdout, stderr } = await runProcess(process.execPath, [BIN, ...args], { env: { ...clean, ...env }, ceilingMs: EVENT_CEILING_MS });
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
  return { code, lines, stdout, stderr };
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

beforeAll(async () => {
  remote = await startRemote("gitops-broker-startup-");
  root = await trackedTempDir("gitops-broker-startup-data-");
});
afterAll(async () => {
  // Every broker and CLI process, whatever a test left running, before the remote goes.
  await stopProcesses();
  await remote?.close();
});

describe("one process per data directory", () => {
  /** The broker holding `heldDir`: started by the first test that needs it, killed by the -9 test. */
  let holding: BrokerProcess | undefined;
  const heldDir = () => path.join(root, "held");
  const holder = async (): Promise<BrokerProcess> => (holding ??= await spawnBroker({ dataDir: heldDir(), remoteUrl: remote.url }));

  it("a second serve on the same data directory exits 2 with one line naming the holder's PID, touching nothing", async () => {
    const dataDir = heldDir();
    const first = await holder();
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

  it("serve.pid holds the holder's PID alone, as a pidfile does (kill $(cat serve.pid))", async () => {
    const first = await holder();
    expect(await readFile(path.join(heldDir(), "serve.pid"), "utf8")).toBe(`${first.pid}\n`);
  }, CEILING_MS);

  it("a CLI command that writes exits 2 naming the PID of the command holding the directory", async () => {
    const dataDir = heldDir();
    await holder();
    // This test process plays the other command.
    const held = await lockDataDir(dataDir, "cli");
    try {
      const move = await runCli(["move", "some-instance", "local", "--yes"], serveEnv(dataDir, remote.url));
      expect(move.code).toBe(2);
      expect(move.stderr.trim().split("\n")).toEqual([`data directory ${dataDir} is in use by a gitops-broker command: PID ${process.pid} on ${hostname()}`]);
    } finally {
      await held.release();
    }
    // Commands and the running broker do not exclude each other (own clones): with the lock free it runs.
    const clusters = await runCli(["clusters", "--json"], serveEnv(dataDir, remote.url));
    expect(clusters.code).toBe(0);
  }, CEILING_MS);

  it("a broker killed with -9 leaves a lock that the next start on this host takes at once", async () => {
    const dataDir = heldDir();
    const first = await holder();
    holding = undefined;
    await first.kill();
    const second = await spawnBroker({ dataDir, remoteUrl: remote.url });
    expect((await second.osb.catalog()).status).toBe(200);
  }, CEILING_MS);
});

describe("start-up failures: one JSON log line, exit code 2, nothing left behind", () => {
  // Both failures on one data directory (see the top of the file).
  const dataDir = () => path.join(root, "failures");

  it("an unreachable remote", async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const res = await runCli(["serve"], serveEnv(dataDir(), `http://127.0.0.1:${port}/gitops.git`));
    expect(res.code).toBe(2);
    expect(res.stderr).toBe("");
    const fatal = res.lines.filter((l) => (l.level as number) >= 50);
    expect(fatal).toEqual([expect.objectContaining({ code: "GitRemoteError", msg: expect.stringMatching(/^cannot reach the Git remote of the control repository at start-up: /) })]);
    expect(res.stdout).not.toMatch(/\n\s+at /);
    // Nothing half-started: the lock is free again (and the next test's start on this directory
    // gets through the remote, the view and up to listening).
    await (await lockDataDir(dataDir(), "serve")).release();
  }, CEILING_MS);

  it("a branch git would refuse, with an external remote: exit 2 naming the variable, before anything starts", async () => {
    // Found by the writer at start-up before (a TypeError, exit 1); now by the configuration loader.
    const res = await runCli(["serve"], { ...serveEnv(dataDir(), remote.url), GITOPS_BROKER_GIT_BRANCH: "bad..branch" });
    expect(res.code).toBe(2);
    expect(res.stderr.trim().split("\n")).toEqual(["invalid configuration:", 'env: GITOPS_BROKER_GIT_BRANCH: "bad..branch" is not a valid branch name (git check-ref-format --branch)']);
    expect(res.stdout).toBe("");
  }, CEILING_MS);

  it("leader election with a kubeconfig that names no cluster: exit 2 naming the key, and the lock free again", async () => {
    // Found when the Lease client was made, outside the check of the kubeconfig (exit 1 with a stack).
    const kubeconfig = path.join(root, "no-cluster.kubeconfig");
    await writeFile(kubeconfig, "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n");
    const res = await runCli(["serve"], { ...serveEnv(dataDir(), remote.url), KUBECONFIG: kubeconfig, GITOPS_BROKER_LEADER_ELECTION: "true" });
    expect(res.code).toBe(2);
    expect(res.stderr.trim().split("\n")).toEqual([
      "invalid configuration:",
      "config: leaderElection.enabled: needs the cluster's API, but its kubeconfig does not load: the kubeconfig for leader election has no current cluster",
    ]);
    expect(res.stdout).not.toMatch(/\n\s+at /);
    await (await lockDataDir(dataDir(), "serve")).release();
  }, CEILING_MS);

  it("the port in use", async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const res = await runCli(["serve"], serveEnv(dataDir(), remote.url, `127.0.0.1:${port}`));
      expect(res.code).toBe(2);
      expect(res.stderr).toBe("");
      const fatal = res.lines.filter((l) => (l.level as number) >= 50);
      expect(fatal).toEqual([expect.objectContaining({ code: "EADDRINUSE", msg: `cannot listen on 127.0.0.1:${port}: the address is in use` })]);
      expect(res.stdout).not.toMatch(/\n\s+at /);
    } finally {
      blocker.close();
    }
    // Nothing half-started: the lock is free again and a broker starts on the directory.
    const next = await spawnBroker({ dataDir: dataDir(), remoteUrl: remote.url });
    expect((await next.osb.catalog()).status).toBe(200);
  }, CEILING_MS);
});
