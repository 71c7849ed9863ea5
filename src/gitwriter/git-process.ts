import { spawn } from "node:child_process";

/**
 * One git command that talks to a remote (fetch, push, ls-remote), bounded twice: it is killed
 * when it prints nothing for `silenceMs` (a stalled transfer), and when `deadline` passes (the
 * bound of the requests waiting for it, ADR 0005's addendum of 2026-11-29). It runs in a process
 * group of its own and the whole group is killed: `git push` over HTTP runs `git-remote-http`
 * and `git send-pack` as children, and a helper left alive could still deliver a pack after the
 * broker answered.
 */
export interface GitRunOptions {
  gitdir: string;
  env: Record<string, string>;
  /** Killed after this long without output on stdout or stderr. */
  silenceMs: number;
  /** performance.now() after which it is killed; undefined: no deadline. */
  deadline?: number | undefined;
  /** Each chunk of stderr as it arrives (fetch progress). */
  onStderr?: (chunk: Buffer) => void;
}

export interface GitRun {
  /** The exit code; null when it was killed. */
  code: number | null;
  stdout: string;
  stderr: string;
  /** Why it was killed: it said nothing for `silenceMs`, or the deadline passed. */
  killed?: "silence" | "deadline";
}

export function runGit(args: readonly string[], options: GitRunOptions): Promise<GitRun> {
  return new Promise((resolve) => {
    const child = spawn("git", args, { env: { ...options.env, GIT_DIR: options.gitdir }, stdio: ["ignore", "pipe", "pipe"], detached: true });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let killed: GitRun["killed"];
    const kill = (why: NonNullable<GitRun["killed"]>) => {
      if (killed !== undefined || child.pid === undefined) return;
      killed = why;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // The group is gone already.
      }
    };
    let silence = setTimeout(() => kill("silence"), options.silenceMs);
    const heard = () => {
      clearTimeout(silence);
      silence = setTimeout(() => kill("silence"), options.silenceMs);
    };
    const deadline = options.deadline === undefined ? undefined : setTimeout(() => kill("deadline"), Math.max(0, options.deadline - performance.now()));
    child.stdout.on("data", (chunk: Buffer) => {
      stdout.push(chunk);
      heard();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr.push(chunk);
      heard();
      options.onStderr?.(chunk);
    });
    const done = (code: number | null, error?: Error) => {
      clearTimeout(silence);
      if (deadline !== undefined) clearTimeout(deadline);
      const err = Buffer.concat(stderr).toString("utf8") + (error ? `\n${error.message}` : "");
      resolve({ code: killed ? null : code, stdout: Buffer.concat(stdout).toString("utf8"), stderr: err, ...(killed ? { killed } : {}) });
    };
    child.once("error", (error) => done(null, error));
    child.once("close", (code) => done(code));
  });
}
