import { open, rm, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { createRepoView, type LiveRepoView } from "../catalog/index.js";
import { ConfigError } from "../errors/index.js";
import { ensureDataDir, EMBEDDED_REMOTE_DIR, loadConfig, type Config } from "../config/index.js";
import { createGitWriter, type GitWriter } from "../gitwriter/index.js";
import { createLogger, type Logger } from "../log/index.js";
import { createInstanceSummaryCache, type InstanceSummaryCache } from "../repo/index.js";

/**
 * Repository access for the administrative commands (`clusters`, `move`, `history`): the same
 * configuration as `serve`, and a git writer of their own on `<dataDir>/cli.git`, so they never
 * share a local repository with a running broker (whose is `<dataDir>/work.git`). Writes go
 * through the same queue semantics and push to the remote like the broker's.
 */

export interface RepoAccess {
  config: Config;
  /** The command's own local bare repository (a clone of the remote). */
  gitdir: string;
  writer: GitWriter;
  view: LiveRepoView;
  summaries: InstanceSummaryCache;
  logger: Logger;
  close(): Promise<void>;
}

export async function openRepo(configArgv: string[], options: { logLevel?: string } = {}): Promise<RepoAccess> {
  const config = await loadConfig({ argv: configArgv });
  const logger = createLogger({ level: options.logLevel ?? "warn", destination: process.stderr });
  await ensureDataDir(config.dataDir);
  const remoteUrl = config.git.remote ?? path.join(config.dataDir, EMBEDDED_REMOTE_DIR);
  const gitdir = path.join(config.dataDir, "cli.git");
  const lock = await takeLock(`${gitdir}.lock`);
  try {
    const writer = createGitWriter({
      gitdir,
      remoteUrl,
      branch: config.git.branch,
      author: config.git.author,
      logger: logger.child({ component: "gitwriter" }),
      remoteTimeoutMs: config.git.pushTimeoutSeconds * 1000,
    });
    await writer.start();
    const summaries = createInstanceSummaryCache();
    const view = createRepoView(writer, logger.child({ component: "repo-view" }), summaries);
    await view.reload();
    return {
      config,
      gitdir,
      writer,
      view,
      summaries,
      logger,
      async close() {
        view.close();
        await writer.close();
        await releaseLock(lock, `${gitdir}.lock`);
      },
    };
  } catch (e) {
    await releaseLock(lock, `${gitdir}.lock`);
    throw e;
  }
}

async function takeLock(file: string): Promise<FileHandle> {
  try {
    return await open(file, "wx", 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") {
      throw new ConfigError([
        { file, path: "", message: "another gitops-broker command is using this data directory (remove the lock file if it is stale)" },
      ]);
    }
    throw e;
  }
}

async function releaseLock(handle: FileHandle, file: string): Promise<void> {
  await handle.close();
  await rm(file, { force: true });
}
