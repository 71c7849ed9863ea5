/** What bench/naive-hooks.mjs gives src/cli/serve.ts instead of src/gitwriter: the naive writer. */
import path from "node:path";
import type { GitWriter, GitWriterOptions } from "../src/gitwriter/index.js";
import { createNaiveWriter } from "./naive-writer.js";

export function createGitWriter(options: GitWriterOptions): GitWriter {
  return createNaiveWriter({
    dir: path.join(path.dirname(options.gitdir), "naive-worktree"),
    remoteUrl: options.remoteUrl,
    branch: options.branch,
    author: options.author,
  });
}
