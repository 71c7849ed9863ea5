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
 * Waiting is on events (a line, an exit, a condition) with generous ceilings: a loaded machine is
 * slow, not wrong, and the ceilings only turn a hang into a message.
 */
import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { rmSync } from "node:fs";
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

function killGroup(pid: number): void {
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
