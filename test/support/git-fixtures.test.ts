import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import {
  catFileBatch,
  createBareRemote,
  createTempDir,
  FIXTURE_SIGNATURE,
  fsck,
  git,
  gitLog,
  gitWithInput,
  installPreReceiveHook,
  pushExternalCommit,
  pushExternalCommitViaPush,
  readRemoteFile,
  readRemoteFiles,
  revParse,
} from "./git-fixtures.js";

let root: string;
/** Twin repositories: `viaPush` changed by clone, commit and push, `direct` by pushExternalCommit. */
let viaPush: string;
let direct: string;

beforeEach(async () => {
  root = await createTempDir("git-fixtures-test-");
  viaPush = await createBareRemote(root, "via-push.git");
  direct = await createBareRemote(root, "direct.git");
});

/** The same change both ways: the same commit id (same tree, parent, identity, dates, message). */
async function both(files: Record<string, string | null>, message: string, branch?: string): Promise<string> {
  const expected = await pushExternalCommitViaPush(viaPush, files, message, branch);
  const commit = await pushExternalCommit(direct, files, message, branch);
  expect(commit).toBe(expected);
  expect(await revParse(direct, `refs/heads/${branch ?? "main"}`)).toBe(commit);
  return commit;
}

/** A hook refusing every push: what pushExternalCommit does after it was not a push. */
async function refusePushes(bare: string): Promise<void> {
  await installPreReceiveHook(bare, 'echo "no pushes here" >&2\nexit 1\n');
}

async function lsTree(bare: string, rev: string): Promise<string> {
  return git(["ls-tree", "-r", "--full-tree", rev], bare);
}

describe("pushExternalCommit", () => {
  it("makes the commit a clone, commit and push would make, change after change", async () => {
    await refusePushes(direct);
    await both({ "a.txt": "a\n", "dir/sub/b.yaml": "b: 1\n", "dir/c.txt": "c\n", "empty": "" }, "initial commit");
    await both({ "a.txt": "a changed\n", "dir/new.txt": "new\n", "dir/c.txt": null }, "change, add, remove");
    await both({ "dir": null, "top.txt": "top\n" }, "remove a directory with everything below it");
    await both({ "missing/path.txt": null }, "removing nothing: an empty commit");
    await both({}, "nothing at all");
    await both({ "ünï cödé/with space/\"quoted\" \\ name.txt": "ünï\r\ncrlf kept\r\n" }, "unusual paths and content");
    await both({ "a.txt": "again\n" }, "\n\n  subject with trailing blanks  \t\n\n\n\nbody line \n\n\n# not a comment\n\n");
    const log = await gitLog(direct);
    expect(log).toHaveLength(7);
    expect(log[0]!.message).toBe("  subject with trailing blanks\n\nbody line\n\n# not a comment");
    expect(log[0]).toMatchObject({
      author: { name: "Fixture", email: "fixture@example.com", date: "2024-01-01T00:00:00+00:00" },
      committer: { name: "Fixture", email: "fixture@example.com", date: "2024-01-01T00:00:00+00:00" },
    });
    expect(await lsTree(direct, "main")).toBe(await lsTree(viaPush, "main"));
    await fsck(direct);
  });

  it("keeps the executable bit of a file it overwrites", async () => {
    // An executable file, committed the same way in both repositories.
    for (const bare of [viaPush, direct]) {
      const stream = [
        "commit refs/heads/main",
        `author ${FIXTURE_SIGNATURE}`,
        `committer ${FIXTURE_SIGNATURE}`,
        "data 4",
        "run",
        "M 100755 inline bin/run.sh",
        "data 10",
        "#!/bin/sh",
        "",
      ].join("\n");
      await gitWithInput(["fast-import", "--quiet"], bare, stream);
    }
    await refusePushes(direct);
    await both({ "bin/run.sh": "#!/bin/sh\necho hi\n", "bin/other.sh": "#!/bin/sh\n" }, "overwrite it");
    expect(await lsTree(direct, "main")).toMatch(/^100755 blob [0-9a-f]{40}\tbin\/run\.sh$/m);
    expect(await lsTree(direct, "main")).toMatch(/^100644 blob [0-9a-f]{40}\tbin\/other\.sh$/m);
  });

  it("builds what the clone would where it cannot do it alone: ignored files, a new branch beside main, a file in the way", async () => {
    await both({ ".gitignore": "*.log\n", "keep.txt": "k\n" }, "with an ignore file");
    await both({ "debug.log": "ignored by the clone\n", "kept.txt": "kept\n" }, "an ignored file");
    expect(await readRemoteFile(direct, "main", "debug.log")).toBeNull();
    // `git checkout --orphan` in a clone starts the new branch from HEAD's files, without a parent.
    const other = await both({ "other.txt": "o\n" }, "on another branch", "other");
    expect((await gitLog(direct, "other")).map((c) => c.parents)).toEqual([[]]);
    expect(await readRemoteFile(direct, other, "keep.txt")).toBe("k\n");
    // Writing below a file fails in the clone, and so here.
    await expect(pushExternalCommit(direct, { "keep.txt/below": "x" }, "below a file")).rejects.toThrow();
    await expect(pushExternalCommitViaPush(viaPush, { "keep.txt/below": "x" }, "below a file")).rejects.toThrow();
  });

  it("runs no hook of the repository; pushExternalCommitViaPush does", async () => {
    await both({ "a.txt": "a\n" }, "initial commit");
    for (const bare of [viaPush, direct]) await installPreReceiveHook(bare, 'echo "no pushes today" >&2\nexit 1\n');

    await expect(pushExternalCommitViaPush(viaPush, { "b.txt": "b\n" }, "refused")).rejects.toThrow(/no pushes today/);
    const commit = await pushExternalCommit(direct, { "b.txt": "b\n" }, "not refused");
    expect((await gitLog(direct))[0]!.oid).toBe(commit);
  });
});

