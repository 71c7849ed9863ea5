import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { inflateSync } from "node:zlib";
import { GitRepositoryError, InvalidArgumentError } from "../errors/index.js";
import {
  EMPTY_TREE_OID,
  commitTreeOid,
  editTree,
  hashObject,
  parseTree,
  serializeCommit,
  serializeTree,
  type CommitFields,
  type ObjectType,
  type Tree,
  type TreeEntry,
  type TreeObject,
} from "./git-objects.js";
import { catFileBatch, gitLog, lsTreeRecursive } from "./git-bulk.js";
import { readRef, writeRef } from "./refs.js";
import { GenerationCache, PackFile, createDeltaBaseCache, exactCopy, writePack, type GitObject } from "./pack.js";

import type { BulkReader, CommitInfo, LogOptions, WalkEntry } from "./types.js";

export { blobOid, EMPTY_TREE_OID, type Tree, type TreeEntry } from "./git-objects.js";

/** A commit and its root tree; both null for a branch that does not exist yet. */
export interface Tip {
  readonly commit: string | null;
  readonly tree: string | null;
}

export const EMPTY_TIP: Tip = { commit: null, tree: null };

/**
 * Parsed trees kept in memory. An operation touches the trees on its paths only, a dozen with the
 * fan-out layout, the upper ones shared by every operation.
 */
const TREE_CACHE_ENTRIES = 8_192;
/** Resolved delta bases (a fetched pack stores records and trees as deltas of each other). */
const DELTA_BASE_CACHE_BYTES = 16 * 1024 * 1024;
/** More packs than this (one per push, plus fetched ones) and the next push triggers a compaction. */
const COMPACT_ABOVE_PACKS = 16;

const execFileAsync = promisify(execFile);

const EMPTY_TREE: TreeObject = { tree: new Map(), raw: Buffer.alloc(0), oidAt: new Map() };

/** In the repository while a repack to short delta chains is owed (see oweDeltaCap). */
const DELTA_CAP_OWED = "gitops-broker-cap-deltas";

/**
 * Objects and refs of the local bare repository, without a working tree or an index.
 *
 * New objects (blobs, trees, commits) are kept in memory until `flush()` writes them as one pack,
 * right before the push that needs them: one pack per push instead of a dozen loose files per
 * operation. Reads look at those pending objects, then the packs, then loose objects (small
 * fetches leave some). `compact()` rolls small packs up (`git repack --geometric`), so lookups
 * never have to search hundreds of packs. Refs are written atomically (refs.ts).
 */
export class ObjectStore {
  private readonly packDir: string;
  private packs: PackFile[] = [];
  private readonly pending = new Map<string, GitObject>();
  private readonly trees = new GenerationCache<string, TreeObject>(TREE_CACHE_ENTRIES);
  private readonly deltaBases = createDeltaBaseCache(DELTA_BASE_CACHE_BYTES);

  constructor(private readonly gitdir: string) {
    this.packDir = path.join(gitdir, "objects", "pack");
  }

  /**
   * Whole-subtree reads through the git CLI. Objects not flushed yet (the trees of commits waiting
   * for their push) are not on disk: those are read here; anything a flushed tree refers to is.
   */
  readonly bulk: BulkReader = {
    walk: async (treeOid, keep = () => true) =>
      this.pending.has(treeOid) ? this.walkHere(treeOid, "", keep) : lsTreeRecursive(this.gitdir, treeOid, keep),
    readBlobs: async (oids, each) => {
      // Taken now: a flush during the read below empties `pending` (into a pack git reads too late).
      const inMemory = new Map(oids.flatMap((oid) => {
        const object = this.pending.get(oid);
        return object === undefined ? [] : [[oid, object.data] as const];
      }));
      const onDisk = oids.flatMap((oid, index) => (inMemory.has(oid) ? [] : [index]));
      let next = 0;
      const fromMemory = (upTo: number) => {
        for (; next < upTo; next++) each(inMemory.get(oids[next]!)!, next);
      };
      await catFileBatch(this.gitdir, onDisk.map((i) => oids[i]!), (content, n) => {
        fromMemory(onDisk[n]!);
        each(content, next++);
      });
      fromMemory(oids.length);
    },
  };

  private walkHere(treeOid: string, prefix: string, keep: (path: string, type: "blob" | "tree") => boolean): WalkEntry[] {
    const out: WalkEntry[] = [];
    for (const [name, entry] of this.treeObject(treeOid).tree) {
      if (entry.type === "commit") continue;
      const at = `${prefix}${name}`;
      if (keep(at, entry.type)) out.push({ path: at, type: entry.type, oid: entry.oid });
      if (entry.type === "tree") out.push(...this.walkHere(entry.oid, `${at}/`, keep));
    }
    return out;
  }

