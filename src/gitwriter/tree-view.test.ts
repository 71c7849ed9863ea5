import fs from "node:fs/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../errors/index.js";
import { catFileBatch, createBareRemote, createTempDir, fsck, git, revParse } from "../../test/support/git-fixtures.js";
import { formatCommitMessage, parseTrailers } from "./commit-message.js";
import { blobOid, ObjectStore, type Tip } from "./object-store.js";
import { DraftTree, TreeView } from "./tree-view.js";

const BASE_FILES = {
  "README.md": "readme\n",
  "a/b/c.yaml": "c\n",
  "a/b/d.yaml": "d\n",
  "a/e.yaml": "e\n",
  "f": "a file\n",
  "instances/00/01/one/instance.yaml": "one\n",
  "instances/00/02/two/instance.yaml": "two\n",
};

let root: string;
let bare: string;
let store: ObjectStore;
let base: Tip;

beforeEach(async () => {
  root = await createTempDir("tree-view-test-");
  bare = await createBareRemote(root, "base.git", BASE_FILES);
  store = new ObjectStore(bare);
  const commit = (await revParse(bare, "main"))!;
  base = { commit, tree: await store.commitTree(commit) };
});

afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

/** `git ls-tree -r` of a tree: path -> blob content. Flushes the store first, so git sees new objects. */
async function filesOf(tree: string): Promise<Record<string, string>> {
  await store.flush();
  const out = await git(["ls-tree", "-r", "--format=%(objectname) %(path)", tree], bare);
  const entries = out.split("\n").filter(Boolean).map((line) => line.split(" ") as [string, string]);
  const blobs = await catFileBatch(bare, entries.map(([oid]) => oid));
  const files: Record<string, string> = {};
  for (const [i, [, file]] of entries.entries()) files[file] = blobs[i]!.data.toString("utf8");
  return files;
}

async function subtreeOid(tree: string, dir: string): Promise<string | null> {
  await store.flush();
  return revParse(bare, `${tree}:${dir}`);
}

describe("TreeView", () => {
  it("reads files, oids and sorted listings of a commit", async () => {
    const view = new TreeView(store, base);

    expect(view.commit).toBe(base.commit);
    expect(await view.readText("a/b/c.yaml")).toBe("c\n");
    expect(await view.oid("a/b/c.yaml")).toBe(await revParse(bare, "main:a/b/c.yaml"));
    const oidOf = async (file: string) => (await revParse(bare, `main:${file}`))!;
    expect(await view.list("")).toEqual([
      { name: "README.md", type: "blob", oid: await oidOf("README.md") },
      { name: "a", type: "tree", oid: await oidOf("a") },
      { name: "f", type: "blob", oid: await oidOf("f") },
      { name: "instances", type: "tree", oid: await oidOf("instances") },
    ]);
    expect(await view.list("a")).toEqual([
      { name: "b", type: "tree", oid: await oidOf("a/b") },
      { name: "e.yaml", type: "blob", oid: await oidOf("a/e.yaml") },
    ]);
    expect(await view.readFile("a")).toBeNull();
    expect(await view.readFile("missing")).toBeNull();
    expect(await view.readFile("f/below-a-file")).toBeNull();
    expect(await view.list("f")).toBeNull();
    expect(await view.list("missing")).toBeNull();
    expect(await view.oid("a")).toBeNull();
  });

  it("refuses invalid paths", async () => {
    const view = new TreeView(store, base);
    for (const bad of ["", "/a", "a//b", "a/", "../x", "a/../b", "./a", "a/.git/config", ".GIT", "a\0b"]) {
      await expect(view.readFile(bad), bad).rejects.toBeInstanceOf(InvalidArgumentError);
    }
    await expect(view.list("/")).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(await view.list("")).not.toBeNull();
  });
});

