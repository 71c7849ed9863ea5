import { createHash } from "node:crypto";
import { promises as fsp } from "node:fs";
import path from "node:path";
import {
  Errors,
  readBlob,
  readCommit,
  readTree,
  resolveRef,
  writeBlob,
  writeCommit,
  writeRef,
  deleteRef,
  writeTree,
} from "isomorphic-git";
import { createAtomicFs } from "./atomic-fs.js";
import type { GitAuthor } from "./types.js";

/** One tree entry. `type: "commit"` is a submodule link, kept as is. */
export interface TreeEntry {
  mode: string;
  oid: string;
  type: "blob" | "tree" | "commit";
}

/** A parsed tree: entry name -> entry. */
export type Tree = ReadonlyMap<string, TreeEntry>;

/** A commit and its root tree; both null for a branch that does not exist yet. */
export interface Tip {
  readonly commit: string | null;
  readonly tree: string | null;
}

export const EMPTY_TIP: Tip = { commit: null, tree: null };
export const EMPTY_TREE_OID = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/**
 * Parsed trees kept in memory. An operation touches the trees on its paths only (a handful with
 * the fan-out layout); this keeps the hot ones parsed whatever the size of the repository.
 */
const TREE_CACHE_ENTRIES = 20_000;

/** Git object id of a blob, computed without touching the disk. */
export function blobOid(content: Uint8Array): string {
  return createHash("sha1").update(`blob ${content.byteLength}\0`).update(content).digest("hex");
}

/**
 * Objects and refs of the local bare repository, through isomorphic-git (never a working tree
 * or an index).
 */
export class ObjectStore {
  private readonly fs = createAtomicFs();
  /** isomorphic-git's cache: pack indexes and pack contents it loaded. */
  private packCache: object = {};
  private knownPacks = new Set<string>();
  private readonly trees = new LruCache<string, Tree>(TREE_CACHE_ENTRIES);

  constructor(private readonly gitdir: string) {}

  /** The parsed tree when it is in memory (sync: lets a Draft answer `changed` without I/O). */
  cachedTree(oid: string): Tree | undefined {
    return this.trees.get(oid);
  }

  async readTree(oid: string): Promise<Tree> {
    const cached = this.trees.get(oid);
    if (cached !== undefined) return cached;
    const { tree: entries } = await this.read((cache) => readTree({ fs: this.fs, gitdir: this.gitdir, oid, cache }));
    const tree = new Map(entries.map((e) => [e.path, { mode: e.mode, oid: e.oid, type: e.type }] as const));
    this.trees.set(oid, tree);
    return tree;
  }

  async readBlob(oid: string): Promise<Uint8Array> {
    const { blob } = await this.read((cache) => readBlob({ fs: this.fs, gitdir: this.gitdir, oid, cache }));
    return blob;
  }

  /** The root tree of `commit`, or null when the commit is not in this repository. */
  async commitTreeIfPresent(commit: string): Promise<string | null> {
    try {
      return await this.commitTree(commit);
    } catch (error) {
      if (error instanceof Errors.NotFoundError) return null;
      throw error;
    }
  }

  async commitTree(commit: string): Promise<string> {
    const { commit: parsed } = await this.read((cache) =>
      readCommit({ fs: this.fs, gitdir: this.gitdir, oid: commit, cache }),
    );
    return parsed.tree;
  }

  writeBlob(content: Uint8Array): Promise<string> {
    return writeBlob({ fs: this.fs, gitdir: this.gitdir, blob: content });
  }

  async writeTree(tree: Tree): Promise<string> {
    const entries = [...tree].map(([name, e]) => ({ path: name, mode: e.mode, oid: e.oid, type: e.type }));
    const oid = await writeTree({ fs: this.fs, gitdir: this.gitdir, tree: entries });
    this.trees.set(oid, tree);
    return oid;
  }

  writeCommit(spec: {
    tree: string;
    parent: string | null;
    message: string;
    author: GitAuthor;
    date: Date;
  }): Promise<string> {
    const person = {
      name: spec.author.name,
      email: spec.author.email,
      timestamp: Math.floor(spec.date.getTime() / 1000),
      timezoneOffset: 0,
    };
    return writeCommit({
      fs: this.fs,
      gitdir: this.gitdir,
      commit: {
        tree: spec.tree,
        parent: spec.parent === null ? [] : [spec.parent],
        author: person,
        committer: person,
        message: spec.message,
      },
    });
  }

  async resolveRef(ref: string): Promise<string | null> {
    try {
      return await resolveRef({ fs: this.fs, gitdir: this.gitdir, ref });
    } catch (error) {
      if (error instanceof Errors.NotFoundError) return null;
      throw error;
    }
  }

  /** Points `ref` at `oid` (atomically: see atomic-fs), or deletes it for null. */
  async setRef(ref: string, oid: string | null): Promise<void> {
    if (oid === null) await deleteRef({ fs: this.fs, gitdir: this.gitdir, ref });
    else await writeRef({ fs: this.fs, gitdir: this.gitdir, ref, value: oid, force: true });
  }

  /**
   * Call after a fetch: `git gc --auto` (which fetch may start) replaces packs, and isomorphic-git
   * would keep the contents of removed packs in memory for good.
   */
  async forgetRemovedPacks(): Promise<void> {
    const files = await readdirOrEmpty(path.join(this.gitdir, "objects", "pack"));
    const packs = new Set(files.filter((f) => f.endsWith(".idx")));
    if ([...this.knownPacks].some((p) => !packs.has(p))) this.packCache = {};
    this.knownPacks = packs;
  }

  /** Reads with one retry on a fresh cache: a concurrent `git gc` may have removed a pack the cache knew. */
  private async read<T>(fn: (cache: object) => Promise<T>): Promise<T> {
    try {
      return await fn(this.packCache);
    } catch {
      // Nothing is lost by not keeping this error: a real problem fails the retry the same way.
      this.packCache = {};
      return fn(this.packCache);
    }
  }
}

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await fsp.readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}

/** A Map that forgets its least recently used entries beyond `capacity`. */
class LruCache<K, V> {
  private readonly map = new Map<K, V>();

  constructor(private readonly capacity: number) {}

  get(key: K): V | undefined {
    const value = this.map.get(key);
    if (value !== undefined) {
      this.map.delete(key);
      this.map.set(key, value);
    }
    return value;
  }

  set(key: K, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.capacity) {
      const oldest = this.map.keys().next();
      if (!oldest.done) this.map.delete(oldest.value);
    }
  }
}
