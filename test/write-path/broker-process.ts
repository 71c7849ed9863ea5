/**
 * Real broker processes for the write-path tests and the benchmarks: `bin/gitops-broker.js serve`
 * configured through GITOPS_BROKER_* variables, listening on 127.0.0.1:0. The URL comes from the
 * "gitops-broker listening" log line, as test/cli/serve.test.ts does it; every JSON log line is
 * kept for assertions.
 */
import type { ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { osbClient, type OsbClient } from "../support/osb-client.js";
import { EVENT_CEILING_MS, startProcess } from "../support/processes.js";

export const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../bin/gitops-broker.js");
export const CREDENTIALS = { username: "broker", password: "write-path-password-1234" };

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export interface BrokerProcessOptions {
  dataDir: string;
  remoteUrl: string;
  pushTimeoutSeconds?: number;
  pollIntervalSeconds?: number;
  /** Default `info`: the listening line is logged at info. */
  logLevel?: string;
  /** Keep every log line in `logs` (default true). */
  keepLogs?: boolean;
  /** Run another entry point instead of bin/gitops-broker.js (argv after `node`). */
  command?: string[];
  /** More environment (e.g. GITOPS_BROKER_METRICS_LISTEN). */
  env?: Record<string, string>;
}

export interface BrokerProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly url: string;
  readonly osb: OsbClient;
  /** Parsed JSON log lines so far. */
  readonly logs: LogLine[];
  /** Resolves with the first log line (so far or to come) that `match` accepts; rejects when the broker exits first, or after `ceilingMs`. */
  waitForLog(match: (line: LogLine) => boolean, ceilingMs?: number): Promise<LogLine>;
  /** performance.now() when the process was spawned. */
  readonly spawnedAt: number;
  /** Milliseconds from spawn to the listening line. */
  readonly startMs: number;
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  /** VmRSS and VmHWM (peak) of the process, in MB, from /proc. */
  memory(): Promise<{ rssMb: number; peakMb: number }>;
  /** CPU seconds (user + system, all threads) the process used so far, from /proc. */
  cpuSeconds(): Promise<number>;
  /** kill -9 of the broker (not the git processes it runs: a push in flight goes on), then wait for the exit. */
  kill(): Promise<void>;
  /** SIGTERM (graceful: pushes what is queued), then wait for the exit. */
  stop(): Promise<number | null>;
}

/** Environment without the parent's GITOPS_BROKER_* settings. */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("GITOPS_BROKER_")));
}

function parseLogLine(line: string): LogLine | undefined {
  try {
    return JSON.parse(line) as LogLine;
  } catch {
    return undefined; // not a log line
  }
}

/**
 * Starts a broker and resolves once it logged that it listens. The process runs in a group of its
 * own, which test/support/processes.ts kills after the test file whatever happened.
 */
export async function spawnBroker(options: BrokerProcessOptions): Promise<BrokerProcess> {
  const started = performance.now();
  const proc = startProcess(process.execPath, options.command ?? [BIN, "serve"], {
    env: {
      ...cleanEnv(),
      GITOPS_BROKER_DATA_DIR: options.dataDir,
      GITOPS_BROKER_GIT_REMOTE: options.remoteUrl,
      GITOPS_BROKER_LISTEN: "127.0.0.1:0",
      GITOPS_BROKER_USERNAME: CREDENTIALS.username,
      GITOPS_BROKER_PASSWORD: CREDENTIALS.password,
      GITOPS_BROKER_GIT_PUSH_TIMEOUT_SECONDS: String(options.pushTimeoutSeconds ?? 30),
      GITOPS_BROKER_GIT_POLL_INTERVAL_SECONDS: String(options.pollIntervalSeconds ?? 3600),
      GITOPS_BROKER_LOG_LEVEL: options.logLevel ?? "info",
      ...options.env,
    },
    keepOutput: false,
  });
  const exited = proc.exited.then(({ code }) => code);
  const logs: LogLine[] = [];
  const watchers = new Set<(entry: LogLine) => void>();
  const keep = options.keepLogs ?? true;
  proc.onLine((line) => {
    const entry = parseLogLine(line);
    if (entry === undefined) return;
    if (keep) logs.push(entry);
    for (const watch of watchers) watch(entry);
  });
  const listening = await proc.waitForLine((line) => {
    const entry = parseLogLine(line);
    return entry?.msg === "gitops-broker listening" && typeof entry.url === "string";
  }, "\"gitops-broker listening\" log line");
  const url = parseLogLine(listening)!.url as string;
  const startMs = performance.now() - started;
  return {
    child: proc.child,
    pid: proc.pid,
    url,
    osb: osbClient(url, CREDENTIALS),
    logs,
    spawnedAt: started,
    startMs,
    exited,
    waitForLog(match, ceilingMs = EVENT_CEILING_MS) {
      const found = logs.find(match);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise<LogLine>((resolve, reject) => {
        const done = (): void => {
          clearTimeout(timer);
          watchers.delete(watch);
        };
        const watch = (entry: LogLine): void => {
          if (!match(entry)) return;
          done();
          resolve(entry);
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no matching log line within ${ceilingMs} ms`));
        }, ceilingMs);
        watchers.add(watch);
        void exited.then((code) => {
          if (!watchers.has(watch)) return;
          done();
          reject(new Error(`the broker exited (${String(code)}) before a matching log line`));
        });
      });
    },
    memory: () => memoryOf(proc.pid),
    cpuSeconds: () => cpuSecondsOf(proc.pid),
    async kill() {
      proc.signal("SIGKILL");
      await exited;
    },
    async stop() {
      proc.signal("SIGTERM");
      return exited;
    },
  };
}

export async function memoryOf(pid: number): Promise<{ rssMb: number; peakMb: number }> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
  return { rssMb: kb("VmRSS") / 1024, peakMb: kb("VmHWM") / 1024 };
}

export async function cpuSecondsOf(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  // Fields after the parenthesized command name; utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
