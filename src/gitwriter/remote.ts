import { promises as fsp } from "node:fs";
import path from "node:path";
import { simpleGit, type SimpleGit } from "simple-git";
import { GitRemoteError } from "../errors/index.js";
import { runGit, type GitRun } from "./git-process.js";

/** A commit a history rewrite erased from the branch. */
export interface LostCommit {
  commit: string;
  subject: string;
  /** Its Instance-Id trailers: the instances whose operation it carried. */
  instanceIds: string[];
}

export interface RemoteOptions {
  gitdir: string;
  url: string;
  branch: string;
  /** Extra environment for git (GIT_SSH_COMMAND, GIT_ASKPASS, GIT_CONFIG_COUNT/KEY/VALUE ...). */
  env: Record<string, string> | undefined;
  /** A git command that prints nothing for this long is killed (the remote counts as unreachable). */
  timeoutMs: number;
  /** The repository's name in errors ("the control repository", "store eu"). */
  repository?: string;
  /** Progress of a fetch (a first clone of a large repository takes long), as git reports it. */
  onProgress?: (event: FetchProgress) => void;
  /** A fetch starts (its progress reports follow). */
  onFetchStart?: () => void;
}

export interface FetchProgress {
  /** git's stage: counting, compressing, receiving, resolving ... */
  stage: string;
  processed: number;
  total: number;
  percent: number;
}

/**
 * The git CLI (through simple-git) for everything that talks to the remote, so every transport
 * and credential mechanism git supports works. Failures become GitRemoteError.
 */
export class Remote {
  private readonly options: RemoteOptions;
  private git: SimpleGit | undefined;
  /** performance.now() when the command in flight started (fetch and push never overlap). */
  private since: number | undefined;

  constructor(options: RemoteOptions) {
    this.options = options;
  }

  /** How long the command in flight has waited for the remote so far; 0 when none is. */
  get waitingMs(): number {
    return this.since === undefined ? 0 : performance.now() - this.since;
  }

  private async timed<T>(command: () => Promise<T>): Promise<T> {
    this.since = performance.now();
    try {
      return await command();
    } finally {
      this.since = undefined;
    }
  }

  /** Creates the bare repository if it is missing and points `origin` at the remote URL. */
  async init(): Promise<void> {
    const { gitdir, url, branch } = this.options;
    await fsp.mkdir(gitdir, { recursive: true });
    const git = this.client();
    if (!(await exists(path.join(gitdir, "HEAD")))) {
      await git.raw(["init", "--bare", `--initial-branch=${branch}`]);
    }
    await git.raw(["config", "remote.origin.url", url]);
    // A fetch killed with the process leaves its lock behind, and git would refuse every later
    // fetch. The writer owns this repository, so no live git holds it.
    await fsp.rm(path.join(gitdir, "refs", "remotes", "origin", `${branch}.lock`), { force: true });
  }

  /**
   * Fetches the branch into `refs/remotes/origin/<branch>`. Resolves false when the remote has
   * no such branch (an empty repository): the first push will create it. `deadline`
   * (performance.now()): the fetch is killed then, and fails as unreachable.
   */
  fetch(deadline?: number): Promise<boolean> {
    return this.timed(() => this.doFetch(deadline));
  }

