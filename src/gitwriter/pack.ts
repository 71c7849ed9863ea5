import { createHash, randomBytes } from "node:crypto";
import { closeSync, fstatSync, openSync, readFileSync, readSync } from "node:fs";
import { promises as fsp } from "node:fs";
import path from "node:path";
import { crc32, deflateSync, inflateSync } from "node:zlib";
import { GitRepositoryError } from "../errors/index.js";
import type { ObjectType } from "./git-objects.js";

/*
 * Git packfiles (format version 2, index version 2; see git's Documentation/gitformat-pack.txt).
 *
 * Reading: the index is kept in memory (28 bytes per object) and searched in place; objects are
 * read from the pack with positioned reads, so memory does not grow with the pack (isomorphic-git
 * loads whole packs, hundreds of MB at 100k instances). Reads are synchronous on purpose: a pack
 * read is a page-cache hit, and the readers of the repository walk trees one object after the
 * other, where a thread-pool round trip per object would cost ten times the read.
 *
 * Writing: the objects of one push go out in one pack (no deltas: they are new and small),
 * written under a temporary name and renamed into place, the index last: git and this reader
 * only see a pack through its index, so a crash never leaves a half-written pack in use.
 */

const TYPE_BY_NUMBER: Record<number, ObjectType | "ofs-delta" | "ref-delta"> = {
  1: "commit",
  2: "tree",
  3: "blob",
  4: "tag",
  6: "ofs-delta",
  7: "ref-delta",
};
const NUMBER_BY_TYPE: Record<ObjectType, number> = { commit: 1, tree: 2, blob: 3, tag: 4 };

const IDX_MAGIC = 0xff744f63;
const FANOUT_AT = 8;
const NAMES_AT = FANOUT_AT + 256 * 4;

export interface GitObject {
  type: ObjectType;
  data: Buffer;
}

/** A pack entry's header: a whole object, or a delta on another entry (by offset) or on an object named by id. */
type EntryHeader =
  | { kind: "whole"; type: ObjectType; size: number; dataAt: number }
  | { kind: "ofs-delta"; size: number; dataAt: number; baseOffset: number }
  | { kind: "ref-delta"; size: number; dataAt: number; baseOid: string };

/**
 * A cache of bounded weight with two generations: hits in the old generation move to the young
 * one; when the young one is full it becomes the old one and the old one is dropped. Recently used
 * entries survive like in an LRU, without a Map delete and insert on every hit.
 */
export class GenerationCache<K, V> {
  private young = new Map<K, V>();
  private old = new Map<K, V>();
  private youngWeight = 0;

  /** Both generations together weigh at most `maxWeight`. */
  constructor(
    private readonly maxWeight: number,
    private readonly weigh: (value: V) => number = () => 1,
  ) {}

  get(key: K): V | undefined {
    const young = this.young.get(key);
    if (young !== undefined) return young;
    const old = this.old.get(key);
    if (old !== undefined) this.set(key, old);
    return old;
  }

  set(key: K, value: V): void {
    if (this.young.has(key)) return;
    this.young.set(key, value);
    this.youngWeight += this.weigh(value);
    if (this.youngWeight >= this.maxWeight / 2) {
      this.old = this.young;
      this.young = new Map();
      this.youngWeight = 0;
    }
  }

  clear(): void {
    this.young = new Map();
    this.old = new Map();
    this.youngWeight = 0;
  }
}

/** Resolved delta bases by "<pack serial>:<offset>". */
export type DeltaBaseCache = GenerationCache<string, GitObject>;

export function createDeltaBaseCache(maxBytes: number): DeltaBaseCache {
  return new GenerationCache<string, GitObject>(maxBytes, (object) => object.data.length + 64);
}

/** Numbers the packs opened by this process: the delta base cache keys on it. */
let nextSerial = 1;

export class PackFile {
  private readonly idx: Buffer;
  private readonly count: number;
  private readonly fd: number;
  private readonly packSize: number;
  private readonly serial = nextSerial++;
  /** Entry offsets in pack order: where each compressed entry ends (git's reverse index). */
  private sortedOffsets: Float64Array | undefined;
  private closed = false;

  /** Opens `pack-<id>.idx` and its `.pack`. Throws when either is missing or malformed. */
  constructor(readonly idxPath: string) {
    this.idx = readFileSync(idxPath);
    if (this.idx.length < NAMES_AT + 40 || this.idx.readUInt32BE(0) !== IDX_MAGIC || this.idx.readUInt32BE(4) !== 2) {
      throw new GitRepositoryError(`${idxPath} is not a version 2 pack index`);
    }
    this.count = this.idx.readUInt32BE(FANOUT_AT + 255 * 4);
    this.fd = openSync(idxPath.replace(/\.idx$/, ".pack"), "r");
    this.packSize = fstatSync(this.fd).size;
  }

