import path from "node:path";
import { createRepoView, type LiveRepoView } from "../catalog/index.js";
import { CHART_CACHE_DIR, RemoteCharts } from "../charts/index.js";
import { ensureDataDir, EMBEDDED_REMOTE_DIR, loadConfig, lockDataDir, type Config } from "../config/index.js";
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
  // Commands lock apart from `serve` (they have their own clone), one command at a time.
  const lock = await lockDataDir(config.dataDir, "cli");
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
    const view = createRepoView(writer, logger.child({ component: "repo-view" }), summaries, {
      remoteCharts: new RemoteCharts({ dir: path.join(config.dataDir, CHART_CACHE_DIR) }),
    });
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
        await lock.release();
      },
    };
  } catch (e) {
    await lock.release();
    throw e;
  }
}
