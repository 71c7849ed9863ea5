/**
 * Child processes and temporary directories of tests, stopped and removed even when a test fails
 * or times out.
 *
 * Every process is started in a process group of its own, so that stopping it stops what it runs
 * (git push, git-upload-pack ...) too. `cleanUp()` kills every group still running and removes
 * every temporary directory; test/support/setup.ts runs it after each test file, and it runs when
 * the test worker exits or is sent SIGTERM (how vitest stops a worker), so a test body that goes
 * on after its timeout leaves nothing behind. After `cleanUp()` a file starts no new process.
 *
 * A group is killed by its number only while that number is still its own: once every process of
 * a group has exited, the kernel hands the number out again, and on a machine where other suites
 * start thousands of processes a later kill of it reached someone else's process group (a broker
 * of a suite beside this one died of SIGKILL before its first line). So a group is killed while
 * its leader runs, or after the leader's exit only while a process it left behind still runs
 * (`groupMembers`); and a file's clean-up forgets the groups it stopped.
 *
 * Waiting is on events (a line, an exit, a condition) with generous ceilings: a loaded machine is
 * slow, not wrong, and the ceilings only turn a hang into a message.
 */
import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { RUN_DIR_VARIABLE } from "./global-setup.js";

/** How long a test waits for something a process or server does: a hang, not slowness, reaches it. */
export const EVENT_CEILING_MS = 120_000;

/**
 * The timeout of a test (or hook) that starts broker processes: each start takes seconds on a
 * loaded machine, tsx compiling the sources included. It only bounds a hang; the waits inside
 * have their own ceilings, which say what did not happen.
 */
export const PROCESS_TEST_TIMEOUT_MS = 600_000;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface TrackedProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Resolves when the process has exited (never rejects). */
  readonly exited: Promise<Exit>;
  /** Everything written to stdout / stderr so far (when piped; stdout only with `keepOutput`). */
  stdout(): string;
  stderr(): string;
  /** Calls `listener` with every stdout line to come. */
  onLine(listener: (line: string) => void): void;
  /** Resolves with the first stdout line (so far or to come) that `match` accepts; rejects when the process exits first or after `ceilingMs`. */
  waitForLine(match: (line: string) => boolean, what: string, ceilingMs?: number): Promise<string>;
  /** Sends `signal` to the process alone (not its group). */
  signal(signal: NodeJS.Signals): void;
  /** SIGKILL to the whole process group, then waits for the exit. */
  killGroup(): Promise<Exit>;
}

const running = new Set<TrackedProcess>();
const tempDirs = new Set<string>();
let closed = false;

/** Where a tracked group stands: its leader runs, or these processes (pid → start time) were left in it at the leader's exit. */
const groups = new Map<number, { leftBehind: Map<number, string> | undefined } | "running">();

/**
 * The processes whose process group is `pgid`, each with its start time (field 22 of
 * /proc/<pid>/stat), leaving out a process whose own pid is `pgid`: the leader of a new group that
 * took the number. Undefined where there is no /proc.
 */
function groupMembers(pgid: number): Map<number, string> | undefined {
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return undefined;
  }
  const members = new Map<number, string>();
  for (const name of names) {
    if (!/^\d+$/.test(name) || Number(name) === pgid) continue;
    const stat = procStat(Number(name));
    if (stat?.pgrp === pgid) members.set(Number(name), stat.started);
  }
  return members;
}

/** A process's group and start time, from /proc/<pid>/stat (after the command name, which may hold spaces). */
function procStat(pid: number): { pgrp: number; started: string } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return { pgrp: Number(fields[2]), started: fields[19] ?? "" };
}

/** Whether group `pgid` is still the one this file started: its leader runs, or a process it left behind does. */
export function stillOurs(pgid: number): boolean {
  const group = groups.get(pgid);
  if (group === undefined) return false;
  if (group === "running" || group.leftBehind === undefined) return true;
  for (const [pid, started] of group.leftBehind) {
    const now = procStat(pid);
    if (now?.pgrp === pgid && now.started === started) return true;
  }
  return false;
}

function killGroup(pid: number): void {
  if (!stillOurs(pid)) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // the group is gone already
  }
}

function killAllNow(): void {
  for (const p of running) killGroup(p.pid);
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
}

// Last resorts: the worker exits (normally, or on vitest's SIGTERM after a timed-out file).
process.once("exit", killAllNow);
process.once("SIGTERM", () => {
  killAllNow();
  process.kill(process.pid, "SIGTERM"); // the default action, now that our listener is gone
});

/** Starts `command` in a process group of its own; it is killed by `cleanUp()` if still running then. */
export interface StartOptions extends Omit<SpawnOptions, "detached"> {
  /** Keep stdout and its lines for stdout() and waitForLine() on past lines (default true). */
  keepOutput?: boolean;
}

