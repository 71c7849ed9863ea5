/**
 * What bench/naive-hooks.mjs gives src/ instead of src/gitwriter: the same module, except that
 * createGitWriter makes the naive writer.
 */
import path from "node:path";
import type { GitWriter, GitWriterOptions } from "../src/gitwriter/index.js";
import { createNaiveWriter } from "./naive-writer.js";

export * from "../src/gitwriter/index.js";

/** The log line a naive broker writes once its writer started: the benchmark checks it is there. */
export const NAIVE_STARTED = "naive writer started";

export function createGitWriter(options: GitWriterOptions): GitWriter {
  const writer = createNaiveWriter({
    dir: path.join(path.dirname(options.gitdir), "naive-worktree"),
    remoteUrl: options.remoteUrl,
    branch: options.branch,
    author: options.author,
  });
  options.logger.info({ dir: path.dirname(options.gitdir) }, NAIVE_STARTED);
  return writer;
}
