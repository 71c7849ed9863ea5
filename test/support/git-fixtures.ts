/**
 * Git fixtures for tests: bare remotes, inspection (log, fsck, file at a ref) and a second
 * writer (a human or another replica) pushing behind our back.
 *
 * Every git call here runs with the global and system config ignored, a fixed identity and fixed
 * author/committer dates, so commit ids are stable across runs and machines.
 */
import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { trackedTempDir } from "./processes.js";

const execFileAsync = promisify(execFile);

/** Author and committer date of every fixture commit. */
export const FIXTURE_DATE = "2024-01-01T00:00:00Z";
export const FIXTURE_IDENTITY = { name: "Fixture", email: "fixture@example.com" } as const;
export const DEFAULT_BRANCH = "main";

const FIXTURE_ENV: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  HOME: os.tmpdir(),
  LC_ALL: "C",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
  GIT_AUTHOR_NAME: FIXTURE_IDENTITY.name,
  GIT_AUTHOR_EMAIL: FIXTURE_IDENTITY.email,
  GIT_AUTHOR_DATE: FIXTURE_DATE,
  GIT_COMMITTER_NAME: FIXTURE_IDENTITY.name,
  GIT_COMMITTER_EMAIL: FIXTURE_IDENTITY.email,
  GIT_COMMITTER_DATE: FIXTURE_DATE,
};

