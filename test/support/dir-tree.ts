import * as fs from "node:fs/promises";
import * as path from "node:path";
import type { TreeReader } from "../../src/gitwriter/types.js";
import { dirTreeReader } from "../../src/repo/index.js";
import { trackedTempDir } from "./processes.js";

/**
 * Tests of code that reads the GitOps repo (catalog, registry, records) without a git
 * repository use the production TreeReader over a plain directory:
 *
 *   const tree = dirTreeReader(await createTempDir("repo-"));
 */
export { dirTreeReader };

/** Writes `files` (repo-relative path → content) below `root`, creating directories. */
export async function writeFiles(root: string, files: Record<string, string | Uint8Array>): Promise<void> {
  for (const [p, content] of Object.entries(files)) {
    const target = path.join(root, ...p.split("/"));
    await fs.mkdir(path.dirname(target), { recursive: true });
    await fs.writeFile(target, content);
  }
}

export interface TempDirTree {
  root: string;
  tree: TreeReader;
  /** writeFiles below root. */
  write(files: Record<string, string | Uint8Array>): Promise<void>;
  /** Deletes the directory: call it in afterEach. */
  remove(): Promise<void>;
}

/** A fresh temp directory with a TreeReader over it. */
export async function tempDirTree(prefix = "repo-"): Promise<TempDirTree> {
  const root = await trackedTempDir(prefix);
  return {
    root,
    tree: dirTreeReader(root),
    write: (files) => writeFiles(root, files),
    remove: () => fs.rm(root, { recursive: true, force: true }),
  };
}
