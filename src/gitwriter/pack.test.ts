import fs from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { catFileBatch, createTempDir, FIXTURE_SIGNATURE, fsck, git, gitWithInput } from "../../test/support/git-fixtures.js";
import { hashObject, serializeTree } from "./git-objects.js";
import { ObjectStore } from "./object-store.js";
import { PackFile, createDeltaBaseCache, writePack, type GitObject } from "./pack.js";

let root: string;
let bare: string;

beforeEach(async () => {
  root = await createTempDir("pack-test-");
  bare = path.join(root, "repo.git");
  await git(["init", "--quiet", "--bare", "--initial-branch=main", bare]);
});

afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

/** 40 commits, each changing a few lines of one 6 KB file: git deltifies them into long chains. */
async function historyOfOneFile(): Promise<void> {
  const lines = Array.from({ length: 300 }, (_, i) => `line ${i}: ${"x".repeat(i % 17)}`);
  const stream: string[] = [];
  for (let v = 0; v < 40; v++) {
    lines[(v * 7) % lines.length] = `changed in version ${v}`;
    const content = `${lines.join("\n")}\n`;
    const message = `version ${v}\n`;
    // Each commit's parent is the one before it: fast-import goes on with the branch it builds.
    stream.push(`commit refs/heads/main\nauthor ${FIXTURE_SIGNATURE}\ncommitter ${FIXTURE_SIGNATURE}\n`);
    stream.push(`data ${Buffer.byteLength(message)}\n${message}\n`);
    stream.push(`M 100644 inline record.yaml\ndata ${Buffer.byteLength(content)}\n${content}\n`);
  }
  await gitWithInput(["fast-import", "--quiet"], bare, stream.join(""));
}

/** Every object of the repository: id -> what `git cat-file` says. */
async function allObjects(): Promise<Map<string, GitObject>> {
  const ids = (await git(["rev-list", "--objects", "--all"], bare)).split("\n").filter(Boolean).map((l) => l.slice(0, 40));
  const objects = new Map<string, GitObject>();
  for (const [i, object] of (await catFileBatch(bare, ids)).entries()) {
    if (object === null || object.type === "tag") throw new Error(`unexpected object ${ids[i]!}: ${object?.type ?? "missing"}`);
    objects.set(object.oid, { type: object.type, data: object.data });
  }
  return objects;
}

async function catFile(oid: string, type: string): Promise<Buffer> {
  const { execFile } = await import("node:child_process");
  return new Promise((resolve, reject) =>
    execFile("git", ["cat-file", type, oid], { cwd: bare, encoding: "buffer" }, (error, stdout) => (error ? reject(error) : resolve(stdout))),
  );
}

async function onlyPack(): Promise<PackFile> {
  const idx = (await fs.readdir(path.join(bare, "objects", "pack"))).filter((f) => f.endsWith(".idx"));
  expect(idx).toHaveLength(1);
  return new PackFile(path.join(bare, "objects", "pack", idx[0]!));
}

/** Longest delta chain `git verify-pack` reports. */
async function longestChain(): Promise<number> {
  const out = await git(["verify-pack", "-s", ...(await fs.readdir(path.join(bare, "objects", "pack"))).filter((f) => f.endsWith(".idx")).map((f) => path.join(bare, "objects", "pack", f))]);
  return Math.max(0, ...[...out.matchAll(/chain length = (\d+)/g)].map((m) => Number(m[1])));
}

describe("PackFile", () => {
  for (const [kind, config] of [
    ["offset deltas", []],
    ["ref deltas", ["-c", "repack.useDeltaBaseOffset=false"]],
  ] as const) {
    it(`reads every object of a pack with ${kind}, chains resolved`, async () => {
      await historyOfOneFile();
      await git([...config, "repack", "-a", "-d", "-f", "-q", "--depth=50", "--window=50"], bare);
      expect(await longestChain()).toBeGreaterThan(10);
      const pack = await onlyPack();
      const cache = createDeltaBaseCache(1024 * 1024);
      const external = (oid: string): GitObject => {
        throw new Error(`unexpected external base ${oid}`);
      };
      try {
        for (const [oid, expected] of await allObjects()) {
          const offset = pack.find(Buffer.from(oid, "hex"));
          expect(offset, oid).toBeGreaterThan(0);
          const object = pack.read(offset, cache, external);
          expect(object.type).toBe(expected.type);
          expect(object.data.equals(expected.data), `${expected.type} ${oid}`).toBe(true);
        }
        expect(pack.find(Buffer.alloc(20, 0xab))).toBe(-1);
      } finally {
        pack.close();
      }
    });
  }
});