/** Runs git with the fixture environment; resolves with stdout, rejects with git's stderr in the message. */
export async function git(args: string[], cwd?: string): Promise<string> {
  try {
    const { stdout } = await execFileAsync("git", args, { cwd, env: FIXTURE_ENV, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? "";
    throw new Error(`git ${args.join(" ")} failed: ${stderr.trim()}`, { cause: error });
  }
}

/** A fresh temp directory; the caller may remove it, and it is removed after the test file anyway (processes.ts). */
export function createTempDir(prefix = "gitops-broker-"): Promise<string> {
  return trackedTempDir(prefix);
}

/**
 * Creates the bare repository `<root>/<name>` (branch `main`, push over HTTP enabled) and,
 * when `files` is given, seeds it with one commit ("initial commit") holding them.
 * Resolves with the repository's absolute path.
 */
export async function createBareRemote(root: string, name: string, files?: Record<string, string>): Promise<string> {
  const bareDir = path.resolve(root, name);
  await git(["init", "--quiet", "--bare", `--initial-branch=${DEFAULT_BRANCH}`, bareDir]);
  await git(["config", "http.receivepack", "true"], bareDir);
  if (files !== undefined && Object.keys(files).length > 0) {
    await pushExternalCommit(bareDir, files, "initial commit");
  }
  return bareDir;
}

export interface LogEntry {
  oid: string;
  parents: string[];
  author: { name: string; email: string; date: string };
  committer: { name: string; email: string; date: string };
  subject: string;
  /** The whole message (subject, body, trailers), as git stores it. */
  message: string;
}

/** History of `ref`, newest first; [] when the ref does not exist. */
export async function gitLog(bareDir: string, ref = DEFAULT_BRANCH): Promise<LogEntry[]> {
  if ((await revParse(bareDir, ref)) === null) return [];
  const format = ["%H", "%P", "%an", "%ae", "%aI", "%cn", "%ce", "%cI", "%s", "%B"].join("%x1f") + "%x1e";
  const out = await git(["log", `--format=${format}`, ref, "--"], bareDir);
  return out
    .split("\x1e")
    .map((record) => record.replace(/^\n/, ""))
    .filter((record) => record.length > 0)
    .map((record) => {
      const [oid, parents, an, ae, ad, cn, ce, cd, subject, message] = record.split("\x1f");
      return {
        oid: oid ?? "",
        parents: parents ? parents.split(" ") : [],
        author: { name: an ?? "", email: ae ?? "", date: ad ?? "" },
        committer: { name: cn ?? "", email: ce ?? "", date: cd ?? "" },
        subject: subject ?? "",
        message: (message ?? "").replace(/\n+$/, ""),
      };
    });
}

/** `git fsck --strict --full` of the repository; throws with fsck's report when it finds anything. */
export async function fsck(bareDir: string): Promise<void> {
  let output: string;
  try {
    const { stdout, stderr } = await execFileAsync(
      "git",
      ["fsck", "--strict", "--full", "--no-dangling", "--no-progress"],
      { cwd: bareDir, env: FIXTURE_ENV },
    );
    // "notice:" lines are not problems (e.g. HEAD pointing to a branch not created yet).
    output = (stdout + stderr)
      .split("\n")
      .filter((line) => line.trim() !== "" && !line.startsWith("notice:"))
      .join("\n");
  } catch (error) {
    const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
    throw new Error(`git fsck failed in ${bareDir}:\n${stdout}${stderr}`, { cause: error });
  }
  if (output !== "") throw new Error(`git fsck reported problems in ${bareDir}:\n${output}`);
}

/** Content of `file` at `ref` (UTF-8), or null when the ref or the file does not exist. */
export async function readRemoteFile(bareDir: string, ref: string, file: string): Promise<string | null> {
  const oid = await revParse(bareDir, `${ref}:${file}`);
  if (oid === null) return null;
  if ((await git(["cat-file", "-t", oid], bareDir)).trim() !== "blob") return null;
  return git(["cat-file", "blob", oid], bareDir);
}

/** Object id `rev` resolves to in the repository, or null. */
export async function revParse(gitDir: string, rev: string): Promise<string | null> {
  try {
    const { stdout } = await execFileAsync("git", ["rev-parse", "--verify", "--quiet", rev], {
      cwd: gitDir,
      env: FIXTURE_ENV,
    });
    return stdout.trim();
  } catch {
    // rev-parse --verify --quiet exits 1 without output when the revision does not exist.
    return null;
  }
}

/**
 * Simulates someone else pushing: clones the repository into a temp dir, writes `files`
 * (null deletes a path), commits with the fixture identity and pushes to `branch`
 * (created when the repository is empty). Resolves with the new commit id.
 */
export async function pushExternalCommit(
  bareDir: string,
  files: Record<string, string | null>,
  message: string,
  branch = DEFAULT_BRANCH,
): Promise<string> {
  const tmp = await createTempDir("gitops-broker-external-");
  try {
    const work = path.join(tmp, "work");
    await git(["clone", "--quiet", "--no-checkout", bareDir, work]);
    const exists = (await revParse(work, `refs/remotes/origin/${branch}`)) !== null;
    const checkout = exists ? ["-B", branch, `origin/${branch}`] : ["--orphan", branch];
    await git(["checkout", "--quiet", ...checkout], work);
    for (const [file, content] of Object.entries(files)) {
      const target = path.join(work, file);
      if (content === null) {
        await fs.rm(target, { recursive: true, force: true });
      } else {
        await fs.mkdir(path.dirname(target), { recursive: true });
        await fs.writeFile(target, content);
      }
    }
    await git(["add", "--all"], work);
    await git(["commit", "--quiet", "--allow-empty", "-m", message], work);
    await git(["push", "--quiet", "origin", `HEAD:refs/heads/${branch}`], work);
    return (await git(["rev-parse", "HEAD"], work)).trim();
  } finally {
    await fs.rm(tmp, { recursive: true, force: true });
  }
}

/**
 * Installs `hooks/pre-receive` in the bare repository. `script` is a shell script (a `#!/bin/sh`
 * line is added when it has none); what it prints reaches the pusher as `remote:` lines, and a
 * non-zero exit refuses the push.
 */
export async function installPreReceiveHook(bareDir: string, script: string): Promise<void> {
  const hook = path.join(bareDir, "hooks", "pre-receive");
  await fs.mkdir(path.dirname(hook), { recursive: true });
  await fs.writeFile(hook, script.startsWith("#!") ? script : `#!/bin/sh\n${script}`, { mode: 0o755 });
  await fs.chmod(hook, 0o755);
}
