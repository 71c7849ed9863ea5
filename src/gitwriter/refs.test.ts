import { readdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTempDir, git } from "../../test/support/git-fixtures.js";
import { GitRepositoryError } from "../errors/index.js";
import { readRef, writeRef } from "./refs.js";

describe("refs", () => {
  let gitdir: string;
  let commit: string;
  let other: string;

  beforeEach(async () => {
    gitdir = path.join(await createTempDir("gitops-broker-refs-"), "repo.git");
    await git(["init", "-q", "--bare", gitdir]);
    const tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"; // the empty tree, which git always knows
    const env = ["-c", "user.name=F", "-c", "user.email=f@example.com"];
    commit = (await git([...env, "--git-dir", gitdir, "commit-tree", tree, "-m", "one"])).trim();
    other = (await git([...env, "--git-dir", gitdir, "commit-tree", tree, "-m", "two"])).trim();
  });

  afterEach(async () => {
    await rm(path.dirname(gitdir), { recursive: true, force: true });
  });

  it("writes a ref git reads, and reads what git wrote, loose or packed", async () => {
    await writeRef(gitdir, "refs/heads/main", commit);
    expect((await git(["--git-dir", gitdir, "rev-parse", "refs/heads/main"])).trim()).toBe(commit);
    expect(await readRef(gitdir, "refs/heads/main")).toBe(commit);

    await git(["--git-dir", gitdir, "update-ref", "refs/remotes/origin/main", other]);
    await git(["--git-dir", gitdir, "pack-refs", "--all"]);
    expect(await readRef(gitdir, "refs/remotes/origin/main")).toBe(other);
    expect(await readRef(gitdir, "refs/heads/main")).toBe(commit);
    expect(await readRef(gitdir, "refs/heads/none")).toBeNull();

    // A loose ref shadows its packed line, as in git.
    await writeRef(gitdir, "refs/heads/main", other);
    expect(await readRef(gitdir, "refs/heads/main")).toBe(other);
    expect((await git(["--git-dir", gitdir, "rev-parse", "refs/heads/main"])).trim()).toBe(other);
  });

  it("deletes a ref loose and packed, leaving the others and no temp files", async () => {
    await writeRef(gitdir, "refs/heads/main", commit);
    await writeRef(gitdir, "refs/heads/keep", other);
    await git(["--git-dir", gitdir, "pack-refs", "--all"]);
    await writeRef(gitdir, "refs/heads/main", other);
    await writeRef(gitdir, "refs/heads/main", null);
    expect(await readRef(gitdir, "refs/heads/main")).toBeNull();
    expect(await git(["--git-dir", gitdir, "for-each-ref", "--format=%(refname) %(objectname)"])).toBe(`refs/heads/keep ${other}\n`);
    await writeRef(gitdir, "refs/heads/absent", null);
    expect((await readdir(path.join(gitdir, "refs", "heads"))).filter((n) => n.endsWith(".lock"))).toEqual([]);
  });

  it("refuses what is not an object id", async () => {
    await expect(writeRef(gitdir, "refs/heads/main", "main")).rejects.toThrow(/not an object id/);
  });

  it("reads a ref file that holds no object id as a GitRepositoryError (the repository is not what git wrote)", async () => {
    await writeFile(path.join(gitdir, "refs", "heads", "broken"), "not an oid\n");
    const error = await readRef(gitdir, "refs/heads/broken").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(GitRepositoryError);
    expect((error as Error).message).toBe('ref refs/heads/broken holds "not an oid", not an object id');
  });
});
