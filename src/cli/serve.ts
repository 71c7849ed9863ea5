import { readFile } from "node:fs/promises";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createApp } from "../broker/index.js";
import { createRepoView } from "../catalog/index.js";
import { createReconciler, type Reconciler } from "../reconcile/index.js";
import { loadConfig, prepareEmbedded, readStartSecrets, type Config } from "../config/index.js";
import { createGitWriter, type GitWriter } from "../gitwriter/index.js";
import { createLogger, type Logger } from "../log/index.js";
import { createInstruments, type Metrics } from "../metrics/index.js";
import { createInstanceSummaryCache } from "../repo/index.js";
import { createScheduler } from "../scheduler/index.js";
import { createStatusWatcher, type StatusWatcherOptions } from "../status-watcher/index.js";

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const SAMPLE_CATALOG_DIR = path.join(PROJECT_ROOT, "examples/catalog");
export const SAMPLE_REGISTRY_DIR = path.join(PROJECT_ROOT, "examples/registry");

export interface RunningBroker {
  url: string;
  writer: GitWriter;
  /** Re-renders on plan / override changes and on request (tests await `reconciler.idle()`). */
  reconciler: Reconciler;
  /** Stop accepting requests, finish in-flight pushes, close. */
  close(): Promise<void>;
}

/** Environment for the git CLI: ssh deploy key command, https token (via env, never argv). */
function gitEnv(config: Config, token: string | null): Record<string, string> {
  const env: Record<string, string> = {};
  if (config.git.sshCommand) env.GIT_SSH_COMMAND = config.git.sshCommand;
  if (token !== null) {
    const basic = Buffer.from(`x-access-token:${token}`).toString("base64");
    env.GIT_CONFIG_COUNT = "1";
    env.GIT_CONFIG_KEY_0 = "http.extraHeader";
    env.GIT_CONFIG_VALUE_0 = `Authorization: Basic ${basic}`;
  }
  return env;
}

/** Test and embedding hooks of the status watcher (clock, kubeconfig resolution, bind wait). */
export type StatusWatcherOverrides = Partial<Omit<StatusWatcherOptions, "view" | "writer" | "logger" | "metrics" | "defaultMode">>;

/** Start a broker from a loaded configuration. */
export async function startBroker(
  config: Config,
  options: { version: string; logger?: Logger; metrics?: Metrics; status?: StatusWatcherOverrides },
): Promise<RunningBroker> {
  const logger = options.logger ?? createLogger({ level: config.log.level });
  // Every component's instruments, from one factory (no-op until an exporter provides one).
  const instruments = createInstruments(options.metrics);
  let remoteUrl = config.git.remote;
  if (remoteUrl === null) {
    const { remoteDir } = await prepareEmbedded({
      dataDir: config.dataDir,
      catalogSource: SAMPLE_CATALOG_DIR,
      registrySource: SAMPLE_REGISTRY_DIR,
      branch: config.git.branch,
      author: config.git.author,
      log: logger.child({ component: "embedded" }),
    });
    remoteUrl = remoteDir;
    logger.info({ remote: remoteDir }, "using the embedded Git remote");
  }
  const { credentials, webhookSecret, gitToken } = await readStartSecrets({ dataDir: config.dataDir, config });
  if (credentials.generatedNow) {
    logger.warn(
      { file: credentials.generatedFile, username: credentials.username },
      "no broker password configured: generated one; read it from the file (mode 0600)",
    );
  } else if (credentials.generatedFile) {
    logger.info({ file: credentials.generatedFile, username: credentials.username }, "using the password generated at the first start");
  }

  // The writer's local repository; the history endpoint reads it through the writer (GitReader.log).
  const workGitdir = path.join(config.dataDir, "work.git");
  const writer = createGitWriter({
    gitdir: workGitdir,
    remoteUrl,
    branch: config.git.branch,
    author: config.git.author,
    logger: logger.child({ component: "gitwriter" }),
    metrics: instruments.gitwriter,
    remoteTimeoutMs: config.git.pushTimeoutSeconds * 1000,
    gitEnv: gitEnv(config, gitToken),
  });
  await writer.start();
  const summaries = createInstanceSummaryCache();
  const view = createRepoView(writer, logger.child({ component: "repo-view" }), summaries);
  await view.reload();
  // Clusters come from the view: live clusters are watched as the registry adds them, and
  // stopped when it drops them or switches them to commit mode.
  const status = createStatusWatcher({
    view,
    writer,
    logger: logger.child({ component: "status-watcher" }),
    metrics: instruments.statusWatcher,
    defaultMode: config.status.mode,
    bindTimeoutMs: config.status.bindTimeoutSeconds * 1000,
    ...options.status,
  });
  const brokerVersion = `gitops-broker/${options.version}`;
  const reconciler = createReconciler({
    writer,
    view,
    status,
    logger: logger.child({ component: "reconcile" }),
    metrics: instruments.reconcile,
    brokerVersion,
    maxPerSecond: config.reconcile.maxPerSecond,
    batchSize: config.reconcile.batchSize,
    retryMs: config.reconcile.retrySeconds * 1000,
  });
  const stopReconciling = writer.onTip((tip, previous) => reconciler.tipChanged(tip, previous));

  const app = createApp({
    writer,
    view,
    scheduler: createScheduler(config.scheduler),
    status,
    logger: logger.child({ component: "broker" }),
    metrics: instruments.broker,
    credentials: { username: credentials.username, password: credentials.password },
    brokerVersion,
    readiness: () => view.readiness(),
    summaries,
    reconcile: { reconciler, branch: config.git.branch, webhookSecret },
  });
  const server = config.tls
    ? https.createServer({ cert: await readFile(config.tls.cert), key: await readFile(config.tls.key) }, app)
    : http.createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.listen.port, config.listen.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = config.listen.host.includes(":") ? `[${config.listen.host}]` : config.listen.host;
  const url = `${config.tls ? "https" : "http"}://${host}:${port}`;
  logger.info({ url, remote: remoteUrl, branch: config.git.branch }, "gitops-broker listening");

  // Notice commits of others (humans, other replicas) even when no request comes in.
  const poll = setInterval(() => {
    writer.refresh().catch((e: unknown) => logger.warn({ err: e }, "fetching the Git remote failed"));
  }, config.git.pollIntervalSeconds * 1000);
  poll.unref();

  return {
    url,
    writer,
    reconciler,
    async close() {
      clearInterval(poll);
      stopReconciling();
      // Re-renders in flight finish; queued ones are dropped (a manual trigger redoes them).
      await reconciler.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Queued operations are pushed before the writer resolves; their HTTP responses go out then.
      await writer.close();
      server.closeIdleConnections();
      await closed;
      await status.close();
      view.close();
      logger.info("gitops-broker stopped");
    },
  };
}

/** `gitops-broker serve`: run until SIGTERM / SIGINT, then shut down gracefully. */
export async function serve(argv: string[], options: { version: string }): Promise<void> {
  const config = await loadConfig({ argv });
  const logger = createLogger({ level: config.log.level });
  const broker = await startBroker(config, { ...options, logger });
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  });
  logger.info({ signal }, "shutting down: finishing in-flight pushes");
  await broker.close();
}
