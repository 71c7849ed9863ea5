/**
 * Raw object access to a (bare) repository through `git cat-file --batch`: what a sync agent
 * reads, and what a history scan needs (every blob of every commit).
 */
import { catFileBatch as readObjects, git } from "./git-fixtures.js";

export interface GitObject {
  oid: string;
  type: string;
  content: Buffer;
}

/** Objects by name (`<oid>` or `<commit>:<path>`), in order; null for a name git does not know (one `git cat-file --batch`). */
export async function catFileBatch(gitDir: string, names: string[]): Promise<Array<GitObject | null>> {
  return (await readObjects(gitDir, names)).map((o) => (o === null ? null : { oid: o.oid, type: o.type, content: o.data }));
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
