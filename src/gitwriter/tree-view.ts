import { InvalidArgumentError } from "../errors/index.js";
import { blobOid, EMPTY_TREE_OID, type ObjectStore, type Tip, type Tree, type TreeEntry } from "./object-store.js";
import { parseDirPath, parsePath } from "./paths.js";
import type { BulkReader, Draft, TreeEntryInfo, TreeReader } from "./types.js";

/*
 * A Draft keeps its edits as an overlay over the base tree: a sparse tree of nodes on the edited
 * paths only. Reads walk the overlay and fall through to the base trees where it has nothing;
 * `writeTree` rewrites only the trees along edited paths and reuses every other tree by oid.
 */

interface FileNode {
  kind: "file";
  content: Uint8Array;
  oid: string;
}

interface RemovedNode {
  kind: "removed";
}

/**
 * An edited directory. Its entries are the base directory's (unless `replace`) overridden by
 * `children`. `replace`: the base at this path was dropped (the path was written as a file or
 * removed before something was written below it). `created`: something was written below it, so
 * it is a directory even where the base has a file; a node reached by removals only leaves a
 * base file alone (removing `a/b` when `a` is a file is a no-op).
 */
interface DirNode {
  kind: "dir";
  replace: boolean;
  created: boolean;
  children: Map<string, Node>;
}

type Node = FileNode | RemovedNode | DirNode;

/** A directory as the reader sees it: overlay (if edited) over a base tree (if any). */
interface DirView {
  overlay: DirNode | undefined;
  base: string | undefined;
}

type Resolved = { type: "blob"; oid: string; content: Uint8Array | undefined } | { type: "tree"; view: DirView } | null;

const utf8 = new TextDecoder("utf-8");

/** Read access to a commit's tree; the base class of Draft. */
export class TreeView implements TreeReader {
  readonly commit: string | null;
  protected readonly store: ObjectStore;
  protected readonly root: DirView;

  constructor(store: ObjectStore, base: Tip, overlay?: DirNode) {
    this.store = store;
    this.commit = base.commit;
    this.root = { overlay, base: base.tree ?? undefined };
  }

  get bulk(): BulkReader {
    return this.store.bulk;
  }

  async readFile(path: string): Promise<Uint8Array | null> {
    const found = await this.resolve(parsePath(path));
    if (found?.type !== "blob") return null;
    // A copy of pending content: the caller must not be able to change the draft through it.
    return found.content === undefined ? this.store.readBlob(found.oid) : Uint8Array.from(found.content);
  }

  async readText(path: string): Promise<string | null> {
    const content = await this.readFile(path);
    return content === null ? null : utf8.decode(content);
  }

  async oid(path: string): Promise<string | null> {
    const found = await this.resolve(parsePath(path));
    return found?.type === "blob" ? found.oid : null;
  }

