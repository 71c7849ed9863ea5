/**
 * Raw object access to a (bare) repository through `git cat-file --batch`: what a sync agent
 * reads, and what a history scan needs (every blob of every commit).
 */
import { spawn } from "node:child_process";
import { git } from "./git-fixtures.js";

export interface GitObject {
  oid: string;
  type: string;
  content: Buffer;
}

/** Objects by name (`<oid>` or `<commit>:<path>`), in order; null for a name git does not know. */
export async function catFileBatch(gitDir: string, names: string[]): Promise<Array<GitObject | null>> {
  if (names.length === 0) return [];
  const child = spawn("git", ["cat-file", "--batch"], { cwd: gitDir, stdio: ["pipe", "pipe", "pipe"] });
  const chunks: Buffer[] = [];
  const errors: Buffer[] = [];
  child.stdout.on("data", (c: Buffer) => chunks.push(c));
  child.stderr.on("data", (c: Buffer) => errors.push(c));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", resolve);
  });
  child.stdin.end(`${names.join("\n")}\n`);
  const code = await exited;
  if (code !== 0) throw new Error(`git cat-file --batch failed (${code}): ${Buffer.concat(errors).toString("utf8")}`);

  const out = Buffer.concat(chunks);
  const objects: Array<GitObject | null> = [];
  let at = 0;
  for (let i = 0; i < names.length; i++) {
    const eol = out.indexOf(10, at);
    const header = out.subarray(at, eol).toString("utf8");
    at = eol + 1;
    if (header.endsWith(" missing") || header.endsWith(" ambiguous")) {
      objects.push(null);
      continue;
    }
    const [oid, type, size] = header.split(" ");
    const length = Number(size);
    objects.push({ oid: oid!, type: type!, content: out.subarray(at, at + length) });
    at += length + 1;
  }
  return objects;
}

/** Every blob reachable from any ref, over the whole history (`git rev-list --objects --all`). */
export async function allBlobs(gitDir: string): Promise<GitObject[]> {
  const listed = await git(["rev-list", "--objects", "--all"], gitDir);
  const oids = listed.split("\n").filter(Boolean).map((line) => line.slice(0, 40));
  const objects = await catFileBatch(gitDir, oids);
  return objects.filter((o): o is GitObject => o !== null && o.type === "blob");
}

/** Files under `dir` at `commit`: path -> content. */
export async function filesAt(gitDir: string, commit: string, dir: string): Promise<Map<string, string>> {
  const listed = await git(["ls-tree", "-r", "--name-only", commit, "--", `${dir}/`], gitDir);
  const paths = listed.split("\n").filter(Boolean);
  const objects = await catFileBatch(gitDir, paths.map((p) => `${commit}:${p}`));
  return new Map(paths.map((p, i) => [p, objects[i]?.content.toString("utf8") ?? ""]));
}