describe("createBareRemote", () => {
  it("creates a bare repository serving pushes over HTTP, seeded with one commit", async () => {
    const seeded = await createBareRemote(root, "seeded.git", { "x/y.txt": "y\n" });
    expect((await git(["config", "--get", "http.receivepack"], seeded)).trim()).toBe("true");
    expect((await git(["config", "--get", "receive.autogc"], seeded)).trim()).toBe("false");
    expect((await git(["rev-parse", "--is-bare-repository"], seeded)).trim()).toBe("true");
    expect((await gitLog(seeded)).map((c) => c.subject)).toEqual(["initial commit"]);
    expect(await readRemoteFile(seeded, "main", "x/y.txt")).toBe("y\n");
    // The commit a clone would have pushed.
    expect((await gitLog(seeded))[0]!.oid).toBe(await pushExternalCommitViaPush(viaPush, { "x/y.txt": "y\n" }, "initial commit"));
    await fsck(seeded);
  });

  it("makes a repository like an earlier one with the same seed its own copy", async () => {
    const first = await createBareRemote(root, "first.git", { "a.txt": "a\n" });
    const second = await createBareRemote(root, "nested/second.git", { "a.txt": "a\n" });
    expect(second).toBe(path.join(root, "nested", "second.git"));
    expect(await revParse(second, "main")).toBe(await revParse(first, "main"));
    await pushExternalCommit(second, { "b.txt": "b\n" }, "second only");
    expect((await gitLog(first)).map((c) => c.subject)).toEqual(["initial commit"]);
    expect((await gitLog(second)).map((c) => c.subject)).toEqual(["second only", "initial commit"]);
    expect((await git(["config", "--get", "http.receivepack"], second)).trim()).toBe("true");
    await fsck(second);
    // An empty one stays empty.
    expect(await gitLog(await createBareRemote(root, "empty-again.git"))).toEqual([]);
  });
});

describe("inspection", () => {
  it("readRemoteFile reads a file at a ref, null for a directory, a missing file or ref", async () => {
    const commit = await pushExternalCommit(direct, { "d/f.txt": "ünï\n", "d/g.txt": "g\n" }, "one");
    expect(await readRemoteFile(direct, "main", "d/f.txt")).toBe("ünï\n");
    expect(await readRemoteFiles(direct, "main", ["d/g.txt", "d", "d/f.txt", "nope"])).toEqual(["g\n", null, "ünï\n", null]);
    expect(await readRemoteFile(direct, commit, "d/f.txt")).toBe("ünï\n");
    expect(await readRemoteFile(direct, "main", "d")).toBeNull();
    expect(await readRemoteFile(direct, "main", "d/missing.txt")).toBeNull();
    expect(await readRemoteFile(direct, "nope", "d/f.txt")).toBeNull();
  });

  it("catFileBatch reads many objects in one go, null for a name that resolves to nothing", async () => {
    const commit = await pushExternalCommit(direct, { "a.txt": "a\n", "b.bin": "\u0000\n\u0001" }, "two");
    const [a, b, missing, tree, again] = await catFileBatch(direct, ["main:a.txt", "main:b.bin", "main:c", `${commit}^{tree}`, "main:a.txt"]);
    expect(a).toEqual({ oid: (await revParse(direct, "main:a.txt"))!, type: "blob", data: Buffer.from("a\n") });
    expect(b!.data).toEqual(Buffer.from([0, 10, 1]));
    expect(missing).toBeNull();
    expect(tree!.type).toBe("tree");
    expect(again).toEqual(a);
    expect(await catFileBatch(direct, [])).toEqual([]);
  });

  it("gitLog is empty for a missing ref", async () => {
    expect(await gitLog(direct)).toEqual([]);
    await pushExternalCommit(direct, { "a.txt": "a\n" }, "one");
    expect(await gitLog(direct, "other")).toEqual([]);
    expect((await gitLog(direct)).map((c) => c.subject)).toEqual(["one"]);
  });
});
