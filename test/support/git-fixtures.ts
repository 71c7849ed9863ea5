/**
 * Git fixtures for tests: bare remotes, inspection (log, fsck, file at a ref) and a second
 * writer (a human or another replica) pushing behind our back.
 *
 * Every git call here runs with the global and system config ignored, a fixed identity and fixed
 * author/committer dates, so commit ids are stable across runs and machines.
 */
import { execFile, spawn } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { readRef } from "../../src/gitwriter/refs.js";
import { runScopedDir, trackedTempDir } from "./processes.js";

const execFileAsync = promisify(execFile);

/** Author and committer date of every fixture commit. */
export const FIXTURE_DATE = "2024-01-01T00:00:00Z";
export const FIXTURE_IDENTITY = { name: "Fixture", email: "fixture@example.com" } as const;
export const DEFAULT_BRANCH = "main";
/** Author and committer of every fixture commit as git writes them (`git fast-import` reads it so). */
export const FIXTURE_SIGNATURE = `${FIXTURE_IDENTITY.name} <${FIXTURE_IDENTITY.email}> ${Date.parse(FIXTURE_DATE) / 1000} +0000`;

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

/** Runs git with `input` on stdin; resolves with stdout as bytes, rejects with git's stderr in the message. */
export function gitWithInput(args: string[], cwd: string | undefined, input: string | Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn("git", args, { cwd, env: FIXTURE_ENV, stdio: ["pipe", "pipe", "pipe"] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));
    child.stdin.on("error", () => undefined); // git died early: its exit says why
    child.once("error", reject);
    child.once("close", (code, signal) => {
      if (code === 0) resolve(Buffer.concat(stdout));
      else {
        const why = signal === null ? `exited with ${String(code)}` : `was killed by ${signal}`;
        reject(new Error(`git ${args.join(" ")} ${why}: ${Buffer.concat(stderr).toString().trim()}`));
      }
    });
    child.stdin.end(input);
  });
}

/** An object as `git cat-file --batch` prints it. */
export interface CatFileObject {
  oid: string;
  type: "blob" | "tree" | "commit" | "tag";
  data: Buffer;
}

/**
 * Every object `names` resolve to (object ids, `<rev>:<path>` ...), in order, null for a name that
 * resolves to nothing: one `git cat-file --batch` for all of them.
 */
export async function catFileBatch(gitDir: string, names: readonly string[]): Promise<(CatFileObject | null)[]> {
  if (names.length === 0) return [];
  for (const name of names) if (name.includes("\n")) throw new TypeError(`object name with a newline: ${JSON.stringify(name)}`);
  const out = await gitWithInput(["cat-file", "--batch"], gitDir, `${names.join("\n")}\n`);
  const objects: (CatFileObject | null)[] = [];
  let at = 0;
  for (const name of names) {
    const newline = out.indexOf(10, at);
    if (newline === -1) throw new Error(`git cat-file --batch: no answer for ${name}`);
    const header = out.toString("utf8", at, newline);
    // "<oid> SP <type> SP <size> LF <data> LF", or "<name> SP missing LF" (or "ambiguous").
    const match = /^([0-9a-f]{40}) (blob|tree|commit|tag) (\d+)$/.exec(header);
    if (match === null) {
      if (header !== `${name} missing` && header !== `${name} ambiguous`) throw new Error(`git cat-file --batch: unexpected "${header}"`);
      objects.push(null);
      at = newline + 1;
      continue;
    }
    const end = newline + 1 + Number(match[3]);
    objects.push({ oid: match[1]!, type: match[2] as CatFileObject["type"], data: out.subarray(newline + 1, end) });
    at = end + 1;
  }
  if (at !== out.length) throw new Error("git cat-file --batch: more output than objects asked for");
  return objects;
}

/**
 * The remote's branch tip (what is acknowledged), read from the ref files (loose, else packed-refs):
 * tests and the sync doubles ask for it around most requests, a process each time added up.
 */
export async function remoteHead(remoteDir: string, branch = DEFAULT_BRANCH): Promise<string> {
  const tip = await readRef(remoteDir, `refs/heads/${branch}`);
  if (tip === null) throw new Error(`${remoteDir} has no branch ${branch}`);
  return tip;
}

