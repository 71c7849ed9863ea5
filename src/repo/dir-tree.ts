import { createHash } from "node:crypto";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { InvalidArgumentError } from "../errors/index.js";
import type { TreeReader } from "../gitwriter/index.js";

/**
 * A TreeReader over a plain directory (a checkout of the GitOps repository, as `validate` gets it
 * in a pull request's CI). `commit` is null; `oid` is the git blob id of the file's content, as a
 * real tree would report it. Paths are repo-relative and `/`-separated; symlinks and other
 * special files are not listed.
 */
export function dirTreeReader(root: string): TreeReader {
  const resolve = (p: string): string => {
    if (p.startsWith("/") || p.split("/").includes("..")) {
      throw new InvalidArgumentError(`not a repo-relative path: ${JSON.stringify(p)}`);
    }
    return path.join(root, ...p.split("/").filter((s) => s !== ""));
  };

  const readFile = async (p: string): Promise<Uint8Array | null> => {
    try {
      return await fs.readFile(resolve(p));
    } catch (e) {
      if (isMissing(e)) return null;
      throw e;
    }
  };

  return {
    commit: null,
    readFile,
    async readText(p) {
      const bytes = await readFile(p);
      return bytes === null ? null : Buffer.from(bytes).toString("utf8");
    },
    async list(dir) {
      try {
        const entries = await fs.readdir(resolve(dir), { withFileTypes: true });
        return entries
          .filter((e) => e.isFile() || e.isDirectory())
          .map((e) => ({ name: e.name, type: e.isDirectory() ? ("tree" as const) : ("blob" as const) }))
          .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      } catch (e) {
        if (isMissing(e)) return null;
        throw e;
      }
    },
    async oid(p) {
      const bytes = await readFile(p);
      if (bytes === null) return null;
      return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
    },
  };
}

/** ENOENT / ENOTDIR / EISDIR: "not a file" (or "not a directory") rather than a failure. */
function isMissing(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  return code === "ENOENT" || code === "ENOTDIR" || code === "EISDIR";
}
