/**
 * Reads of a (bare) repository through git-fixtures' `catFileBatch` (one `git cat-file --batch`):
 * what a sync agent reads, and what a history scan needs (every blob of every commit).
 */
import { catFileBatch, git, type CatFileObject } from "./git-fixtures.js";

/** Every blob reachable from any ref, over the whole history (`git rev-list --objects --all`). */
export async function allBlobs(gitDir: string): Promise<CatFileObject[]> {
  const listed = await git(["rev-list", "--objects", "--all"], gitDir);
  const oids = listed.split("\n").filter(Boolean).map((line) => line.slice(0, 40));
  const objects = await catFileBatch(gitDir, oids);
  return objects.filter((o): o is CatFileObject => o !== null && o.type === "blob");
}

/** Files under `dir` at `commit`: path -> content. */
export async function filesAt(gitDir: string, commit: string, dir: string): Promise<Map<string, string>> {
  const listed = await git(["ls-tree", "-r", "--name-only", commit, "--", `${dir}/`], gitDir);
  const paths = listed.split("\n").filter(Boolean);
  const objects = await catFileBatch(gitDir, paths.map((p) => `${commit}:${p}`));
  return new Map(paths.map((p, i) => [p, objects[i]?.data.toString("utf8") ?? ""]));
}
