import { createHash } from "node:crypto";
import { GitRepositoryError } from "../errors/index.js";
import type { GitAuthor } from "./types.js";

/**
 * Git's object encoding: object ids, trees and commits, byte for byte as git writes them, so
 * `git fsck --strict` accepts every object and the ids match what git computes.
 */

export type ObjectType = "commit" | "tree" | "blob" | "tag";

/** One tree entry. `type: "commit"` is a submodule link, kept as is. Trees have mode "040000". */
export interface TreeEntry {
  mode: string;
  oid: string;
  type: "blob" | "tree" | "commit";
}

/** A parsed tree: entry name -> entry. */
export type Tree = ReadonlyMap<string, TreeEntry>;

export const EMPTY_TREE_OID = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

// eslint-disable-next-line no-control-regex -- the ASCII range starts at NUL
const ASCII = /^[\x00-\x7f]*$/;

const utf8 = new TextDecoder("utf-8");

export function objectHeader(type: ObjectType, length: number): Buffer {
  return Buffer.from(`${type} ${length}\0`);
}

export function hashObject(type: ObjectType, content: Uint8Array): string {
  return createHash("sha1").update(objectHeader(type, content.byteLength)).update(content).digest("hex");
}

/** Git object id of a blob, computed without touching the disk. */
export function blobOid(content: Uint8Array): string {
  return hashObject("blob", content);
}

/**
 * A tree as stored and as parsed. `oidAt` holds where each entry's 20-byte id sits in `raw`, so
 * an edit that only changes ids (the common one: a subtree on an operation's path was rewritten)
 * is a copy of `raw` with those bytes overwritten, not a new serialization.
 */
export interface TreeObject {
  tree: Tree;
  raw: Buffer;
  oidAt: ReadonlyMap<string, number>;
}

/** Entries are `<mode> <name>\0<20-byte id>`. */
export function parseTree(content: Uint8Array): TreeObject {
  const tree = new Map<string, TreeEntry>();
  const oidAt = new Map<string, number>();
  const raw = Buffer.from(content.buffer, content.byteOffset, content.byteLength);
  let at = 0;
  while (at < raw.length) {
    const space = raw.indexOf(0x20, at);
    const nul = raw.indexOf(0, space);
    if (space === -1 || nul === -1 || nul + 21 > raw.length) throw new GitRepositoryError("malformed tree object");
    const mode = raw.toString("latin1", at, space);
    const name = utf8.decode(raw.subarray(space + 1, nul));
    tree.set(name, { mode: mode === "40000" ? "040000" : mode, oid: raw.toString("hex", nul + 1, nul + 21), type: typeOfMode(mode) });
    oidAt.set(name, nul + 1);
    at = nul + 21;
  }
  return { tree, raw, oidAt };
}

function typeOfMode(mode: string): TreeEntry["type"] {
  if (mode === "40000" || mode === "040000") return "tree";
  if (mode === "160000") return "commit";
  return "blob";
}

/** Git's order: by name bytes, a tree compared as if its name ended in "/". One buffer, written in place. */
export function serializeTree(tree: Tree): TreeObject {
  let ascii = true;
  let length = 0;
  const entries: { key: string; name: string; mode: string; oid: string }[] = [];
  for (const [name, entry] of tree) {
    const mode = entry.mode === "040000" ? "40000" : entry.mode;
    if (ascii && !ASCII.test(name)) ascii = false;
    entries.push({ key: entry.type === "tree" ? `${name}/` : name, name, mode, oid: entry.oid });
    length += mode.length + Buffer.byteLength(name) + 22;
  }
  // For ASCII, string order is byte order; otherwise compare the UTF-8 bytes.
  entries.sort(ascii ? (a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0) : (a, b) => Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)));
  const raw = Buffer.allocUnsafe(length);
  const oidAt = new Map<string, number>();
  let at = 0;
  for (const { name, mode, oid } of entries) {
    at += raw.write(mode, at, "latin1");
    raw[at++] = 0x20;
    at += raw.write(name, at, "utf8");
    raw[at++] = 0;
    oidAt.set(name, at);
    at += raw.write(oid, at, "hex");
  }
  return { tree, raw, oidAt };
}

/**
 * `base` with `changes` applied (an undefined entry removes the name). When every change gives
 * an existing name a new id under the same mode, the bytes of `base` are patched in place.
 */
export function editTree(base: TreeObject, changes: ReadonlyMap<string, TreeEntry | undefined>): TreeObject {
  const tree = new Map(base.tree);
  let layoutKept = true;
  for (const [name, entry] of changes) {
    const old = base.tree.get(name);
    if (entry === undefined) tree.delete(name);
    else tree.set(name, entry);
    if (entry === undefined || old === undefined || old.mode !== entry.mode) layoutKept = false;
  }
  if (!layoutKept) return serializeTree(tree);
  const raw = Buffer.from(base.raw);
  for (const [name, entry] of changes) raw.write(entry!.oid, base.oidAt.get(name)!, "hex");
  return { tree, raw, oidAt: base.oidAt };
}

export interface CommitFields {
  tree: string;
  parent: string | null;
  message: string;
  author: GitAuthor;
  date: Date;
}

/** Author and committer are the same person at the same time, in UTC. */
export function serializeCommit(spec: CommitFields): Buffer {
  const person = `${spec.author.name} <${spec.author.email}> ${Math.floor(spec.date.getTime() / 1000)} +0000`;
  const lines = [`tree ${spec.tree}`];
  if (spec.parent !== null) lines.push(`parent ${spec.parent}`);
  lines.push(`author ${person}`, `committer ${person}`, "", spec.message);
  return Buffer.from(lines.join("\n"), "utf8");
}

/** The root tree of a commit object. */
export function commitTreeOid(content: Uint8Array): string {
  const head = Buffer.from(content.buffer, content.byteOffset, Math.min(content.byteLength, 46)).toString("latin1");
  const match = /^tree ([0-9a-f]{40})\n/.exec(head);
  if (match === null) throw new GitRepositoryError("malformed commit object");
  return match[1]!;
}
