import path from "node:path";
import type { LiveRepoView } from "../catalog/index.js";
import { ensureDataDir, EMBEDDED_REMOTE_DIR, loadConfig, lockDataDir, readGitTokens, type Config } from "../config/index.js";
import type { GitWriter } from "../gitwriter/index.js";
import type { StoreSet } from "../stores/index.js";
import { openRepository, type OpenedRepository } from "./open-repository.js";
import { createLogger, type Logger } from "../log/index.js";
import type { InstanceSummaryCache } from "../repo/index.js";

/**
 * Repository access for the administrative commands (`clusters`, `move`, `history`): the same
 * configuration as `serve`, and a git writer of their own on `<dataDir>/cli.git`, so they never
 * share a local repository with a running broker (whose is `<dataDir>/work.git`; with stores,
 * `<dataDir>/cli-stores/<name>.git` beside `work-stores/`). Writes go
 * through the same queue semantics and push to the remote like the broker's.
 */

export interface RepoAccess {
  config: Config;
  /** The command's own local bare repository (a clone of the remote). */
  gitdir: string;
  /** The control repository's writer, or the store set over it and the stores (ADR 0027). */
  writer: GitWriter;
  /** With stores configured. */
  storeSet?: StoreSet;
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
    const made: { writer?: GitWriter; view?: LiveRepoView } = {};
    let opened: OpenedRepository;
    try {
      opened = await openRepository(
        config,
        {
          remoteUrl,
          tokens: await readGitTokens(config),
          logger,
          localPrefix: "cli",
          // A command's few commits compete with a serving broker's stream of them: it retries longer.
          maxPushAttempts: 100,
        },
        { writer: (w: GitWriter) => void (made.writer = w), view: (v: LiveRepoView) => void (made.view = v) },
      );
    } catch (e) {
      made.view?.close();
      await made.writer?.close().catch(() => undefined);
      throw e;
    }
    const { writer, storeSet, view, summaries } = opened;
    return {
      config,
      gitdir,
      writer,
      ...(storeSet ? { storeSet } : {}),
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