  async list(dir: string): Promise<TreeEntryInfo[] | null> {
    const segments = parseDirPath(dir);
    const found = await this.resolve(segments);
    if (found?.type !== "tree") return null;
    const { view } = found;
    const entries: TreeEntryInfo[] = [];
    // Names the draft did not touch are the base tree's entries as they are (no lookup each: a
    // fan-out level lists 256 of them on every operation).
    if (view.base !== undefined) {
      for (const [name, entry] of await this.store.readTree(view.base)) {
        if (view.overlay?.children.has(name) || (entry.type !== "blob" && entry.type !== "tree")) continue;
        entries.push({ name, type: entry.type, oid: entry.oid });
      }
    }
    for (const name of view.overlay?.children.keys() ?? []) {
      const child = await this.child(view, name);
      if (child?.type === "blob") entries.push({ name, type: "blob", oid: child.oid });
      else if (child?.type === "tree" && (await this.hasEntries(child.view))) {
        // A tree untouched by the draft keeps its oid; an edited one has none until written.
        entries.push(child.view.overlay === undefined && child.view.base !== undefined
          ? { name, type: "tree", oid: child.view.base }
          : { name, type: "tree" });
      }
    }
    // Git has no empty directories: one whose entries were all removed is gone (the root excepted).
    if (entries.length === 0 && segments.length > 0) return null;
    return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  private async resolve(segments: string[]): Promise<Resolved> {
    let current: Resolved = { type: "tree", view: this.root };
    for (const segment of segments) {
      if (current?.type !== "tree") return null;
      current = await this.child(current.view, segment);
    }
    return current;
  }

  private async child(view: DirView, name: string): Promise<Resolved> {
    const baseEntry = view.base === undefined ? undefined : (await this.store.readTree(view.base)).get(name);
    const node = view.overlay?.children.get(name);
    if (node === undefined) return fromBase(baseEntry);
    if (node.kind === "file") return { type: "blob", oid: node.oid, content: node.content };
    if (node.kind === "removed") return null;
    const sub = dirView(node, baseEntry);
    return sub === "base" ? fromBase(baseEntry) : { type: "tree", view: sub };
  }

  private async entryNames(view: DirView): Promise<Set<string>> {
    const names = new Set(view.base === undefined ? [] : (await this.store.readTree(view.base)).keys());
    for (const name of view.overlay?.children.keys() ?? []) names.add(name);
    return names;
  }

  private async hasEntries(view: DirView): Promise<boolean> {
    if (view.overlay === undefined) return view.base !== undefined;
    for (const name of await this.entryNames(view)) {
      if (!view.overlay.children.has(name)) return true;
      const child = await this.child(view, name);
      if (child?.type === "blob" || (child?.type === "tree" && (await this.hasEntries(child.view)))) return true;
    }
    return false;
  }
}

/** A TreeView with pending edits (see the overlay comment above). */
export class DraftTree extends TreeView implements Draft {
  private readonly edits: DirNode;
  private sealed = false;

  constructor(store: ObjectStore, base: Tip) {
    const edits: DirNode = { kind: "dir", replace: false, created: true, children: new Map() };
    super(store, base, edits);
    this.edits = edits;
  }

  write(path: string, content: string | Uint8Array): void {
    this.assertOpen();
    const segments = parsePath(path);
    if (typeof content !== "string" && !(content instanceof Uint8Array)) {
      throw new InvalidArgumentError(`content of ${JSON.stringify(path)} must be a string or a Uint8Array`);
    }
    // Copied: the caller may reuse its buffer after write() returned.
    const bytes = typeof content === "string" ? Buffer.from(content, "utf8") : Uint8Array.from(content);
    let dir = this.edits;
    for (const segment of segments.slice(0, -1)) {
      const node = dir.children.get(segment);
      if (node?.kind === "dir") {
        node.created = true;
        dir = node;
        continue;
      }
      // Untouched so far: merge with the base. Written as a file or removed: start afresh.
      const next: DirNode = { kind: "dir", replace: node !== undefined, created: true, children: new Map() };
      dir.children.set(segment, next);
      dir = next;
    }
    dir.children.set(segments[segments.length - 1]!, { kind: "file", content: bytes, oid: blobOid(bytes) });
  }

  remove(path: string): void {
    this.assertOpen();
    const segments = parsePath(path);
    let dir = this.edits;
    for (const segment of segments.slice(0, -1)) {
      const node = dir.children.get(segment);
      if (node === undefined) {
        const next: DirNode = { kind: "dir", replace: false, created: false, children: new Map() };
        dir.children.set(segment, next);
        dir = next;
      } else if (node.kind === "dir") {
        dir = node;
      } else {
        return; // below a file written or a path removed in this draft: nothing there to remove
      }
    }
    dir.children.set(segments[segments.length - 1]!, { kind: "removed" });
  }

  /**
   * Decided from the trees in memory, without I/O. Where the draft never read the base along an
   * edited path this can say true for an edit that turns out to change nothing; the writer
   * compares the built tree with the base before committing, so that never makes an empty commit.
   */
  get changed(): boolean {
    return this.root.base === undefined ? hasContent(this.edits) : changedOver(this.store, this.edits, this.root.base);
  }

  /** The paths written or removed, sorted (a removed directory once, not the files below it). */
  editedPaths(): string[] {
    const paths: string[] = [];
    const walk = (dir: DirNode, prefix: string): void => {
      for (const [name, node] of dir.children) {
        const path = `${prefix}${name}`;
        if (node.kind === "dir") {
          if (node.replace) paths.push(path);
          walk(node, `${path}/`);
        } else paths.push(path);
      }
    };
    walk(this.edits, "");
    return paths.sort();
  }