  get objects(): number {
    return this.count;
  }

  /** Offset of the object in the pack, or -1. */
  find(oid: Buffer): number {
    const first = oid[0]!;
    let lo = first === 0 ? 0 : this.idx.readUInt32BE(FANOUT_AT + (first - 1) * 4);
    let hi = this.idx.readUInt32BE(FANOUT_AT + first * 4);
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const at = NAMES_AT + mid * 20;
      // The name at `mid` compared with `oid`.
      const cmp = this.idx.compare(oid, 0, 20, at, at + 20);
      if (cmp === 0) return this.offsetAt(mid);
      if (cmp > 0) hi = mid;
      else lo = mid + 1;
    }
    return -1;
  }

  /**
   * The object at `offset`, its delta chain applied. `external` resolves a ref-delta base that is
   * not in this pack; `cache` holds resolved entries across calls.
   */
  read(offset: number, cache: DeltaBaseCache, external: (oid: string) => GitObject): GitObject {
    const chain: EntryHeader[] = [];
    const offsets: number[] = [];
    let base: GitObject | undefined;
    let at = offset;
    for (;;) {
      const cached = cache.get(this.key(at));
      if (cached !== undefined) {
        base = cached;
        break;
      }
      const header = this.header(at);
      if (header.kind === "whole") {
        base = { type: header.type, data: this.inflate(header.dataAt, header.size) };
        // Only what a delta was built on is worth keeping: its neighbours in the chain need it too.
        if (chain.length > 0) cache.set(this.key(at), base);
        break;
      }
      chain.push(header);
      offsets.push(at);
      if (header.kind === "ofs-delta") {
        at = header.baseOffset;
      } else {
        const inPack = this.find(Buffer.from(header.baseOid, "hex"));
        if (inPack === -1) {
          base = external(header.baseOid);
          break;
        }
        at = inPack;
      }
      if (chain.length > 10_000) throw new GitRepositoryError(`${this.idxPath}: delta chain too long at offset ${offset}`);
    }
    let object = base;
    for (let i = chain.length - 1; i >= 0; i--) {
      const delta = chain[i]!;
      object = { type: object.type, data: applyDelta(object.data, this.inflate(delta.dataAt, delta.size)) };
      cache.set(this.key(offsets[i]!), object);
    }
    return object;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }

  private key(offset: number): string {
    return `${this.serial}:${offset}`;
  }

  private offsetAt(index: number): number {
    const offsetsAt = NAMES_AT + this.count * 24;
    const small = this.idx.readUInt32BE(offsetsAt + index * 4);
    if ((small & 0x80000000) === 0) return small;
    const largeAt = offsetsAt + this.count * 4 + (small & 0x7fffffff) * 8;
    return Number(this.idx.readBigUInt64BE(largeAt));
  }

  private header(offset: number): EntryHeader {
    const buf = Buffer.alloc(32);
    const got = readSync(this.fd, buf, 0, 32, offset);
    let i = 0;
    const next = (): number => {
      if (i >= got) throw new GitRepositoryError(`${this.idxPath}: truncated entry header at offset ${offset}`);
      return buf[i++]!;
    };
    let byte = next();
    const typeNumber = (byte >> 4) & 7;
    let size = byte & 15;
    let shift = 4;
    while (byte & 0x80) {
      byte = next();
      size += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    }
    const type = TYPE_BY_NUMBER[typeNumber];
    if (type === "ofs-delta") {
      byte = next();
      let distance = byte & 0x7f;
      while (byte & 0x80) {
        byte = next();
        distance = (distance + 1) * 128 + (byte & 0x7f);
      }
      return { kind: "ofs-delta", size, dataAt: offset + i, baseOffset: offset - distance };
    }
    if (type === "ref-delta") {
      if (i + 20 > got) throw new GitRepositoryError(`${this.idxPath}: truncated entry header at offset ${offset}`);
      return { kind: "ref-delta", size, dataAt: offset + i + 20, baseOid: buf.toString("hex", i, i + 20) };
    }
    if (type === undefined) throw new GitRepositoryError(`${this.idxPath}: unknown object type ${typeNumber} at offset ${offset}`);
    return { kind: "whole", type, size, dataAt: offset + i };
  }

  /** Inflates the zlib stream at `at`, which ends where the next entry (or the checksum) starts. */
  private inflate(at: number, size: number): Buffer {
    const end = this.entryEnd(at);
    const compressed = Buffer.allocUnsafe(end - at);
    const got = readSync(this.fd, compressed, 0, compressed.length, at);
    const data = inflateSync(compressed.subarray(0, got));
    if (data.length !== size) throw new GitRepositoryError(`${this.idxPath}: object at ${at} has ${data.length} bytes, not ${size}`);
    return exactCopy(data);
  }

  /** The offset of the entry after the one holding `at` (sorted offsets, built on first use). */
  private entryEnd(at: number): number {
    if (this.sortedOffsets === undefined) {
      const offsets = new Float64Array(this.count);
      for (let i = 0; i < this.count; i++) offsets[i] = this.offsetAt(i);
      this.sortedOffsets = offsets.sort();
    }
    const offsets = this.sortedOffsets;
    let lo = 0;
    let hi = offsets.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (offsets[mid]! <= at) lo = mid + 1;
      else hi = mid;
    }
    return lo < offsets.length ? offsets[lo]! : this.packSize - 20;
  }
}

