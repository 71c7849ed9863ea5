import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTempDir, git } from "../../test/support/git-fixtures.js";
import { editTree, hashObject, parseTree, serializeTree, type TreeEntry } from "./git-objects.js";

let root: string;

beforeEach(async () => {
  root = await createTempDir("git-objects-test-");
  await git(["init", "--quiet", "--bare", root]);
});

afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

function mktree(entries: [string, TreeEntry][]): Promise<string> {
  const input = entries.map(([name, e]) => `${e.mode === "040000" ? "040000" : e.mode} ${e.type} ${e.oid}\t${name}\n`).join("");
  return new Promise((resolve, reject) => {
    const child = execFile("git", ["mktree", "--missing"], { cwd: root }, (error, stdout) => (error ? reject(error) : resolve(stdout.trim())));
    child.stdin!.end(input);
  });
}

const blob = (n: number): TreeEntry => ({ mode: "100644", oid: hashObject("blob", Buffer.from(`${n}`)), type: "blob" });
const tree = (n: number): TreeEntry => ({ mode: "040000", oid: hashObject("tree", Buffer.from(`${n}`)), type: "tree" });

describe("tree objects", () => {
  it("serialize in git's order (a tree sorts as if named with a trailing slash, bytes for non-ASCII)", async () => {
    const entries: [string, TreeEntry][] = [
      ["a", tree(1)],
      ["a.b", blob(2)],
      ["a-b", blob(3)],
      ["a0", tree(4)],
      ["é", blob(5)],
      ["z", blob(6)],
      ["ab", { mode: "100755", oid: blob(7).oid, type: "blob" }],
    ];
    for (const order of [entries, [...entries].reverse()]) {
      const { raw } = serializeTree(new Map(order));
      expect(hashObject("tree", raw)).toBe(await mktree(order));
      expect([...parseTree(raw).tree.keys()]).toEqual(["a-b", "a.b", "a", "a0", "ab", "z", "é"]);
      expect(parseTree(raw).tree).toEqual(new Map(order));
    }
  });

  it("edit new ids in place, and re-serialize when names or modes change", async () => {
    const base = serializeTree(new Map([["a", blob(1)], ["b", tree(2)], ["c", blob(3)]]));
    const ids = editTree(base, new Map([["b", tree(9)], ["c", blob(8)]]));
    expect(ids.oidAt).toBe(base.oidAt);
    expect(hashObject("tree", ids.raw)).toBe(await mktree([["a", blob(1)], ["b", tree(9)], ["c", blob(8)]]));
    expect(hashObject("tree", base.raw)).toBe(await mktree([["a", blob(1)], ["b", tree(2)], ["c", blob(3)]]));

    const names = editTree(base, new Map([["a", undefined], ["d", blob(4)], ["c", { ...blob(3), mode: "100755" }]]));
    expect(hashObject("tree", names.raw)).toBe(await mktree([["b", tree(2)], ["c", { ...blob(3), mode: "100755" }], ["d", blob(4)]]));
    expect([...names.tree.keys()].sort()).toEqual(["b", "c", "d"]);
  });
});