  /** Stops further edits: the operation has returned. */
  seal(): void {
    this.sealed = true;
  }

  /** Writes blobs and the trees on edited paths; resolves with the root tree oid. */
  async writeTree(): Promise<string> {
    return (await this.build(this.root)) ?? this.store.writeTree(new Map());
  }

  /** Tree oid of the view, or null when it has no entries (git stores no empty directory). */
  private async build(view: DirView): Promise<string | null> {
    if (view.overlay === undefined) return view.base ?? null;
    const base: Tree = view.base === undefined ? new Map() : await this.store.readTree(view.base);
    const changes = new Map<string, TreeEntry | undefined>();
    let size = base.size;
    for (const [name, node] of view.overlay.children) {
      const old = base.get(name);
      const entry = await this.buildEntry(node, old);
      if (entry === undefined ? old === undefined : old !== undefined && old.oid === entry.oid && old.mode === entry.mode) continue;
      changes.set(name, entry);
      size += (entry === undefined ? -1 : 0) + (old === undefined ? 1 : 0);
    }
    if (size === 0) return null;
    if (view.base !== undefined && changes.size === 0) return view.base;
    return this.store.writeTreeEdit(view.base, changes);
  }

  private async buildEntry(node: Node, baseEntry: TreeEntry | undefined): Promise<TreeEntry | undefined> {
    switch (node.kind) {
      case "removed":
        return undefined;
      case "file": {
        if (baseEntry?.oid !== node.oid) this.store.writeBlob(node.content);
        // Keep the executable bit of a file that is overwritten.
        const mode = baseEntry?.type === "blob" && baseEntry.mode === "100755" ? "100755" : "100644";
        return { mode, oid: node.oid, type: "blob" };
      }
      case "dir": {
        const sub = dirView(node, baseEntry);
        if (sub === "base") return baseEntry;
        const oid = await this.build(sub);
        return oid === null ? undefined : { mode: "040000", oid, type: "tree" };
      }
    }
  }

  private assertOpen(): void {
    if (this.sealed) throw new InvalidArgumentError("the draft is closed: edit it before the operation returns");
  }
}

function fromBase(entry: TreeEntry | undefined): Resolved {
  if (entry?.type === "blob") return { type: "blob", oid: entry.oid, content: undefined };
  if (entry?.type === "tree") return { type: "tree", view: { overlay: undefined, base: entry.oid } };
  return null;
}

/** The directory an overlay node stands for, or "base" when the base entry shows through. */
function dirView(node: DirNode, baseEntry: TreeEntry | undefined): DirView | "base" {
  if (node.replace) return { overlay: node, base: undefined };
  if (baseEntry?.type === "tree") return { overlay: node, base: baseEntry.oid };
  if (baseEntry !== undefined && !node.created) return "base";
  return { overlay: node, base: undefined };
}

/** True when a file is written somewhere below `dir` (and not removed again). */
function hasContent(dir: DirNode): boolean {
  for (const node of dir.children.values()) {
    if (node.kind === "file" || (node.kind === "dir" && hasContent(node))) return true;
  }
  return false;
}

/** Whether `dir`'s edits change the base tree `base`; true when that cannot be told from memory. */
function changedOver(store: ObjectStore, dir: DirNode, base: string): boolean {
  const tree = base === EMPTY_TREE_OID ? new Map<string, TreeEntry>() : store.cachedTree(base);
  if (tree === undefined) return dir.children.size > 0;
  for (const [name, node] of dir.children) {
    const baseEntry = tree.get(name);
    switch (node.kind) {
      case "file":
        if (baseEntry?.type !== "blob" || baseEntry.oid !== node.oid) return true;
        break;
      case "removed":
        if (baseEntry !== undefined) return true;
        break;
      case "dir": {
        const sub = dirView(node, baseEntry);
        if (sub === "base") break;
        if (sub.base !== undefined) {
          if (changedOver(store, node, sub.base)) return true;
        } else if (baseEntry !== undefined || hasContent(node)) {
          // Replaces what the base has there (or creates a directory): assume it differs.
          return true;
        }
      }
    }
  }
  return false;
}
