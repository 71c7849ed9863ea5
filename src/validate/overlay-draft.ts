import { createHash } from "node:crypto";
import type { Draft, TreeEntryInfo, TreeReader } from "../gitwriter/index.js";

/**
 * A Draft in memory over any TreeReader (a plain checkout for `validate`): the broker's own
 * render code writes into it exactly as into a real operation's draft, and nothing reaches the
 * base. Edits are a sparse tree on the edited paths only, so every read costs the depth of its
 * path whatever the number of edits (validate renders every instance of the repository into one).
 */

interface FileNode {
  kind: "file";
  content: Uint8Array;
}
interface RemovedNode {
  kind: "removed";
}
/** An edited directory; `hidesBase`: the base at this path was removed before something was written below. */
interface DirNode {
  kind: "dir";
  hidesBase: boolean;
  children: Map<string, Node>;
}
type Node = FileNode | RemovedNode | DirNode;

/** Where a path leads: an overlay node (if edited) and whether the base still shows there. */
interface Located {
  node: Node | undefined;
  baseVisible: boolean;
}

function blobOid(content: Uint8Array): string {
  return createHash("sha1").update(`blob ${content.length}\0`).update(content).digest("hex");
}

const segmentsOf = (path: string): string[] => path.split("/").filter((s) => s !== "");

export function overlayDraft(base: TreeReader): Draft {
  const root: DirNode = { kind: "dir", hidesBase: false, children: new Map() };
  let edited = false;

  function locate(path: string): Located {
    let node: Node | undefined = root;
    let baseVisible = true;
    for (const segment of segmentsOf(path)) {
      if (node?.kind !== "dir") return { node: undefined, baseVisible: node === undefined && baseVisible };
      if (node.hidesBase) baseVisible = false;
      node = node.children.get(segment);
      if (node?.kind === "removed") return { node, baseVisible: false };
    }
    if (node?.kind === "dir" && node.hidesBase) baseVisible = false;
    return { node, baseVisible };
  }

  async function readFile(path: string): Promise<Uint8Array | null> {
    const { node, baseVisible } = locate(path);
    if (node?.kind === "file") return Uint8Array.from(node.content);
    return node === undefined && baseVisible ? base.readFile(path) : null;
  }

  async function list(dir: string): Promise<TreeEntryInfo[] | null> {
    const { node, baseVisible } = locate(dir);
    if (node !== undefined && node.kind !== "dir") return null;
    const entries = new Map<string, TreeEntryInfo>();
    for (const e of baseVisible ? ((await base.list(dir)) ?? []) : []) entries.set(e.name, e);
    for (const [name, child] of node?.children ?? []) {
      if (child.kind === "removed") entries.delete(name);
      else if (child.kind === "file") entries.set(name, { name, type: "blob", oid: blobOid(child.content) });
      // An edited directory has no oid (like a draft's git tree); it is gone when nothing is left in it.
      else if ((await list(dir === "" ? name : `${dir}/${name}`)) !== null) entries.set(name, { name, type: "tree" });
      else entries.delete(name);
    }
    // Git has no empty directories (the root excepted).
    if (entries.size === 0 && dir !== "") return null;
    return [...entries.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** The directory node for `segments`, created on the way; undefined when a file or removal cuts the path (`remove` only). */
  function dirFor(segments: string[], creating: boolean): DirNode | undefined {
    let dir = root;
    for (const segment of segments) {
      const node = dir.children.get(segment);
      if (node?.kind === "dir") {
        dir = node;
        continue;
      }
      if (node !== undefined && !creating) return undefined; // nothing below a removed path or a file to remove
      const next: DirNode = { kind: "dir", hidesBase: node !== undefined, children: new Map() };
      dir.children.set(segment, next);
      dir = next;
    }
    return dir;
  }

  return {
    commit: base.commit,
    readFile,
    async readText(path) {
      const bytes = await readFile(path);
      return bytes === null ? null : Buffer.from(bytes).toString("utf8");
    },
    list,
    async oid(path) {
      const { node, baseVisible } = locate(path);
      if (node?.kind === "file") return blobOid(node.content);
      return node === undefined && baseVisible ? base.oid(path) : null;
    },
    write(path, content) {
      const segments = segmentsOf(path);
      const bytes = typeof content === "string" ? Buffer.from(content, "utf8") : Uint8Array.from(content);
      dirFor(segments.slice(0, -1), true)!.children.set(segments[segments.length - 1]!, { kind: "file", content: bytes });
      edited = true;
    },
    remove(path) {
      const segments = segmentsOf(path);
      dirFor(segments.slice(0, -1), false)?.children.set(segments[segments.length - 1]!, { kind: "removed" });
      edited = true;
    },
    get changed() {
      return edited;
    },
  };
}