describe("DraftTree", () => {
  it("shows its edits to its own reads and builds the tree git would", async () => {
    const draft = new DraftTree(store, base);
    draft.write("a/b/c.yaml", "changed\n");
    draft.write("new/dir/file.txt", new TextEncoder().encode("bytes\n"));
    draft.remove("a/e.yaml");

    expect(await draft.readText("a/b/c.yaml")).toBe("changed\n");
    expect(await draft.readText("new/dir/file.txt")).toBe("bytes\n");
    expect(await draft.readFile("a/e.yaml")).toBeNull();
    // An edited directory has no oid until it is written; an untouched one keeps the base's.
    expect(await draft.list("a")).toEqual([{ name: "b", type: "tree" }]);
    expect(await draft.list("")).toContainEqual({ name: "new", type: "tree" });
    expect(await draft.list("")).toContainEqual({ name: "instances", type: "tree", oid: await subtreeOid(base.tree!, "instances") });
    expect(draft.changed).toBe(true);

    const tree = await draft.writeTree();
    expect(await filesOf(tree)).toEqual({
      ...BASE_FILES,
      "a/b/c.yaml": "changed\n",
      "a/e.yaml": undefined,
      "new/dir/file.txt": "bytes\n",
    });
    expect(await draft.oid("a/b/c.yaml")).toBe(await revParse(bare, `${tree}:a/b/c.yaml`));
    await fsck(bare);
  });

  it("rewrites only the trees on edited paths", async () => {
    const draft = new DraftTree(store, base);
    draft.write("instances/00/01/one/instance.yaml", "one v2\n");

    const tree = await draft.writeTree();

    expect(await subtreeOid(tree, "a")).toBe(await subtreeOid(base.tree!, "a"));
    expect(await subtreeOid(tree, "instances/00/02")).toBe(await subtreeOid(base.tree!, "instances/00/02"));
    expect(await subtreeOid(tree, "instances/00/01")).not.toBe(await subtreeOid(base.tree!, "instances/00/01"));
  });

  it("replaces a file by a directory when writing below it, and a directory by a file", async () => {
    const draft = new DraftTree(store, base);
    draft.write("f/inner.txt", "inner\n");
    draft.write("a/b", "b is a file now\n");

    expect(await draft.list("f")).toEqual([{ name: "inner.txt", type: "blob", oid: blobOid(Buffer.from("inner\n")) }]);
    expect(await draft.readText("a/b")).toBe("b is a file now\n");
    expect(await draft.readFile("a/b/c.yaml")).toBeNull();
    expect(await draft.list("a/b")).toBeNull();

    const files = await filesOf(await draft.writeTree());
    expect(files["f/inner.txt"]).toBe("inner\n");
    expect(files["a/b"]).toBe("b is a file now\n");
    expect(Object.keys(files).filter((f) => f === "f" || f.startsWith("a/b/"))).toEqual([]);
    await fsck(bare);
  });

  it("applies edits in order: later writes and removals win", async () => {
    const draft = new DraftTree(store, base);
    draft.write("x/y", "1");
    draft.write("x", "x is a file");
    draft.write("x/z", "x is a dir again");
    draft.remove("a");
    draft.write("a/new.txt", "only this");

    expect(await draft.list("x")).toEqual([{ name: "z", type: "blob", oid: blobOid(Buffer.from("x is a dir again")) }]);
    expect(await draft.list("a")).toEqual([{ name: "new.txt", type: "blob", oid: blobOid(Buffer.from("only this")) }]);
    const files = await filesOf(await draft.writeTree());
    expect(Object.keys(files).filter((f) => f.startsWith("x") || f.startsWith("a/"))).toEqual(["a/new.txt", "x/z"]);
  });

  it("removes whole subtrees; a directory left empty disappears", async () => {
    const draft = new DraftTree(store, base);
    draft.remove("a/b");
    draft.remove("instances/00/01/one/instance.yaml");

    expect(await draft.readFile("a/b/c.yaml")).toBeNull();
    expect(await draft.list("instances/00/01")).toBeNull();
    expect(await draft.list("instances/00")).toEqual([
      { name: "02", type: "tree", oid: await subtreeOid(base.tree!, "instances/00/02") },
    ]);

    const tree = await draft.writeTree();
    expect(await subtreeOid(tree, "instances/00/01")).toBeNull();
    expect(await subtreeOid(tree, "a/b")).toBeNull();
    await fsck(bare);
  });

  it("treats removing a missing path, or a path below a file, as no change", async () => {
    const draft = new DraftTree(store, base);
    await draft.list("");
    draft.remove("missing/deep/path");
    draft.remove("f/below");

    expect(await draft.readText("f")).toBe("a file\n");
    expect(draft.changed).toBe(false);
    expect(await draft.writeTree()).toBe(base.tree);
  });

  it("knows that writing identical content or undoing an edit changes nothing", async () => {
    const draft = new DraftTree(store, base);
    expect(await draft.readText("a/b/c.yaml")).toBe("c\n");
    draft.write("a/b/c.yaml", "c\n");
    draft.write("a/tmp/x", "1");
    draft.remove("a/tmp");

    expect(draft.changed).toBe(false);
    expect(await draft.writeTree()).toBe(base.tree);
  });

  it("keeps the executable bit of an overwritten file", async () => {
    const blob = store.writeBlob(new TextEncoder().encode("#!/bin/sh\n"));
    const tree = store.writeTree(new Map([["run.sh", { mode: "100755", oid: blob, type: "blob" as const }]]));
    const draft = new DraftTree(store, { commit: null, tree });
    draft.write("run.sh", "#!/bin/sh\necho hi\n");

    const written = await draft.writeTree();
    await store.flush();
    const out = await git(["ls-tree", written], bare);
    expect(out).toMatch(/^100755 blob [0-9a-f]{40}\trun\.sh$/m);
  });

  it("works on an empty repository", async () => {
    const draft = new DraftTree(store, { commit: null, tree: null });
    expect(await draft.list("")).toEqual([]);
    draft.remove("nothing");
    expect(draft.changed).toBe(false);
    draft.write("first.txt", "1");
    expect(draft.changed).toBe(true);
    expect(await filesOf(await draft.writeTree())).toEqual({ "first.txt": "1" });
  });

  it("refuses edits after it was sealed and edits of invalid paths", () => {
    const draft = new DraftTree(store, base);
    expect(() => draft.write("a/../b", "x")).toThrow(InvalidArgumentError);
    expect(() => draft.remove("/abs")).toThrow(InvalidArgumentError);
    draft.seal();
    expect(() => draft.write("late.txt", "x")).toThrow(/closed/);
  });
});