  /** Packs in the repository (compaction keeps this small). */
  get packCount(): number {
    return this.packs.length;
  }

  /** True when enough packs piled up that `compact()` should run. */
  get needsCompaction(): boolean {
    return this.packs.length > COMPACT_ABOVE_PACKS;
  }

  /** The parsed tree when it is in memory (sync: lets a Draft answer `changed` without I/O). */
  cachedTree(oid: string): Tree | undefined {
    return oid === EMPTY_TREE_OID ? EMPTY_TREE.tree : this.trees.get(oid)?.tree;
  }

  async readTree(oid: string): Promise<Tree> {
    return this.treeObject(oid).tree;
  }

  async readBlob(oid: string): Promise<Uint8Array> {
    // A copy: the object may be a cached delta base that other reads share.
    return Uint8Array.from(this.read(oid, "blob").data);
  }

  /** The root tree of `commit`, or null when the commit is not in this repository. */
  async commitTreeIfPresent(commit: string): Promise<string | null> {
    const object = this.find(commit);
    if (object === null) return null;
    if (object.type !== "commit") throw new GitRepositoryError(`object ${commit} is a ${object.type}, not a commit`);
    return commitTreeOid(object.data);
  }

  async commitTree(commit: string): Promise<string> {
    return commitTreeOid(this.read(commit, "commit").data);
  }

  writeBlob(content: Uint8Array): string {
    return this.add("blob", Buffer.from(content));
  }

  writeTree(tree: Tree): string {
    return this.addTree(serializeTree(tree));
  }

  /** Writes the tree `base` with `changes` applied (undefined removes a name); returns its oid. */
  writeTreeEdit(base: string | undefined, changes: ReadonlyMap<string, TreeEntry | undefined>): string {
    return this.addTree(editTree(base === undefined ? EMPTY_TREE : this.treeObject(base), changes));
  }

  writeCommit(spec: CommitFields): string {
    return this.add("commit", serializeCommit(spec));
  }

