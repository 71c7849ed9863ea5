import { spawn } from "node:child_process";
import { GitRepositoryError } from "../errors/index.js";
import { parseTrailers } from "./commit-message.js";
import type { CommitInfo, LogOptions, WalkEntry } from "./types.js";

/**
 * Whole-subtree reads through the git CLI, for folds over every file of a large directory (the
 * instance summary at start-up: 100k records). One `git ls-tree -r -t` and one
 * `git cat-file --batch` read 100k records in ~3 s; object by object through the pack reader it
 * took ~16 s.
 */

function git(gitdir: string, args: string[]) {
  return spawn("git", args, {
    env: { ...process.env, GIT_DIR: gitdir, LC_ALL: "C" },
    stdio: ["pipe", "pipe", "pipe"],
  });
}

/** Resolves when the process exits 0; rejects with git's message otherwise. */
function finished(child: ReturnType<typeof git>, what: string): Promise<void> {
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => {
      if (code === 0) resolve();
      else reject(new GitRepositoryError(`${what} exited with ${String(code)}: ${stderr.trim()}`));
    });
  });
}

/**
 * Entries below tree `treeOid` that `keep` accepts, recursively, parents before children
 * (`git ls-tree -r -t -z`, parsed as it streams).
 */
export async function lsTreeRecursive(
  gitdir: string,
  treeOid: string,
  keep: (path: string, type: "blob" | "tree") => boolean = () => true,
): Promise<WalkEntry[]> {
  const child = git(gitdir, ["ls-tree", "-r", "-t", "-z", treeOid]);
  const done = finished(child, `git ls-tree ${treeOid}`);
  child.stdin.end();
  const entries: WalkEntry[] = [];
  let buffered: Buffer = Buffer.alloc(0);
  child.stdout.on("data", (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    let at = 0;
    // "<mode> SP <type> SP <oid> TAB <path> NUL". Each field is its own string (toString on the
    // buffer), not a slice of a big one: callers keep oids as memo keys.
    for (let nul = buffered.indexOf(0, at); nul !== -1; at = nul + 1, nul = buffered.indexOf(0, at)) {
      const tab = buffered.indexOf(9, at);
      const [, type, oid] = buffered.toString("latin1", at, tab).split(" ");
      if (type !== "blob" && type !== "tree") continue;
      const path = buffered.toString("utf8", tab + 1, nul);
      if (keep(path, type)) entries.push({ path, type, oid: oid! });
    }
    buffered = buffered.subarray(at);
  });
  await done;
  return entries;
}

/** Calls `each` with the content of every blob of `oids`, in order (`git cat-file --batch --buffer`, as it streams). */
export async function catFileBatch(
  gitdir: string,
  oids: readonly string[],
  each: (content: Uint8Array, index: number) => void,
): Promise<void> {
  const child = git(gitdir, ["cat-file", "--batch", "--buffer"]);
  const done = finished(child, "git cat-file --batch");
  let index = 0;
  let buffered: Buffer = Buffer.alloc(0);
  let failure: { error: unknown } | undefined;
  child.stdout.on("data", (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    let at = 0;
    for (;;) {
      const newline = buffered.indexOf(10, at);
      if (newline === -1) break;
      // "<oid> SP <type> SP <size> LF <content> LF", or "<oid> missing LF"
      const [oid, type, size] = buffered.toString("latin1", at, newline).split(" ");
      if (type !== "blob") {
        failure ??= { error: new GitRepositoryError(`object ${oid} is ${type === "missing" ? "missing" : `a ${type}, not a blob`}`) };
        at = newline + 1;
        continue;
      }
      const end = newline + 1 + Number(size);
      if (end + 1 > buffered.length) break;
      try {
        if (failure === undefined) each(buffered.subarray(newline + 1, end), index);
      } catch (error) {
        failure = { error };
      }
      index++;
      at = end + 1;
    }
    buffered = buffered.subarray(at);
  });
  child.stdin.on("error", () => undefined); // git died: `done` rejects with its message
  child.stdin.end(oids.length === 0 ? "" : `${oids.join("\n")}\n`);
  await done.finally(() => child.stdout.removeAllListeners("data"));
  if (failure !== undefined) throw failure.error;
  if (index !== oids.length) throw new GitRepositoryError(`git cat-file --batch returned ${index} of ${oids.length} objects`);
}

const LOG_FIELDS = ["%H", "%an", "%ae", "%aI", "%s", "%(trailers:only,unfold)"];

/** `git log <from> -- <paths>`, newest first, each commit with its trailers parsed. */
export async function gitLog(gitdir: string, from: string, paths: readonly string[], options: LogOptions = {}): Promise<CommitInfo[]> {
  const flags = [...(options.firstParent ? ["--first-parent"] : []), ...(options.max !== undefined ? [`--max-count=${options.max}`] : [])];
  const child = git(gitdir, ["log", `--format=${LOG_FIELDS.join("%x1f")}%x1e`, ...flags, from, "--", ...paths]);
  const done = finished(child, `git log ${from}`);
  child.stdin.end();
  const chunks: Buffer[] = [];
  child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
  await done;
  return Buffer.concat(chunks)
    .toString("utf8")
    .split("\x1e")
    .map((r) => r.replace(/^\n/, ""))
    .filter((r) => r !== "")
    .map((record) => {
      const [commit = "", name = "", email = "", authorDate = "", subject = "", trailers = ""] = record.split("\x1f");
      return { commit, authorDate, author: { name, email }, subject, trailers: parseTrailers(trailers) };
    });
}