describe("formatCommitMessage", () => {
  it("writes subject, body and trailers separated by blank lines", () => {
    expect(formatCommitMessage({ subject: "s", body: "b1\n\nb2", trailers: { "Instance-Id": "i", X: "y" } })).toBe(
      "s\n\nb1\n\nb2\n\nInstance-Id: i\nX: y\n",
    );
    expect(formatCommitMessage({ subject: "only", trailers: {} })).toBe("only\n");
  });

  it("repeats the key of a list, and parseTrailers reads it back as that list", () => {
    const message = formatCommitMessage({ subject: "s", trailers: { Reason: "r", "Instance-Id": ["a", "b"], One: ["c"], X: "y" } });
    expect(message).toBe("s\n\nReason: r\nInstance-Id: a\nInstance-Id: b\nOne: c\nX: y\n");
    expect(parseTrailers(message.split("\n\n")[1]!)).toEqual({ Reason: "r", "Instance-Id": ["a", "b"], One: "c", X: "y" });
    expect(() => formatCommitMessage({ subject: "s", trailers: { Key: ["ok", "two\nlines"] } })).toThrow(InvalidArgumentError);
  });

  it("refuses a multi-line subject and malformed trailers", () => {
    expect(() => formatCommitMessage({ subject: "a\nb", trailers: {} })).toThrow(InvalidArgumentError);
    expect(() => formatCommitMessage({ subject: " ", trailers: {} })).toThrow(InvalidArgumentError);
    expect(() => formatCommitMessage({ subject: "s", trailers: { "Bad Key": "v" } })).toThrow(InvalidArgumentError);
    expect(() => formatCommitMessage({ subject: "s", trailers: { Key: "two\nlines" } })).toThrow(InvalidArgumentError);
  });
});

describe("bulk reads", () => {
  async function readAll(oids: string[]): Promise<string[]> {
    const out: string[] = [];
    await store.bulk.readBlobs(oids, (content, i) => (out[i] = Buffer.from(content).toString()));
    return out;
  }

  it("walk lists a subtree like reading it tree by tree, and readBlobs returns contents in order", async () => {
    const view = new TreeView(store, base);
    const a = (await view.list(""))!.find((e) => e.name === "a")!.oid!;
    expect(await view.bulk.walk(a)).toEqual([
      { path: "b", type: "tree", oid: (await subtreeOid(base.tree!, "a/b"))! },
      { path: "b/c.yaml", type: "blob", oid: blobOid(Buffer.from("c\n")) },
      { path: "b/d.yaml", type: "blob", oid: blobOid(Buffer.from("d\n")) },
      { path: "e.yaml", type: "blob", oid: blobOid(Buffer.from("e\n")) },
    ]);
    const oids = ["e\n", "c\n", "e\n"].map((text) => blobOid(Buffer.from(text)));
    expect(await readAll(oids)).toEqual(["e\n", "c\n", "e\n"]);
    expect(await readAll([])).toEqual([]);
    expect((await view.bulk.walk(a, (p, type) => type === "blob" && p.endsWith("d.yaml"))).map((e) => e.path)).toEqual(["b/d.yaml"]);
  });

  it("reads objects not flushed yet from memory, the rest through git", async () => {
    const draft = new DraftTree(store, base);
    draft.write("a/b/new.yaml", "new\n");
    const tree = await draft.writeTree(); // pending: not in the repository yet
    const a = (await new TreeView(store, { commit: null, tree }).list(""))!.find((e) => e.name === "a")!.oid!;
    const walked = await store.bulk.walk(a);
    expect(walked.map((e) => e.path)).toEqual(["b", "b/c.yaml", "b/d.yaml", "b/new.yaml", "e.yaml"]);
    const blobs = await readAll(walked.filter((e) => e.type === "blob").map((e) => e.oid));
    expect(blobs).toEqual(["c\n", "d\n", "new\n", "e\n"]);
    // A flush (a push going out) while git is still streaming the blobs before the pending one.
    const [c, , fresh, e] = walked.filter((x) => x.type === "blob").map((x) => x.oid);
    const reading = readAll([...Array<string>(20_000).fill(c!), fresh!, e!]);
    await store.flush();
    expect((await reading).slice(-3)).toEqual(["c\n", "new\n", "e\n"]);
  });

  it("fails with git's message for an object that is not there", async () => {
    await expect(readAll(["0".repeat(40)])).rejects.toThrow(/missing/);
    await expect(store.bulk.walk("0".repeat(40))).rejects.toThrow(/git ls-tree/);
  });
});