/**
 * zlib's output is a view of a 16 KiB chunk: kept in a cache, a 100-byte tree would hold on to
 * all of it (400 MB of tree caches at 10k instances). A copy of the exact size holds its bytes only.
 */
export function exactCopy(data: Buffer): Buffer {
  const copy = Buffer.allocUnsafeSlow(data.length);
  data.copy(copy);
  return copy;
}

/** Applies a git delta (copy/insert instructions) to `base`. */
export function applyDelta(base: Buffer, delta: Buffer): Buffer {
  let i = 0;
  const varint = (): number => {
    let value = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = delta[i++]!;
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return value;
  };
  const sourceSize = varint();
  if (sourceSize !== base.length) throw new GitRepositoryError(`delta expects a base of ${sourceSize} bytes, got ${base.length}`);
  const out = Buffer.allocUnsafe(varint());
  let at = 0;
  while (i < delta.length) {
    const op = delta[i++]!;
    if (op & 0x80) {
      let offset = 0;
      let length = 0;
      for (let bit = 0; bit < 4; bit++) if (op & (1 << bit)) offset += delta[i++]! * 2 ** (8 * bit);
      for (let bit = 0; bit < 3; bit++) if (op & (0x10 << bit)) length += delta[i++]! * 2 ** (8 * bit);
      if (length === 0) length = 0x10000;
      if (offset + length > base.length || at + length > out.length) throw new GitRepositoryError("delta copies out of range");
      base.copy(out, at, offset, offset + length);
      at += length;
    } else if (op !== 0) {
      if (i + op > delta.length || at + op > out.length) throw new GitRepositoryError("delta inserts out of range");
      delta.copy(out, at, i, i + op);
      i += op;
      at += op;
    } else {
      throw new GitRepositoryError("delta has a reserved instruction");
    }
  }
  if (at !== out.length) throw new GitRepositoryError("delta result has the wrong size");
  return out;
}

export interface PackEntry {
  oid: string;
  type: ObjectType;
  content: Uint8Array;
}

/**
 * Writes `objects` as one pack with its index into `packDir`; resolves with the index path.
 * Temporary files are named `tmp_pack_*` / `tmp_idx_*`, which `git prune` removes when a crash
 * leaves them behind.
 */