  private async doFetch(deadline: number | undefined): Promise<boolean> {
    const { branch } = this.options;
    // --verbose and --progress keep output flowing during a long transfer, so only a stall hits
    // the silence timeout. --no-auto-maintenance: the object store compacts its own packs
    // (compact()); git's `maintenance run --auto` after a fetch would be one more process per
    // fetch, and could repack under the store's open packs.
    this.options.onFetchStart?.();
    const run = await this.run(
      ["fetch", "--verbose", "--progress", "--no-auto-maintenance", "--no-tags", "--no-write-fetch-head", "origin", `+refs/heads/${branch}:refs/remotes/origin/${branch}`],
      { deadline, onStderr: this.progressParser() },
    );
    if (run.code === 0) return true;
    const output = this.outputOf(run);
    if (/couldn't find remote ref/.test(output)) return false;
    throw new GitRemoteError("unreachable", summarize(output), { repository: this.options.repository, timedOut: run.killed !== undefined });
  }

  /**
   * Commits reachable from `previous` but not from `tip` (newest first, at most `max`): what a
   * force-push replacing `previous` by `tip` erased. Empty when `tip` descends from `previous`.
   * Reads the local repository only.
   */
  async lostCommits(previous: string, tip: string, max = 1000): Promise<LostCommit[]> {
    const out = await this.client().raw([
      "log",
      `--max-count=${max}`,
      "--format=%H%x1f%s%x1f%(trailers:key=Instance-Id,valueonly,separator=%x2c)%x1e",
      previous,
      `^${tip}`,
      "--",
    ]);
    return out
      .split("\x1e")
      .map((record) => record.trim())
      .filter((record) => record !== "")
      .map((record) => {
        const [commit = "", subject = "", instances = ""] = record.split("\x1f");
        return { commit, subject, instanceIds: instances.split(",").map((s) => s.trim()).filter((s) => s !== "") };
      });
  }

  /**
   * Pushes `commit` to the branch (fast-forward only). `deadline` (performance.now()): the push
   * is killed then. A push that fails without the remote's verdict after sending its ref update
   * (and pack) is `inDoubt`: the remote may have taken it, and may still apply it.
   */
  push(commit: string, deadline?: number): Promise<void> {
    return this.timed(() => this.doPush(commit, deadline));
  }

  private async doPush(commit: string, deadline: number | undefined): Promise<void> {
    const trace = path.join(this.options.gitdir, "push-trace");
    await fsp.writeFile(trace, "");
    // No --progress: the server would mix its progress into the `remote:` lines of a refusal.
    // pack.window=0: send the new objects as they are in the local pack, without searching
    // deltas between them; that search took more CPU than the rest of a 200-commit push.
    // GIT_TRACE_PACKET: whether the ref update was sent (see pushInDoubt).
    const refspec = `${commit}:refs/heads/${this.options.branch}`;
    const run = await this.run(["-c", "pack.window=0", "push", "--porcelain", "--no-verify", "origin", refspec], { deadline, trace });
    if (run.code === 0) return;
    const failure = classifyPushFailure(this.outputOf(run), this.options.repository);
    if (failure.kind !== "unreachable") throw failure;
    const inDoubt = pushInDoubt(await fsp.readFile(trace, "utf8").catch(() => ""));
    throw new GitRemoteError("unreachable", failure.remoteMessage, { repository: this.options.repository, inDoubt, timedOut: run.killed !== undefined });
  }

  private run(args: string[], extra: { deadline: number | undefined; trace?: string; onStderr?: ((chunk: Buffer) => void) | undefined }): Promise<GitRun> {
    const { gitdir, env, timeoutMs } = this.options;
    return runGit(args, {
      gitdir,
      // Never wait for a password on a terminal; English messages, which classifyPushFailure reads.
      env: { ...stringEnv(process.env), ...env, GIT_TERMINAL_PROMPT: "0", LC_ALL: "C", ...(extra.trace ? { GIT_TRACE_PACKET: extra.trace } : {}) },
      silenceMs: timeoutMs,
      deadline: extra.deadline,
      ...(extra.onStderr ? { onStderr: extra.onStderr } : {}),
    });
  }

  private outputOf(run: GitRun): string {
    if (run.killed === "silence") return `no answer from the remote within ${this.options.timeoutMs / 1000} s`;
    if (run.killed === "deadline") return "no answer from the remote within the time the waiting requests have (git.pushTimeoutSeconds)";
    return `${run.stdout}\n${run.stderr}`;
  }

  /**
   * git rewrites its progress line with \r; one chunk of stderr may hold many updates (or the
   * end of one and the start of the next): each complete one is reported.
   */
  private progressParser(): ((chunk: Buffer) => void) | undefined {
    const onProgress = this.options.onProgress;
    if (!onProgress) return undefined;
    let rest = "";
    return (chunk) => {
      const parts = (rest + chunk.toString("utf8")).split(/[\r\n]/);
      rest = parts.pop() ?? "";
      for (const part of parts) {
        const m = /^(?:remote: )?([A-Za-z ]+?):\s+(\d+)% \((\d+)\/(\d+)\)/.exec(part);
        if (m) onProgress({ stage: m[1]!.toLowerCase().split(" ", 1)[0]!, percent: Number(m[2]), processed: Number(m[3]), total: Number(m[4]) });
      }
    };
  }

  private client(): SimpleGit {
    this.git ??= this.build();
    return this.git;
  }

  private build(): SimpleGit {
    const { gitdir, env, timeoutMs } = this.options;
    return simpleGit({
      baseDir: gitdir,
      timeout: { block: timeoutMs },
      // A failure is any non-zero exit; the message keeps stdout too (push --porcelain reports there).
      errors: (error, result) =>
        error ??
        (result.exitCode === 0
          ? undefined
          : Buffer.concat([...result.stdOut, ...result.stdErr, Buffer.from(`\ngit exited with code ${result.exitCode}`)])),
      // The environment is the operator's (process env, gitEnv option), not user input.
      unsafe: {
        allowUnsafeSshCommand: true,
        allowUnsafeAskPass: true,
        allowUnsafeConfigEnvCount: true,
        allowUnsafeConfigPaths: true,
        allowUnsafeEditor: true,
        allowUnsafePager: true,
        allowUnsafeGitProxy: true,
        allowUnsafeTemplateDir: true,
        allowUnsafeDiffExternal: true,
      },
    }).env({
      ...stringEnv(process.env),
      ...env,
      GIT_DIR: gitdir,
      // Never wait for a password on a terminal; English messages, which classifyPushFailure reads.
      GIT_TERMINAL_PROMPT: "0",
      LC_ALL: "C",
    });
  }
}

/**
 * Reads `git push --porcelain` output: `[rejected]` is a non-fast-forward (someone else pushed),
 * `[remote rejected]` a refusal by the server (a hook, or a lost race for the ref lock, which is a
 * rejection like any other); no status line means git never got an answer.
 */
function classifyPushFailure(output: string, repository: string | undefined): GitRemoteError {
  const status = /^!\t[^\t]*\t\[(rejected|remote rejected)\] \((.*)\)\s*$/m.exec(output);
  if (status === null) return new GitRemoteError("unreachable", summarize(output), { repository });
  const [, verdict = "", reason = ""] = status;
  if (verdict === "rejected") return new GitRemoteError("rejected", reason, { repository });
  const remoteLines = output
    .split("\n")
    .filter((line) => line.startsWith("remote: "))
    // eslint-disable-next-line no-control-regex -- git's sideband ends remote lines with ESC [K
    .map((line) => redact(line.slice("remote: ".length).replace(/\x1b\[K/g, "").trimEnd()))
    .filter((line) => line !== "");
  const said = remoteLines.length > 0 ? remoteLines.join("\n") : reason;
  const lostRace = /lock|failed to update ref|incorrect old value/i.test(reason);
  return new GitRemoteError(lostRace ? "rejected" : "hook", said, { repository });
}

/**
 * Whether a push that got no verdict may have reached the remote: git's packet trace shows the
 * ref update command (`<old> <new> <ref>`, sent by `push>` over ssh and local transports, `git>`
 * to the HTTP helper), written only once the remote's ref advertisement was read, just before
 * the pack. A push that never got that far (no connection, a remote that hangs before advertising
 * its refs, an HTTP error on the advertisement) cannot change the branch.
 */
export function pushInDoubt(trace: string): boolean {
  return /packet:\s+(?:push|git)> [0-9a-f]{40} [0-9a-f]{40} refs\//.test(trace);
}

/** The `fatal:` lines of git's output (all of it when there are none), credentials removed. */
function summarize(output: string): string {
  const fatal = output
    .split("\n")
    .filter((line) => line.startsWith("fatal: "))
    .map((line) => line.slice("fatal: ".length));
  return redact(fatal.length > 0 ? fatal.join("\n") : output.trim());
}

/** Hides `user:password@` in URLs git echoes back. */
function redact(text: string): string {
  return text.replace(/\/\/[^/@\s]+@/g, "//***@");
}

function stringEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

async function exists(file: string): Promise<boolean> {
  try {
    await fsp.access(file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}