export function startProcess(command: string, args: readonly string[], { keepOutput = true, ...options }: StartOptions = {}): TrackedProcess {
  if (closed) throw new Error(`not starting ${command} ${args.join(" ")}: this test file has been cleaned up`);
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], ...options, detached: true });
  let spawnError: Error | undefined;
  const exited = new Promise<Exit>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", (error) => {
      spawnError = error;
      resolve({ code: null, signal: null });
    });
  });
  if (child.pid === undefined) throw new Error(`could not start ${command} ${args.join(" ")}`);
  const pid = child.pid;
  groups.set(pid, "running");
  // At the leader's exit, what it left in its group (a push of a broker killed alone); none: forgotten.
  child.once("exit", () => {
    let leftBehind: Map<number, string> | undefined = new Map();
    try {
      process.kill(-pid, 0); // throws when the group is empty, as it mostly is: no /proc to read then
      leftBehind = groupMembers(pid);
    } catch {
      // nothing left behind
    }
    if (leftBehind?.size === 0) groups.delete(pid);
    else groups.set(pid, { leftBehind });
  });
  let out = "";
  let err = "";
  const lineWatchers = new Set<(line: string) => void>();
  const lines: string[] = [];
  child.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString()));
  if (child.stdout) {
    if (keepOutput) child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (keepOutput) lines.push(line);
      for (const watch of lineWatchers) watch(line);
    });
  }
  const tracked: TrackedProcess = {
    child,
    pid,
    exited,
    stdout: () => out,
    stderr: () => err,
    onLine(listener) {
      lineWatchers.add(listener);
    },
    waitForLine(match, what, ceilingMs = EVENT_CEILING_MS) {
      const found = lines.find(match);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise<string>((resolve, reject) => {
        const done = (): void => {
          clearTimeout(timer);
          lineWatchers.delete(watch);
        };
        const watch = (line: string): void => {
          if (!match(line)) return;
          done();
          resolve(line);
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no ${what} within ${ceilingMs} ms; stderr: ${err}`));
        }, ceilingMs);
        lineWatchers.add(watch);
        void exited.then(({ code, signal }) => {
          if (!lineWatchers.has(watch)) return;
          done();
          reject(new Error(`${command} exited (${String(code ?? signal)}) before ${what}; stderr: ${err}`, { cause: spawnError }));
        });
      });
    },
    signal(signal) {
      child.kill(signal);
    },
    async killGroup() {
      killGroup(pid);
      return exited;
    },
  };
  // Kept after its exit: a group whose leader was killed alone may still hold children (a push).
  running.add(tracked);
  return tracked;
}

/**
 * Runs `command` to its end; resolves with its exit code and output. With `ceilingMs`, its process
 * group is killed once that has passed (a hang, then seen in the exit code).
 */
export async function runProcess(
  command: string,
  args: readonly string[],
  { ceilingMs, ...options }: Omit<SpawnOptions, "detached" | "stdio"> & { ceilingMs?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = startProcess(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
  // "close" comes after the output pipes are drained, "exit" may come before.
  const closed = new Promise<void>((resolve) => p.child.once("close", () => resolve()));
  const ceiling = ceilingMs === undefined ? undefined : setTimeout(() => void p.killGroup(), ceilingMs);
  const { code } = await p.exited;
  await closed;
  clearTimeout(ceiling);
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

/**
 * A fresh temporary directory, removed by `cleanUp()` (callers may remove it earlier). In a vitest
 * run it is below the run's directory, so a run killed before its clean-up leaves one directory,
 * which the next run's setup removes (global-setup.ts).
 */
export async function trackedTempDir(prefix: string): Promise<string> {
  const dir = await fs.mkdtemp(path.join(process.env[RUN_DIR_VARIABLE] ?? os.tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

/**
 * A fresh directory for a fixture made once and copied by later test files of the worker: below
 * the run's directory (made and removed by test/support/global-setup.ts), so it outlives the
 * file. Outside a vitest run (the benchmarks), a tracked temporary directory.
 */
export async function runScopedDir(prefix: string): Promise<string> {
  const runDir = process.env[RUN_DIR_VARIABLE];
  return runDir === undefined ? trackedTempDir(prefix) : fs.mkdtemp(path.join(runDir, prefix));
}

/** Kills every process group still running (and waits for their exits). */
export async function stopProcesses(): Promise<void> {
  const all = [...running];
  for (const p of all) killGroup(p.pid);
  await Promise.all(all.map((p) => p.exited));
  // Stopped: their numbers are not ours any more.
  for (const p of all) {
    running.delete(p);
    groups.delete(p.pid);
  }
}

/** Before a test file (a worker may run several): processes may be started. */
export function reopen(): void {
  closed = false;
}

/** After a test file: no process left, no temporary directory left, no new process started. */
export async function cleanUp(): Promise<void> {
  closed = true;
  await stopProcesses();
  await Promise.all([...tempDirs].map((dir) => fs.rm(dir, { recursive: true, force: true, maxRetries: 5 })));
  tempDirs.clear();
}

/** Resolves once `condition` holds, checking every `intervalMs`; rejects with `what` after `ceilingMs`. */
export async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  what: string,
  { ceilingMs = EVENT_CEILING_MS, intervalMs = 10 }: { ceilingMs?: number; intervalMs?: number } = {},
): Promise<void> {
  const deadline = performance.now() + ceilingMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ceilingMs} ms`);
    await sleep(intervalMs);
  }
}

/**
 * A free port on 127.0.0.1, as the kernel hands out for port 0, for a process that takes its port
 * as an argument (etcd, kube-apiserver, nginx). Another binder may take it first: callers retry.
 */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
