/**
 * The git writer: the only store of gitops-broker. Operations edit drafts over the branch tip;
 * their commits are built from objects (no working tree, no index) in a local bare repository,
 * written as one pack per push and pushed with the git CLI. See writer.ts for the flow and retry
 * rules and the pieces it composes (commit-queue.ts: the queue and the chain), object-store.ts and
 * pack.ts for the objects, docs/adr/0005-write-path.md for why.
 */
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { InvalidArgumentError } from "../errors/index.js";
import { noopInstruments, type GitWriterInstruments } from "../metrics/index.js";
import { ObjectStore } from "./object-store.js";
import { Remote, type FetchProgress } from "./remote.js";
import type { GitAuthor, GitWriter } from "./types.js";
import { Writer, type GitWriterLogger } from "./writer.js";

export type {
  BulkReader,
  CommitInfo,
  CommitSpec,
  Draft,
  GitAuthor,
  GitReader,
  GitWriter,
  HistoryRewrite,
  LogOptions,
  Operation,
  OperationOutcome,
  PushedCommit,
  PushEvent,
  SubmitResult,
  TreeEntryInfo,
  TreeReader,
  WalkEntry,
} from "./types.js";
export type { GitWriterLogger } from "./writer.js";
export { tappedDraft } from "./tapped-draft.js";

export interface GitWriterOptions {
  /** Local bare repository the writer owns (created if missing). One writer per gitdir. */
  gitdir: string;
  /** Anything the git CLI accepts: http(s)://, ssh, a file path. */
  remoteUrl: string;
  /** Branch to write, e.g. "main". */
  branch: string;
  /** Author and committer of every commit. */
  author: GitAuthor;
  logger: GitWriterLogger;
  /** Commit timestamps (default: the wall clock). */
  now?: () => Date;
  /** Backoff waits (default: setTimeout). */
  delay?: (ms: number) => Promise<void>;
  /** How long a queued operation waits for an unreachable remote before it is rejected (default 30000). */
  remoteTimeoutMs?: number;
  /**
   * A fetch or push that has had no answer for this long makes the remote count as not answering
   * (remoteReachable false) while it goes on; it is killed only after the command timeout
   * (default 5000). A remote that accepts connections and never answers is noticed this soon.
   */
  activityTimeoutMs?: number;
  /** Rejected (non-fast-forward) pushes of one batch before its operations are rejected (default 10). */
  maxPushAttempts?: number;
  /** The writer's instruments (default: record nothing). */
  metrics?: GitWriterInstruments;
  /** The store this writer writes: the `store` label of its metrics (default "control", the control repository). */
  store?: string;
  /** The repository's name in errors and log lines (default "the Git remote"). */
  repository?: string;
  /**
   * Push pacing (default 0: push as soon as a commit is ready). A push starts at least this long
   * after the start of the last push the remote answered; operations arriving in the meantime run
   * onto the waiting chain and go out together in that one push, and each submit() still resolves
   * only after the push carrying its commit was accepted. A rejected (non-fast-forward) or failed
   * push is retried on its own backoff, not a window later. A refresh() never waits for the
   * window, and close() pushes what is queued at once.
   */
  minPushIntervalMs?: number;
  /** Errors that must be confirmed on a freshly fetched view before an operation is rejected with them (ADR 0012). */
  confirmRejection?: (error: unknown) => boolean;
  /** Extra environment for the git CLI (GIT_SSH_COMMAND, GIT_ASKPASS, GIT_CONFIG_COUNT/KEY/VALUE ...). */
  gitEnv?: Record<string, string>;
  /** At most one fetch progress line this often, none for a fetch that ends sooner (default 5000). */
  progressIntervalMs?: number;
  /** Monotonic milliseconds of the progress lines (default performance.now). */
  clock?: () => number;
  /**
   * No background repack starts before this settles (default: at once). The repack of a large
   * fetched pack (a clone) to short delta chains runs several threads for seconds; a broker passes
   * its view's first load, so that it does not compete with the cold fold of the instance records
   * (ADR 0038, 2026-11-29). close() does not wait for it: it runs what is held, then closes.
   */
  holdRepacksUntil?: PromiseLike<unknown>;
}

/**
 * Log lines with counts while git fetches (a first clone of a large repository is long and was
 * silent): at most one every `intervalMs` by `now`, the first once a fetch has run that long, so
 * the many short fetches of a running broker (polls, confirmations) log no progress.
 */