/** A fresh temp directory; the caller may remove it, and it is removed after the test file anyway (processes.ts). */
export function createTempDir(prefix = "gitops-broker-"): Promise<string> {
  return trackedTempDir(prefix);
}

/**
 * Creates the bare repository `<root>/<name>` (branch `main`, push over HTTP enabled, no
 * `git gc --auto` after a push) and,
 * when `files` is given, seeds it with one commit ("initial commit") holding them.
 * Resolves with the repository's absolute path.
 *
 * The first repository with a given seed is made by git; later ones with the same seed (most
 * tests start from one of a few) are copies of it, made without a process, in this file and in
 * the later files of the worker.
 */
export async function createBareRemote(root: string, name: string, files?: Record<string, string>): Promise<string> {
  const bareDir = path.resolve(root, name);
  const seed = files ?? {};
  const isNew = await fs.readdir(bareDir).then(
    (entries) => entries.length === 0,
    (error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return true;
      throw error;
    },
  );
  if (!isNew) {
    // Already there: initialized in place, as `git init` does.
    await initBareRemote(bareDir, seed);
    return bareDir;
  }
  return copyOfTemplate(`seed ${JSON.stringify(Object.entries(seed))}`, (dir) => initBareRemote(path.join(dir, "seed.git"), seed), bareDir);
}

/** Repositories made once per worker by copyOfTemplate, by key. */
const templates = new Map<string, Promise<string>>();

/**
 * `target`, a copy of the repository `make` builds in a fresh directory: made once per worker and
 * `key` (below the run's directory, runScopedDir), copied without a process by later calls, in
 * this file and in the later files of the worker.
 */
export async function copyOfTemplate(key: string, make: (dir: string) => Promise<string>, target: string): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    let template = templates.get(key);
    if (template === undefined) {
      template = runScopedDir("template-").then(make);
      templates.set(key, template);
      template.catch(() => templates.delete(key));
    }
    try {
      await fs.cp(await template, target, { recursive: true, errorOnExist: true, force: false });
      return target;
    } catch (error) {
      // Without the run's directory (a run without the global setup, the benchmarks), the template
      // went with the temporary directories of an earlier test file: made again, once.
      if ((error as NodeJS.ErrnoException).code !== "ENOENT" || attempt > 0) throw error;
      templates.delete(key);
    }
  }
}

async function initBareRemote(bareDir: string, files: Record<string, string>): Promise<string> {
  // No template: nothing here uses the sample hooks, and installPreReceiveHook creates hooks/.
  await git(["init", "--quiet", "--bare", "--template=", `--initial-branch=${DEFAULT_BRANCH}`, bareDir]);
  // What `git config` would write, without a process for it. No `git gc --auto` after each push
  // received (as on a hosted remote, which packs on its own schedule): a process per push saved.
  await fs.appendFile(path.join(bareDir, "config"), "[http]\n\treceivepack = true\n[receive]\n\tautogc = false\n");
  if (Object.keys(files).length > 0) await pushExternalCommit(bareDir, files, "initial commit");
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
  const format = ["%H", "%P", "%an", "%ae", "%aI", "%cn", "%ce", "%cI", "%s", "%B"].join("%x1f") + "%x1e";
  let out: string;
  try {
    out = await git(["log", `--format=${format}`, ref, "--"], bareDir);
  } catch (error) {
    // Asked only when the log failed: a missing ref is an empty history, anything else an error.
    if ((await revParse(bareDir, ref)) === null) return [];
    throw error;
  }
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
  const [content] = await readRemoteFiles(bareDir, ref, [file]);
  return content ?? null;
}