export async function writePack(packDir: string, objects: PackEntry[]): Promise<string> {
  const parts: Buffer[] = [];
  const head = Buffer.alloc(12);
  head.write("PACK", 0, "latin1");
  head.writeUInt32BE(2, 4);
  head.writeUInt32BE(objects.length, 8);
  parts.push(head);
  let offset = head.length;
  const entries: { oid: Buffer; crc: number; offset: number }[] = [];
  for (const object of objects) {
    const header = entryHeader(NUMBER_BY_TYPE[object.type], object.content.byteLength);
    const compressed = object.type === "tree" || object.content.byteLength < DEFLATE_FROM_BYTES ? stored(object.content) : deflateSync(object.content);
    if (offset > 0x7fffffff) throw new GitRepositoryError("a pack written by the broker must stay below 2 GiB");
    entries.push({ oid: Buffer.from(object.oid, "hex"), crc: crc32(compressed, crc32(header)), offset });
    parts.push(header, compressed);
    offset += header.length + compressed.length;
  }
  const packHash = createHash("sha1");
  for (const part of parts) packHash.update(part);
  const checksum = packHash.digest();
  parts.push(checksum);

  entries.sort((a, b) => Buffer.compare(a.oid, b.oid));
  const idx = Buffer.alloc(NAMES_AT + entries.length * 28 + 40);
  idx.writeUInt32BE(IDX_MAGIC, 0);
  idx.writeUInt32BE(2, 4);
  let e = 0;
  for (let byte = 0; byte < 256; byte++) {
    while (e < entries.length && entries[e]!.oid[0]! <= byte) e++;
    idx.writeUInt32BE(e, FANOUT_AT + byte * 4);
  }
  entries.forEach((entry, i) => {
    entry.oid.copy(idx, NAMES_AT + i * 20);
    idx.writeUInt32BE(entry.crc >>> 0, NAMES_AT + entries.length * 20 + i * 4);
    idx.writeUInt32BE(entry.offset, NAMES_AT + entries.length * 24 + i * 4);
  });
  checksum.copy(idx, NAMES_AT + entries.length * 28);
  createHash("sha1").update(idx.subarray(0, idx.length - 20)).digest().copy(idx, idx.length - 20);

  const name = `pack-${checksum.toString("hex")}`;
  const suffix = randomBytes(6).toString("hex");
  const tmpPack = path.join(packDir, `tmp_pack_${suffix}`);
  const tmpIdx = path.join(packDir, `tmp_idx_${suffix}`);
  const idxPath = path.join(packDir, `${name}.idx`);
  try {
    await fsp.mkdir(packDir, { recursive: true });
    await fsp.writeFile(tmpPack, Buffer.concat(parts), { mode: 0o444 });
    await fsp.writeFile(tmpIdx, idx, { mode: 0o444 });
    await fsp.rename(tmpPack, path.join(packDir, `${name}.pack`));
    await fsp.rename(tmpIdx, idxPath);
  } finally {
    await Promise.all([fsp.rm(tmpPack, { force: true }), fsp.rm(tmpIdx, { force: true })]);
  }
  return idxPath;
}

/**
 * Objects below this size go into the pack uncompressed (zlib "stored" blocks). A zlib call costs
 * 12-16 µs whatever the size, a dozen per operation: a third of the writer's time per operation.
 * The broker's objects are small YAML files and trees, which compress 2:1 at best (trees, being
 * mostly 20-byte ids, hardly at all); a hosted remote recompresses when it repacks.
 */
const DEFLATE_FROM_BYTES = 4096;

/** `data` as a zlib stream of stored (uncompressed) blocks: header, blocks of at most 65535 bytes, Adler-32. */
export function stored(data: Uint8Array): Buffer {
  const blocks = Math.max(1, Math.ceil(data.byteLength / 0xffff));
  const out = Buffer.allocUnsafe(2 + data.byteLength + 5 * blocks + 4);
  out[0] = 0x78; // deflate, 32 KiB window
  out[1] = 0x01; // no dictionary, fastest; (0x78 << 8 | 0x01) % 31 === 0
  let at = 2;
  for (let b = 0; b < blocks; b++) {
    const start = b * 0xffff;
    const length = Math.min(0xffff, data.byteLength - start);
    out[at] = b === blocks - 1 ? 1 : 0; // BFINAL, BTYPE 00
    out.writeUInt16LE(length, at + 1);
    out.writeUInt16LE(~length & 0xffff, at + 3);
    out.set(data.subarray(start, start + length), at + 5);
    at += 5 + length;
  }
  out.writeUInt32BE(adler32(data), at);
  return out;
}

function adler32(data: Uint8Array): number {
  let a = 1;
  let b = 0;
  // 5552 bytes is the most that can be summed before the sums may overflow 32 bits.
  for (let start = 0; start < data.length; start += 5552) {
    const end = Math.min(data.length, start + 5552);
    for (let i = start; i < end; i++) {
      a += data[i]!;
      b += a;
    }
    a %= 65521;
    b %= 65521;
  }
  return ((b << 16) | a) >>> 0;
}

/** Type and size: 3 bits of type and 4 of size in the first byte, 7 more bits of size per byte after. */
function entryHeader(type: number, size: number): Buffer {
  const bytes: number[] = [];
  let byte = (type << 4) | (size & 15);
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    bytes.push(byte | 0x80);
    byte = rest & 0x7f;
    rest = Math.floor(rest / 128);
  }
  bytes.push(byte);
  return Buffer.from(bytes);
}