describe("writePack", () => {
  it("writes a pack git verifies and reads back, and this reader too", async () => {
    const blob = Buffer.from("apiVersion: v1\nkind: Namespace\n");
    const big = Buffer.from(Array.from({ length: 70_000 }, (_, i) => String.fromCharCode(33 + ((i * 7919) % 90))).join(""));
    const tree = serializeTree(
      new Map([
        ["a.yaml", { mode: "100644", oid: hashObject("blob", blob), type: "blob" as const }],
        ["big.txt", { mode: "100644", oid: hashObject("blob", big), type: "blob" as const }],
      ]),
    ).raw;
    const commit = Buffer.from(`tree ${hashObject("tree", tree)}\nauthor a <a@b> 0 +0000\ncommitter a <a@b> 0 +0000\n\nfirst\n`);
    const entries = [
      { oid: hashObject("blob", blob), type: "blob" as const, content: blob },
      { oid: hashObject("blob", big), type: "blob" as const, content: big },
      { oid: hashObject("tree", tree), type: "tree" as const, content: tree },
      { oid: hashObject("commit", commit), type: "commit" as const, content: commit },
    ];

    const idxPath = await writePack(path.join(bare, "objects", "pack"), entries);
    await git(["verify-pack", idxPath]);
    await git(["update-ref", "refs/heads/main", entries[3]!.oid], bare);
    await fsck(bare);
    expect((await catFile(entries[1]!.oid, "blob")).equals(big)).toBe(true);
    expect(await fs.readdir(path.join(bare, "objects", "pack"))).not.toContainEqual(expect.stringMatching(/^tmp_/));

    const pack = new PackFile(idxPath);
    try {
      for (const entry of entries) {
        const object = pack.read(pack.find(Buffer.from(entry.oid, "hex")), createDeltaBaseCache(1024), () => {
          throw new Error("no deltas here");
        });
        expect(object).toEqual({ type: entry.type, data: entry.content });
      }
    } finally {
      pack.close();
    }
  });
});

describe("ObjectStore packs", () => {
  it("keeps new objects in memory until flush, then in one pack; sees packs and loose objects git adds", async () => {
    const store = new ObjectStore(bare);
    const blob = store.writeBlob(Buffer.from("pending\n"));
    expect(Buffer.from(await store.readBlob(blob)).toString()).toBe("pending\n");
    await expect(git(["cat-file", "-e", blob], bare)).rejects.toThrow();
    await store.flush();
    await git(["cat-file", "-e", blob], bare);
    expect(store.packCount).toBe(1);

    // Written by git behind the store's back: a loose object, then a pack of 120 objects.
    const loose = await writeLoose("loose\n");
    expect(Buffer.from(await store.readBlob(loose)).toString()).toBe("loose\n");
    await historyOfOneFile();
    await git(["repack", "-d", "-q"], bare);
    expect(store.refreshPacks()).toBeGreaterThan(40);
    const head = (await git(["rev-parse", "main"], bare)).trim();
    const tree = await store.readTree(await store.commitTree(head));
    expect([...tree.keys()]).toEqual(["record.yaml"]);

    // A repack replaces the packs the store has open: it follows.
    await store.capDeltaChains();
    expect(store.packCount).toBe(1);
    expect(await longestChain()).toBeLessThanOrEqual(4);
    expect(Buffer.from(await store.readBlob(blob)).toString()).toBe("pending\n");
    expect(await store.commitTreeIfPresent("0".repeat(40))).toBeNull();
    store.close();
  });

  it("compact() rolls small packs up; reads go on", async () => {
    const store = new ObjectStore(bare);
    const blobs: string[] = [];
    for (let i = 0; i < 20; i++) {
      blobs.push(store.writeBlob(Buffer.from(`blob ${i}\n`)));
      await store.flush();
    }
    expect(store.packCount).toBe(20);
    expect(store.needsCompaction).toBe(true);
    await store.compact();
    expect(store.packCount).toBeLessThan(5);
    for (const [i, oid] of blobs.entries()) expect(Buffer.from(await store.readBlob(oid)).toString()).toBe(`blob ${i}\n`);
    store.close();
  });
});

async function writeLoose(content: string): Promise<string> {
  const { execFile } = await import("node:child_process");
  return new Promise((resolve, reject) => {
    const child = execFile("git", ["hash-object", "-w", "--stdin"], { cwd: bare }, (error, stdout) => (error ? reject(error) : resolve(stdout.trim())));
    child.stdin!.end(content);
  });
}