/** readRemoteFile of each of `files`, in one git process. */
export async function readRemoteFiles(bareDir: string, ref: string, files: readonly string[]): Promise<(string | null)[]> {
  const objects = await catFileBatch(bareDir, files.map((file) => `${ref}:${file}`));
  return objects.map((object) => (object?.type === "blob" ? object.data.toString("utf8") : null));
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
 * Simulates someone else pushing: the commit a clone of the repository would make with `files`
 * written (null deletes a path, a directory with all below it) on top of `branch` (created when
 * the repository is empty), with the fixture identity and dates, `message` cleaned up as
 * `git commit -m` does, then pushed to `branch`. Resolves with the new commit id.
 *
 * The commit is built in the bare repository itself by one `git fast-import` (instead of clone,
 * checkout, add, commit, push and their helper processes): same tree, parent, identity, dates and
 * message, so the same commit id as pushExternalCommitViaPush. Like a push without --force it fails
 * when `branch` moved meanwhile to a commit the new one does not contain. Unlike a push it runs no
 * hook of the repository: a test of hooks pushes with pushExternalCommitViaPush. What fast-import
 * cannot build as that clone would (a path git would ignore or convert through .gitignore or
 * .gitattributes, a path through a file or a symlink, a new branch beside existing ones) goes
 * through pushExternalCommitViaPush.
 */
export async function pushExternalCommit(
  bareDir: string,
  files: Record<string, string | null>,
  message: string,
  branch = DEFAULT_BRANCH,
): Promise<string> {
  return (await commitWithFastImport(bareDir, files, message, branch)) ?? pushExternalCommitViaPush(bareDir, files, message, branch);
}

/** `git commit -m`'s clean-up of a message ("whitespace" mode, git's strbuf_stripspace). */
function stripSpace(message: string): string {
  const lines: string[] = [];
  let blank = 0;
  for (const line of message.split("\n")) {
    const trimmed = line.replace(/[ \t\r]+$/, "");
    if (trimmed === "") {
      blank += 1;
      continue;
    }
    if (blank > 0 && lines.length > 0) lines.push("");
    blank = 0;
    lines.push(trimmed);
  }
  return lines.length === 0 ? "" : `${lines.join("\n")}\n`;
}

/**
 * The object id `ref` points to, from the repository's files as the writer reads them (its
 * `readRef`: loose ref, else packed-refs), HEAD followed through its symbolic ref; null when there
 * is no such ref, undefined when it cannot tell (a ref that holds no object id).
 */
async function refTip(gitDir: string, ref: string): Promise<string | null | undefined> {
  if (ref === "HEAD") {
    const head = (await fs.readFile(path.join(gitDir, "HEAD"), "utf8")).trim();
    if (/^[0-9a-f]{40}$/.test(head)) return head;
    const target = /^ref: (refs\/\S+)$/.exec(head)?.[1];
    return target === undefined ? undefined : refTip(gitDir, target);
  }
  try {
    return await readRef(gitDir, ref);
  } catch {
    return undefined;
  }
}

/** A path as fast-import reads it: C-style quoted. */
function quotePath(file: string): string {
  return `"${file.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** Every directory above `file`, outermost first ("" for the root excluded). */
function parentsOf(file: string): string[] {
  const parts = file.split("/");
  return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join("/"));
}

/**
 * The commit pushExternalCommitViaPush would push, built by one `git fast-import` in the bare
 * repository; null (nothing written) where that might differ from what the clone would commit.
 */
async function commitWithFastImport(
  bareDir: string,
  files: Record<string, string | null>,
  message: string,
  branch: string,
): Promise<string | null> {
  const edits = Object.entries(files);
  const cleaned = stripSpace(message);
  const plain = (file: string) =>
    file.split("/").every((part) => part !== "" && part !== "." && part !== ".." && !/^\.git(ignore|attributes|modules)?$/i.test(part)) &&
    !/[\0\n]/.test(file);
  if (cleaned === "" || !edits.every(([file]) => plain(file))) return null;
  // One path inside another: the clone would see the writes and removals in order on its disk.
  const names = edits.map(([file]) => file);
  if (names.some((a) => names.some((b) => b.startsWith(`${a}/`)))) return null;

  const tip = await refTip(bareDir, `refs/heads/${branch}`);
  if (tip === undefined) return null;
  // A new branch beside a HEAD commit: `git checkout --orphan` in the clone starts from HEAD's files.
  if (tip === null && (await refTip(bareDir, "HEAD")) !== null) return null;

  const data = (content: string | Buffer) => {
    const bytes = Buffer.from(content);
    return Buffer.concat([Buffer.from(`data ${bytes.length}\n`), bytes, Buffer.from("\n")]);
  };
  const modes = new Map<string, string>();
  const fastImport = startFastImport(bareDir);
  try {
    if (tip !== null) {
      // What the clone's checkout holds on the paths written: a directory above must be one (or
      // missing), a file written keeps its executable bit, and no .gitignore or .gitattributes
      // above may make `git add` take the file differently.
      const asked = new Set<string>();
      for (const [file, content] of edits) {
        for (const dir of parentsOf(file)) asked.add(dir);
        if (content === null) continue;
        asked.add(file);
        for (const dir of ["", ...parentsOf(file).map((d) => `${d}/`)]) {
          asked.add(`${dir}.gitignore`);
          asked.add(`${dir}.gitattributes`);
        }
      }
      for (const file of asked) fastImport.write(`ls ${tip} ${quotePath(file)}\n`);
      for (const file of asked) {
        const answer = await fastImport.readLine();
        if (answer.startsWith("missing ")) continue;
        const mode = /^(\d{6}) /.exec(answer)?.[1];
        if (mode === undefined) throw new Error(`git fast-import: unexpected answer to ls ${file}: "${answer}"`);
        if (mode === "040000" && !names.includes(file)) continue;
        if ((mode === "100644" || mode === "100755") && names.includes(file)) {
          modes.set(file, mode);
          continue;
        }
        await fastImport.end(); // nothing written
        return null;
      }
    }
    fastImport.write(`commit refs/heads/${branch}\nmark :1\nauthor ${FIXTURE_SIGNATURE}\ncommitter ${FIXTURE_SIGNATURE}\n`);
    fastImport.write(data(cleaned));
    if (tip !== null) fastImport.write(`from ${tip}\n`);
    for (const [file, content] of edits) {
      if (content === null) fastImport.write(`D ${quotePath(file)}\n`);
      else fastImport.write(Buffer.concat([Buffer.from(`M ${modes.get(file) ?? "100644"} inline ${quotePath(file)}\n`), data(content)]));
    }
    fastImport.write("get-mark :1\n");
    const commit = await fastImport.readLine();
    // Updates the branch, or fails when it moved meanwhile to a commit the new one does not contain.
    await fastImport.end();
    return commit;
  } finally {
    await fastImport.end().catch(() => undefined);
  }
}

/**
 * A `git fast-import` in `gitDir`, fed as the caller goes; `readLine` resolves with its next
 * answer (to `ls`, `get-mark`), `end` closes the stream and resolves when git exited 0 (its
 * branch updates done). Small imports stay a pack (no second process loosening it).
 */
function startFastImport(gitDir: string) {
  const args = ["-c", "fastimport.unpackLimit=0", "fast-import", "--quiet"];
  const child = spawn("git", args, { cwd: gitDir, env: FIXTURE_ENV, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  let pending = "";
  const lines: string[] = [];
  const waiting: ((line: string | null) => void)[] = [];
  let closed = false;
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    pending += chunk;
    for (let newline = pending.indexOf("\n"); newline !== -1; newline = pending.indexOf("\n")) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      const waiter = waiting.shift();
      if (waiter === undefined) lines.push(line);
      else waiter(line);
    }
  });
  child.stdin.on("error", () => undefined); // git died: `exited` says why
  const exited = new Promise<void>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => {
      closed = true;
      for (const waiter of waiting.splice(0)) waiter(null);
      if (code === 0) resolve();
      else reject(new Error(`git ${args.join(" ")} exited with ${String(code)}: ${stderr.trim()}`));
    });
  });
  exited.catch(() => undefined); // awaited through end() or readLine()
  return {
    write: (chunk: string | Buffer) => void child.stdin.write(chunk),
    readLine: (): Promise<string> => {
      const line = lines.shift();
      if (line !== undefined) return Promise.resolve(line);
      const noAnswer = () => exited.then(() => Promise.reject(new Error("git fast-import ended without an answer")));
      if (closed) return noAnswer();
      return new Promise((resolve, reject) => {
        waiting.push((next) => {
          if (next === null) noAnswer().catch(reject);
          else resolve(next);
        });
      });
    },
    end: (): Promise<void> => {
      child.stdin.end();
      return exited;
    },
  };
}

/**
 * pushExternalCommit the way a person does it: clones the repository into a temp dir, writes
 * `files` (null deletes a path), commits with the fixture identity and pushes to `branch`
 * (created when the repository is empty), running the repository's hooks. Resolves with the new
 * commit id.
 */
export async function pushExternalCommitViaPush(
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
