import { promises as fsp } from "node:fs";
import path from "node:path";
import { GitPluginError, simpleGit, type SimpleGit } from "simple-git";
import { GitRemoteError } from "../errors/index.js";

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
  private fetchGit: SimpleGit | undefined;

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
   * no such branch (an empty repository): the first push will create it.
   */
  fetch(): Promise<boolean> {
    return this.timed(() => this.doFetch());
  }

  private async doFetch(): Promise<boolean> {
    const { branch } = this.options;
    try {
      // --verbose: simple-git waits 50 ms longer for a command that printed nothing.
      // --progress: keeps output flowing during a long transfer, so only a stall hits the timeout.
      // Progress only for fetch: push must not print progress into the `remote:` lines it reads.
      // --no-auto-maintenance: the object store compacts its own packs (compact()); git's
      // `maintenance run --auto` after a fetch would be one more process per fetch, and could
      // repack under the store's open packs.
      await this.fetchClient().raw([
        "fetch",
        "--verbose",
        "--progress",
        "--no-auto-maintenance",
        "--no-tags",
        "--no-write-fetch-head",
        "origin",
        `+refs/heads/${branch}:refs/remotes/origin/${branch}`,
      ]);
      return true;
    } catch (error) {
      const output = outputOf(error, this.options.timeoutMs);
      if (/couldn't find remote ref/.test(output)) return false;
      throw new GitRemoteError("unreachable", summarize(output), { cause: error });
    }
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

  /** Pushes `commit` to the branch (fast-forward only). */
  push(commit: string): Promise<void> {
    return this.timed(() => this.doPush(commit));
  }

  private async doPush(commit: string): Promise<void> {
    try {
      // No --progress: the server would mix its progress into the `remote:` lines of a refusal.
      // pack.window=0: send the new objects as they are in the local pack, without searching
      // deltas between them; that search took more CPU than the rest of a 200-commit push.
      const refspec = `${commit}:refs/heads/${this.options.branch}`;
      await this.client().raw(["-c", "pack.window=0", "push", "--porcelain", "--no-verify", "origin", refspec]);
    } catch (error) {
      throw classifyPushFailure(outputOf(error, this.options.timeoutMs), error);
    }
  }

  private fetchClient(): SimpleGit {
    const onProgress = this.options.onProgress;
    if (!onProgress) return this.client();
    // git rewrites its progress line with \r; one chunk of stderr may hold many updates (or the
    // end of one and the start of the next): each complete one is reported.
    this.fetchGit ??= this.build().outputHandler((_command, _stdout, stderr) => {
      this.options.onFetchStart?.();
      let rest = "";
      stderr.on("data", (chunk: Buffer) => {
        const parts = (rest + chunk.toString("utf8")).split(/[\r\n]/);
        rest = parts.pop() ?? "";
        for (const part of parts) {
          const m = /^(?:remote: )?([A-Za-z ]+?):\s+(\d+)% \((\d+)\/(\d+)\)/.exec(part);
          if (m) onProgress({ stage: m[1]!.toLowerCase().split(" ", 1)[0]!, percent: Number(m[2]), processed: Number(m[3]), total: Number(m[4]) });
        }
      });
    });
    return this.fetchGit;
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
function classifyPushFailure(output: string, cause: unknown): GitRemoteError {
  const status = /^!\t[^\t]*\t\[(rejected|remote rejected)\] \((.*)\)\s*$/m.exec(output);
  if (status === null) return new GitRemoteError("unreachable", summarize(output), { cause });
  const [, verdict = "", reason = ""] = status;
  if (verdict === "rejected") return new GitRemoteError("rejected", reason, { cause });
  const remoteLines = output
    .split("\n")
    .filter((line) => line.startsWith("remote: "))
    // eslint-disable-next-line no-control-regex -- git's sideband ends remote lines with ESC [K
    .map((line) => redact(line.slice("remote: ".length).replace(/\x1b\[K/g, "").trimEnd()))
    .filter((line) => line !== "");
  const said = remoteLines.length > 0 ? remoteLines.join("\n") : reason;
  const lostRace = /lock|failed to update ref|incorrect old value/i.test(reason);
  return new GitRemoteError(lostRace ? "rejected" : "hook", said, { cause });
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

function outputOf(error: unknown, timeoutMs: number): string {
  if (error instanceof GitPluginError && error.plugin === "timeout") {
    return `no answer from the remote within ${timeoutMs} ms`;
  }
  return error instanceof Error ? error.message : String(error);
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