  /** Writes the objects written since the last flush into the repository, as one pack. */
  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const objects = [...this.pending].map(([oid, { type, data }]) => ({ oid, type, content: data }));
    const idxPath = await writePack(this.packDir, objects);
    try {
      // A compaction that finished meanwhile may have opened it already, or rolled it up.
      if (!this.packs.some((pack) => pack.idxPath === idxPath)) this.packs.unshift(new PackFile(idxPath));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      this.refreshPacks();
    }
    // Objects written meanwhile stay pending for the next flush.
    for (const { oid } of objects) this.pending.delete(oid);
  }

  /**
   * Picks up packs others added (fetch, repack) and forgets removed ones. Call after a fetch.
   * Returns how many objects the added packs hold.
   */
  refreshPacks(): number {
    let names: string[];
    try {
      names = readdirSync(this.packDir).filter((name) => name.endsWith(".idx"));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") names = [];
      else throw error;
    }
    const present = new Set(names.map((name) => path.join(this.packDir, name)));
    const kept = this.packs.filter((pack) => {
      if (present.has(pack.idxPath)) return true;
      // A removed pack: its objects were repacked elsewhere. Offsets cached for it are dead too.
      pack.close();
      return false;
    });
    const known = new Set(kept.map((pack) => pack.idxPath));
    const added: PackFile[] = [];
    for (const idxPath of present) {
      if (known.has(idxPath)) continue;
      try {
        added.push(new PackFile(idxPath));
      } catch (error) {
        // Being written or removed right now (its .pack is not there): the next refresh sees it.
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      }
    }
    if (kept.length !== this.packs.length) this.deltaBases.clear();
    this.packs = [...added, ...kept];
    return added.reduce((n, pack) => n + pack.objects, 0);
  }

  /** Rolls small packs (and loose objects) into bigger ones: `git repack -d --geometric=2`. */
  async compact(): Promise<void> {
    await this.repack(["--geometric=2"]);
  }

  /**
   * Repacks everything with delta chains of at most 4 links. A fetched pack (a clone above all)
   * chains similar records up to 50 deep, and reading one object then inflates the whole chain:
   * walking 100k instances took 82 s, 34 s with the chains capped (4.3 s of repacking).
   * `--window=0`: existing deltas are reused, no new ones are searched for. `--keep-unreachable`:
   * a commit waiting to be pushed again (the remote was unreachable) is reachable from no ref yet.
   */
  async capDeltaChains(): Promise<void> {
    await this.repack(["-a", "--keep-unreachable", "--window=0", "--depth=4"]);
    rmSync(path.join(this.gitdir, DELTA_CAP_OWED), { force: true });
  }

  /**
   * Notes in the repository that capDeltaChains() is owed, until it has run: a process stopped
   * before it ran (its repack waits for the start's reads) leaves the note for the next start,
   * whose fetch brings too little to ask for it again.
   */
  oweDeltaCap(): void {
    writeFileSync(path.join(this.gitdir, DELTA_CAP_OWED), "a fetched pack is to be repacked with short delta chains\n");
  }

  get deltaCapOwed(): boolean {
    return existsSync(path.join(this.gitdir, DELTA_CAP_OWED));
  }

  private async repack(args: string[]): Promise<void> {
    await execFileAsync("git", ["repack", "-d", "-q", "--no-write-bitmap-index", ...args], {
      env: { ...process.env, GIT_DIR: this.gitdir, LC_ALL: "C" },
    });
    this.refreshPacks();
  }

  /** History of `paths` from `from` (only commits on disk: every commit pushed or fetched is). */
  log(from: string, paths: readonly string[], options: LogOptions = {}): Promise<CommitInfo[]> {
    return gitLog(this.gitdir, from, paths, options);
  }

  close(): void {
    for (const pack of this.packs) pack.close();
    this.packs = [];
    this.deltaBases.clear();
  }

  resolveRef(ref: string): Promise<string | null> {
    return readRef(this.gitdir, ref);
  }

  /** Points `ref` at `oid` (atomically: see refs.ts), or deletes it for null. */
  setRef(ref: string, oid: string | null): Promise<void> {
    return writeRef(this.gitdir, ref, oid);
  }

  private treeObject(oid: string): TreeObject {
    if (oid === EMPTY_TREE_OID) return EMPTY_TREE;
    let object = this.trees.get(oid);
    if (object === undefined) {
      object = parseTree(this.read(oid, "tree").data);
      this.trees.set(oid, object);
    }
    return object;
  }

  private addTree(object: TreeObject): string {
    const oid = this.add("tree", object.raw);
    this.trees.set(oid, object);
    return oid;
  }

  /** Objects that exist already may be written again: git keeps one, and looking costs more. */
  private add(type: ObjectType, data: Buffer): string {
    const oid = hashObject(type, data);
    this.pending.set(oid, { type, data });
    return oid;
  }

  private read(oid: string, type: ObjectType): GitObject {
    const object = this.find(oid);
    if (object === null) throw new GitRepositoryError(`object ${oid} is not in ${this.gitdir}`);
    if (object.type !== type) throw new GitRepositoryError(`object ${oid} is a ${object.type}, not a ${type}`);
    return object;
  }

  private find(oid: string): GitObject | null {
    if (!/^[0-9a-f]{40}$/.test(oid)) throw new InvalidArgumentError(`${JSON.stringify(oid)} is not an object id`);
    const pending = this.pending.get(oid);
    if (pending !== undefined) return pending;
    const found = this.fromPacks(oid) ?? this.fromLoose(oid);
    if (found !== null) return found;
    // Maybe in a pack that appeared since the last refresh (a repack moved it there).
    this.refreshPacks();
    return this.fromPacks(oid) ?? this.fromLoose(oid);
  }

  private fromPacks(oid: string): GitObject | null {
    const key = Buffer.from(oid, "hex");
    for (const pack of this.packs) {
      const offset = pack.find(key);
      if (offset !== -1) return pack.read(offset, this.deltaBases, (base) => this.deltaBase(base));
    }
    return null;
  }

  /** The base of a ref-delta that is not in the delta's own pack. */
  private deltaBase(oid: string): GitObject {
    const object = this.find(oid);
    if (object === null) throw new GitRepositoryError(`delta base ${oid} is not in ${this.gitdir}`);
    return object;
  }

  private fromLoose(oid: string): GitObject | null {
    let compressed: Buffer;
    try {
      compressed = readFileSync(path.join(this.gitdir, "objects", oid.slice(0, 2), oid.slice(2)));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw error;
    }
    const raw = inflateSync(compressed);
    const nul = raw.indexOf(0);
    const [type = "", size = ""] = raw.toString("latin1", 0, nul).split(" ");
    if (!["commit", "tree", "blob", "tag"].includes(type) || Number(size) !== raw.length - nul - 1) {
      throw new GitRepositoryError(`loose object ${oid} is malformed`);
    }
    return { type: type as ObjectType, data: exactCopy(raw.subarray(nul + 1)) };
  }
}