function fetchProgressLog(
  logger: GitWriterLogger,
  intervalMs: number,
  now: () => number,
): { onFetchStart: () => void; onProgress: (event: FetchProgress) => void } {
  let lastAt = now();
  return {
    onFetchStart: () => void (lastAt = now()),
    onProgress: (event) => {
      const t = now();
      if (t - lastAt < intervalMs) return;
      lastAt = t;
      logger.info({ stage: event.stage, processed: event.processed, total: event.total, percent: event.percent }, `fetching the Git remote: ${event.stage} ${event.processed}/${event.total}`);
    },
  };
}

/**
 * A git command (fetch, push) that prints nothing for this long is killed and counts as
 * unreachable. Never below 10 s, so a small remoteTimeoutMs cannot cut a clone short; a fetch or
 * push that requests wait for is killed at their deadline besides (see Writer.deadline).
 */
const MIN_COMMAND_TIMEOUT_MS = 10_000;

export function createGitWriter(options: GitWriterOptions): GitWriter {
  const problems = validate(options);
  if (problems.length > 0) throw new InvalidArgumentError(`invalid git writer options: ${problems.join("; ")}`);
  const gitdir = path.resolve(options.gitdir);
  const remoteTimeoutMs = options.remoteTimeoutMs ?? 30_000;
  return new Writer({
    store: new ObjectStore(gitdir),
    remote: new Remote({
      gitdir,
      url: options.remoteUrl,
      branch: options.branch,
      env: options.gitEnv,
      timeoutMs: Math.max(remoteTimeoutMs, MIN_COMMAND_TIMEOUT_MS),
      repository: options.repository ?? "the Git remote",
      ...fetchProgressLog(options.logger, options.progressIntervalMs ?? 5000, options.clock ?? (() => performance.now())),
    }),
    branch: options.branch,
    author: { name: options.author.name, email: options.author.email },
    logger: options.logger,
    now: options.now ?? (() => new Date()),
    delay: options.delay ?? ((ms) => sleep(ms)),
    remoteTimeoutMs,
    activityTimeoutMs: options.activityTimeoutMs ?? 5_000,
    maxPushAttempts: options.maxPushAttempts ?? 10,
    metrics: options.metrics ?? noopInstruments.gitwriter,
    storeName: options.store ?? "control",
    repository: options.repository ?? "the Git remote",
    minPushIntervalMs: options.minPushIntervalMs ?? 0,
    ...(options.confirmRejection ? { confirmRejection: options.confirmRejection } : {}),
    ...(options.holdRepacksUntil ? { holdRepacksUntil: options.holdRepacksUntil } : {}),
  });
}

function validate(options: GitWriterOptions): string[] {
  const problems: string[] = [];
  if (typeof options.gitdir !== "string" || options.gitdir === "") problems.push("gitdir is missing");
  if (typeof options.remoteUrl !== "string" || options.remoteUrl === "") problems.push("remoteUrl is missing");
  else if (options.remoteUrl.startsWith("-")) problems.push("remoteUrl must not start with '-'");
  if (typeof options.branch !== "string" || !isBranchName(options.branch)) {
    problems.push(`branch ${JSON.stringify(options.branch)} is not a valid branch name`);
  }
  for (const field of ["name", "email"] as const) {
    const value: unknown = options.author?.[field];
    if (typeof value !== "string" || value.trim() === "" || /[<>\n]/.test(value)) {
      problems.push(`author.${field} must be a non-empty string without '<', '>' or newlines`);
    }
  }
  if (options.remoteTimeoutMs !== undefined && !(options.remoteTimeoutMs >= 0)) {
    problems.push("remoteTimeoutMs must be >= 0");
  }
  if (options.minPushIntervalMs !== undefined && !(Number.isFinite(options.minPushIntervalMs) && options.minPushIntervalMs >= 0)) {
    problems.push("minPushIntervalMs must be a finite number >= 0");
  }
  if (options.store !== undefined && (typeof options.store !== "string" || options.store === "")) {
    problems.push("store must be a non-empty string");
  }
  const attempts = options.maxPushAttempts;
  if (attempts !== undefined && !(Number.isInteger(attempts) && attempts >= 1)) {
    problems.push("maxPushAttempts must be an integer >= 1");
  }
  return problems;
}

/**
 * The rules of `git check-ref-format --branch`, minus the rare ones no config should need. The
 * configuration loader asks it too, so that a bad `git.branch` is a configuration problem (exit 2).
 */
export function isBranchName(name: string): boolean {
  if (name === "" || name === "@" || name.startsWith("-") || name.endsWith("/") || name.endsWith(".")) return false;
  // eslint-disable-next-line no-control-regex -- control characters are what git forbids in a ref
  if (name.includes("..") || name.includes("@{") || /[\x00-\x20\x7f~^:?*[\\]/.test(name)) return false;
  return name.split("/").every((part) => part !== "" && !part.startsWith(".") && !part.endsWith(".lock"));
}
