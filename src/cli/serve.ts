import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createApp, createHttpServer, isNegativeAnswer } from "../broker/index.js";
import { Registry, collectDefaultMetrics } from "prom-client";
import { fillRepoInstruments, type ReadinessCheck } from "../catalog/index.js";
import { createReconciler, createRecordsCollector, type Reconciler, type RecordsCollector, type RecordsCollectorOptions } from "../reconcile/index.js";
import {
  ensureDataDir,
  loadConfig,
  lockDataDir,
  parseSubjectPattern,
  prepareEmbedded,
  readStartSecrets,
  subjectMatcher,
  type Config,
  type StartSecrets,
  type SubjectPattern,
} from "../config/index.js";
import { ConfigError, DataDirLockedError, GitRemoteError } from "../errors/index.js";
import type { GitWriter } from "../gitwriter/index.js";
import { createLogger, type Logger } from "../log/index.js";
import { createInstruments, createPrometheusMetrics, noopMetrics, type Instruments, type Metrics, type PrometheusMetrics } from "../metrics/index.js";
import { createNudger, type Nudger, type NudgerOptions } from "../nudge/index.js";
import { CONTROL_STORE, createBindingSummaryCache } from "../repo/index.js";
import { routedWriter, type StoreSet } from "../stores/index.js";
import { openRepository, type OpenedRepository } from "./open-repository.js";
import { createScheduler } from "../scheduler/index.js";
import { brokerNamespace, createKubeConfigResolver, createSecretKeyReader } from "../kube/index.js";
import { createStatusWatcher, type StatusWatcher, type StatusWatcherOptions } from "../status-watcher/index.js";
import { createKubeLeaseClient, createLeaseElector, soleLeader, type Leadership, type LeaseClient, type LeaseElectorOptions } from "../leader/index.js";
import type { KubeConfig } from "@kubernetes/client-node";

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const SAMPLE_CATALOG_DIR = path.join(PROJECT_ROOT, "examples/catalog");
export const SAMPLE_REGISTRY_DIR = path.join(PROJECT_ROOT, "examples/registry");

export interface RunningBroker {
  url: string;
  /** URL of GET /metrics when `metrics.listen` is set. */
  metricsUrl?: string;
  writer: GitWriter;
  /** Re-renders on plan / override changes and on request (tests await `reconciler.idle()`). */
  reconciler: Reconciler;
  /** Tells Argo CD / Flux about pushes (tests await `nudger.idle()`). */
  nudger: Nudger;
  /** Records GC of deprovisioned instances (ADR 0018), started with the reconciler. */
  collector: RecordsCollector;
  /** Who does the background work (ADR 0024): this process, or the Lease's holder. */
  leadership: Leadership;
  /** Stop accepting requests, finish in-flight pushes, close. */
  close(): Promise<void>;
}

/** A subject pattern loadConfig has checked. */
function subjectPattern(text: string): SubjectPattern {
  const pattern = parseSubjectPattern(text);
  if (typeof pattern === "string") throw new ConfigError([{ file: "config", path: "tls.clientSubjects", message: pattern }]);
  return pattern;
}

/** Test and embedding hooks of the status watcher (clock, kubeconfig resolution, bind wait). */
export type StatusWatcherOverrides = Partial<Omit<StatusWatcherOptions, "view" | "writer" | "logger" | "metrics" | "defaultMode">>;

/** Test and embedding hooks of the nudger (secret reading, HTTP, timers). */
export type NudgerOverrides = Partial<Pick<NudgerOptions, "readSecret" | "fetch" | "timers" | "now" | "timeoutMs">>;

/** Test and embedding hooks of records GC (its wall clock, its waits between passes). */
export type RecordsCollectorOverrides = Partial<Pick<RecordsCollectorOptions, "now" | "delay">>;

/** Test and embedding hooks of leader election (the cluster's KubeConfig, clocks and waits). */
export type LeaderOverrides = Partial<Pick<LeaseElectorOptions, "clock" | "now" | "delay">> & { kubeConfig?: KubeConfig };

type StartOptions = {
  version: string;
  leader?: LeaderOverrides;
  logger?: Logger;
  metrics?: Metrics;
  status?: StatusWatcherOverrides;
  nudge?: NudgerOverrides;
  records?: RecordsCollectorOverrides;
};

/**
 * Start a broker from a loaded configuration. The data directory is locked first (a second
 * broker on it fails with DataDirLockedError before touching anything); when a later step fails
 * (remote unreachable, port in use) what was started is stopped and the lock released.
 */
export async function startBroker(config: Config, options: StartOptions): Promise<RunningBroker> {
  const logger = options.logger ?? createLogger({ level: config.log.level });
  await ensureDataDir(config.dataDir);
  const lock = await lockDataDir(config.dataDir, "serve", {
    onCompromised: (error) => logger.error({ err: error, dataDir: config.dataDir }, "lost the lock of the data directory"),
  });
  const shutdown = createShutdown(logger);
  try {
    const broker = await startLocked(config, { ...options, logger }, shutdown);
    return {
      ...broker,
      async close() {
        await shutdown.run();
        logger.info("gitops-broker stopped");
        await lock.release();
      },
    };
  } catch (error) {
    // What was started stops in the same order as a full stop (errors logged, not thrown).
    await shutdown.run({ halfStarted: true });
    await lock.release();
    throw error;
  }
}

/**
 * How a broker stops, in this order, written once for a full stop and for a start that failed
 * half-way (then only what was started stops): new requests refused; background work stopped (no
 * new re-render, GC pass or catch-up; the Lease handed over); the write queue pushed, so the
 * requests waiting on it get their answers; the nudges of those pushes sent; the HTTP server
 * closed once those answers went out; the status watchers stopped; the repository view closed.
 * startBroker releases the data directory's lock after the last phase.
 */
export const STOP_PHASES = ["refuse requests", "stop background work", "push the queue", "send the nudges", "close the HTTP server", "stop the watchers", "close the view"] as const;
type StopPhase = (typeof STOP_PHASES)[number];

interface Shutdown {
  /** `stop` runs in `phase`; steps of one phase run in the order they were added. */
  add(phase: StopPhase, stop: () => unknown): void;
  run(options?: { halfStarted?: boolean }): Promise<void>;
}

function createShutdown(logger: Logger): Shutdown {
  const steps = new Map<StopPhase, (() => unknown)[]>();
  let running: Promise<void> | undefined;
  async function run(halfStarted: boolean): Promise<void> {
    for (const phase of STOP_PHASES) {
      const stops = steps.get(phase);
      if (!stops) continue;
      logger.debug({ phase }, "stopping");
      for (const stop of stops) {
        try {
          await stop();
        } catch (error) {
          if (!halfStarted) throw error;
          logger.debug({ err: error, phase }, "stopping a half-started broker");
        }
      }
    }
  }
  return {
    add(phase, stop) {
      steps.set(phase, [...(steps.get(phase) ?? []), stop]);
    },
    run: ({ halfStarted = false } = {}) => (running ??= run(halfStarted)),
  };
}

type Started = StartOptions & { logger: Logger };

async function startLocked(config: Config, options: Started, shutdown: Shutdown): Promise<RunningBroker> {
  const { logger } = options;
  const { metrics, prometheus, instruments } = brokerMetrics(config, options.metrics);
  const remoteUrl = await controlRemote(config, logger);
  const secrets = await startSecrets(config, logger);
  const repo = await startRepository(config, { remoteUrl, secrets, logger, instruments, shutdown });
  const { writer, storeSet, view, summaries } = repo;
  const brokerVersion = `gitops-broker/${options.version}`;
  const delivery = startDelivery(config, options, { ...repo, remoteUrl, instruments, brokerVersion, shutdown });
  const { status } = delivery;
  const background = await startBackgroundWork(config, options, { ...repo, status, instruments, brokerVersion, shutdown });
  const bindingSummaries = createBindingSummaryCache();
  metrics.onCollect(() => fillRepoInstruments(view, writer.snapshot(), summaries, bindingSummaries, instruments.repo));

  const app = createApp({
    writer,
    ...(storeSet ? { stores: storeSet } : {}),
    view,
    scheduler: createScheduler(config.scheduler),
    status,
    logger: logger.child({ component: "broker" }),
    metrics: instruments.broker,
    credentials: { username: secrets.credentials.username, password: secrets.credentials.password },
    ...(config.auth.mode !== "basic"
      ? { clientCertificates: { mode: config.auth.mode, allows: subjectMatcher(config.tls?.clientSubjects.map(subjectPattern) ?? []) } }
      : {}),
    brokerVersion,
    readiness: async () => [...(await view.readiness()), ...storeReadiness(storeSet), { name: "leader", ok: true, message: background.leadership.describe() }],
    summaries,
    reconcile: {
      reconciler: background.reconciler,
      branch: config.git.branch,
      webhookSecret: secrets.webhookSecret,
      stores: Object.entries(config.stores).map(([name, store]) => ({ name, remote: store.remote, branch: store.branch })),
    },
  });
  const url = await listen(config, app, logger, shutdown);
  logger.info({ url, remote: remoteUrl, branch: config.git.branch }, "gitops-broker listening");
  const metricsServer = prometheus && config.metrics.listen ? await serveMetrics(prometheus, config.metrics.listen, logger) : undefined;
  const polls = startPolling(config, writer, storeSet, logger);
  shutdown.add("refuse requests", async () => {
    for (const poll of polls) clearInterval(poll);
    await metricsServer?.close();
  });

  return {
    url,
    ...(metricsServer ? { metricsUrl: metricsServer.url } : {}),
    writer,
    reconciler: background.reconciler,
    nudger: delivery.nudger,
    collector: background.collector,
    leadership: background.leadership,
    close: () => shutdown.run(),
  };
}

/**
 * With metrics.listen, a prom-client Registry of this broker's own (never the global one), with
 * Node's process metrics; else the caller's factory, or none. Every component's instruments come
 * from one factory.
 */
function brokerMetrics(config: Config, given: Metrics | undefined): { metrics: Metrics; prometheus?: PrometheusMetrics; instruments: Instruments } {
  let prometheus: PrometheusMetrics | undefined;
  if (config.metrics.listen && !given) {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    prometheus = createPrometheusMetrics(registry);
  }
  const metrics = given ?? prometheus ?? noopMetrics;
  return { metrics, ...(prometheus ? { prometheus } : {}), instruments: createInstruments(metrics) };
}

/** `git.remote`, or the embedded remote seeded with the sample catalog. */
async function controlRemote(config: Config, logger: Logger): Promise<string> {
  if (config.git.remote !== null) return config.git.remote;
  const { remoteDir } = await prepareEmbedded({
    dataDir: config.dataDir,
    catalogSource: SAMPLE_CATALOG_DIR,
    registrySource: SAMPLE_REGISTRY_DIR,
    branch: config.git.branch,
    author: config.git.author,
    log: logger.child({ component: "embedded" }),
  });
  logger.info({ remote: remoteDir }, "using the embedded Git remote");
  return remoteDir;
}

async function startSecrets(config: Config, logger: Logger): Promise<StartSecrets> {
  const secrets = await readStartSecrets({ dataDir: config.dataDir, config });
  const { credentials } = secrets;
  if (credentials.generatedNow) {
    logger.warn(
      { file: credentials.generatedFile, username: credentials.username },
      "no broker password configured: generated one; read it from the file (mode 0600)",
    );
  } else if (credentials.generatedFile) {
    logger.info({ file: credentials.generatedFile, username: credentials.username }, "using the password generated at the first start");
  }
  return secrets;
}

type Repository = OpenedRepository;

/** The writers (the control repository's, and the stores' behind a store set) and the repository view, loaded. */
async function startRepository(
  config: Config,
  deps: { remoteUrl: string; secrets: StartSecrets; logger: Logger; instruments: Instruments; shutdown: Shutdown },
): Promise<Repository> {
  const { logger, secrets, shutdown } = deps;
  return openRepository(
    config,
    {
      remoteUrl: deps.remoteUrl,
      tokens: { control: secrets.gitToken, stores: secrets.storeTokens },
      logger,
      metrics: deps.instruments.gitwriter,
      // "Gone", "not found", "conflict" only from a view fetched after the request arrived (ADR 0012).
      confirmRejection: isNegativeAnswer,
    },
    {
      // Queued operations are pushed before the writer resolves; their HTTP responses go out then.
      writer: (writer) => shutdown.add("push the queue", () => writer.close()),
      view: (view) => shutdown.add("close the view", () => view.close()),
    },
  );
}

/**
 * The status watcher (clusters come from the view: live clusters are watched as the registry adds
 * them, and stopped when it drops them or switches them to commit mode) and, after each push, the
 * nudges of the agents of the clusters it changed (those whose registry entry asks for it).
 */
function startDelivery(
  config: Config,
  options: Started,
  deps: Repository & { remoteUrl: string; instruments: Instruments; brokerVersion: string; shutdown: Shutdown },
): { status: StatusWatcher; nudger: Nudger } {
  const { logger } = options;
  const { writer, view, instruments, shutdown } = deps;
  const kubeConfigFor = options.status?.kubeConfigFor ?? createKubeConfigResolver();
  const status = createStatusWatcher({
    view,
    writer,
    logger: logger.child({ component: "status-watcher" }),
    metrics: instruments.statusWatcher,
    defaultMode: config.status.mode,
    bindTimeoutMs: config.status.bindTimeoutSeconds * 1000,
    syncTimeoutMs: config.status.syncTimeoutSeconds * 1000,
    acknowledgeBoundMs: config.git.pushTimeoutSeconds * 1000,
    ...options.status,
    kubeConfigFor,
  });
  shutdown.add("stop the watchers", () => status.close());
  const nudger = createNudger({
    clusters: () => view.clusters(),
    kubeConfigFor,
    readSecret: createSecretKeyReader(),
    remoteUrl: deps.remoteUrl,
    storeRemotes: new Map(Object.entries(config.stores).map(([name, store]) => [name, store.remote])),
    userAgent: deps.brokerVersion,
    logger: logger.child({ component: "nudge" }),
    metrics: instruments.nudge,
    ...options.nudge,
  });
  // Each store's pushes name its repository (ADR 0027): the nudger hears them per writer.
  const stops = deps.storeSet
    ? deps.storeSet.names.map((name) => deps.storeSet!.writer(name).onPushed((event) => nudger.pushed(event, name === CONTROL_STORE ? undefined : name)))
    : [writer.onPushed((event) => nudger.pushed(event))];
  const stopNudging = () => stops.forEach((stop) => stop());
  shutdown.add("send the nudges", () => {
    stopNudging();
    return nudger.close();
  });
  return { status, nudger };
}

/**
 * Re-renders (on tip changes, and the catch-up after a start) and records GC, run by the leader
 * only (ADR 0024); without leader election this process always leads.
 */
async function startBackgroundWork(
  config: Config,
  options: Started,
  deps: Repository & { status: StatusWatcher; instruments: Instruments; brokerVersion: string; shutdown: Shutdown },
): Promise<{ reconciler: Reconciler; collector: RecordsCollector; leadership: Leadership }> {
  const { logger } = options;
  const { writer, storeSet, view, status, instruments, brokerVersion, shutdown } = deps;
  const reconciler = createReconciler({
    writer,
    routed: routedWriter(writer, storeSet),
    view,
    status,
    logger: logger.child({ component: "reconcile" }),
    metrics: instruments.reconcile,
    brokerVersion,
    maxPerSecond: config.reconcile.maxPerSecond,
    batchSize: config.reconcile.batchSize,
    retryMs: config.reconcile.retrySeconds * 1000,
  });
  // Records GC per repository: a pass removes records and manifests of one store in one commit.
  const collector = createRecordsCollectors(storeSet ? storeSet.names.map((name) => storeSet.writer(name)) : [writer], {
    status,
    logger: logger.child({ component: "records-gc" }),
    metrics: instruments.records,
    brokerVersion,
    retentionDays: config.records.retentionDays,
    intervalMs: config.records.gcIntervalSeconds * 1000,
    batchSize: config.records.gcBatchSize,
    ...options.records,
  });
  // Closed even when the start fails before leadership: what feeds them is stopped first, once it exists.
  let stopFeeding: () => Promise<void> = () => Promise.resolve();
  shutdown.add("stop background work", async () => {
    await stopFeeding();
    // Re-renders in flight finish; queued ones are dropped (a manual trigger redoes them).
    await reconciler.close();
    // A GC pass in flight finishes (its commit is small); the next one would start over anyway.
    await collector.close();
  });
  const leadership = await startLeadership(config, { logger, metrics: instruments.leader, ...options.leader });
  // The next leader takes over at once instead of after the lease duration (after the work above stopped).
  shutdown.add("stop background work", () => leadership.close());
  const stopReconciling = writer.onTip((tip, previous) => {
    if (leadership.isLeader()) reconciler.tipChanged(tip, previous);
  });
  let turns: Promise<void> = Promise.resolve();
  const lead = (leading: boolean): void => {
    turns = turns.then(async () => {
      if (leading) {
        collector.start();
        // Plan changes merged while no broker (or no leader) ran: re-render what they left behind (rate-limited, in the background).
        reconciler.catchUp().catch(() => undefined); // logged by the reconciler
      } else {
        await collector.stop();
        await reconciler.drop();
      }
    });
  };
  const stopLeading = leadership.onChange(lead);
  stopFeeding = async () => {
    stopReconciling();
    stopLeading();
    await turns;
  };
  if (leadership.isLeader()) lead(true);
  return { reconciler, collector, leadership };
}

/** The OSB server, listening; its URL. New connections are refused first on shutdown, the server closed once the queue's answers went out. */
async function listen(config: Config, app: ReturnType<typeof createApp>, logger: Logger, shutdown: Shutdown): Promise<string> {
  const server = createHttpServer(app, config.http, {
    ...(config.tls
      ? {
          tls: {
            cert: await readFile(config.tls.cert),
            key: await readFile(config.tls.key),
            ...(config.tls.clientCa !== null ? { clientCa: await readFile(config.tls.clientCa) } : {}),
          },
        }
      : {}),
    logger: logger.child({ component: "http" }),
  });
  // Idle keep-alive connections are closed when the server closes.
  let closed: Promise<void> | undefined;
  const refuse = () => (closed ??= new Promise<void>((resolve) => server.close(() => resolve())));
  shutdown.add("refuse requests", () => void refuse());
  shutdown.add("close the HTTP server", () => {
    server.closeIdleConnections();
    return refuse();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.listen.port, config.listen.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = config.listen.host.includes(":") ? `[${config.listen.host}]` : config.listen.host;
  return `${config.tls ? "https" : "http"}://${host}:${port}`;
}

/**
 * Notice commits of others (humans, other replicas) even when no request comes in: each
 * repository on its own interval (a store that does not answer delays no other).
 */
function startPolling(config: Config, writer: GitWriter, storeSet: StoreSet | undefined, logger: Logger): NodeJS.Timeout[] {
  const polled = storeSet
    ? storeSet.names.map((name) => ({ name, writer: storeSet.writer(name), seconds: config.stores[name]?.pollIntervalSeconds ?? config.git.pollIntervalSeconds }))
    : [{ name: CONTROL_STORE, writer, seconds: config.git.pollIntervalSeconds }];
  return polled.map(({ name, writer: w, seconds }) => {
    const poll = setInterval(() => {
      // A store that has not answered since start is retried by its start, not polled.
      if (storeSet && !storeSet.available(name)) return;
      w.refresh().catch((e: unknown) => logger.warn({ err: e, store: name }, "fetching the Git remote failed"));
    }, seconds * 1000);
    poll.unref();
    return poll;
  });
}

/**
 * Leader election on a Lease in the broker's own cluster when configured, else this process leads
 * (the embedded default, a single broker outside Kubernetes: nothing changes).
 */
async function startLeadership(
  config: Config,
  options: LeaderOverrides & { logger: Logger; metrics: ReturnType<typeof createInstruments>["leader"] },
): Promise<Leadership> {
  const election = config.leaderElection;
  const identity = election.identity ?? `${os.hostname()}_${randomUUID().slice(0, 8)}`;
  if (!election.enabled) return soleLeader(identity, options.metrics);
  let lease: { namespace: string; client: LeaseClient };
  try {
    const kubeConfig = options.kubeConfig ?? (await createSecretKeyReader().home());
    const namespace = election.namespace ?? brokerNamespace(kubeConfig);
    // A kubeconfig that loads but names no cluster fails here, as the client is made.
    lease = { namespace, client: createKubeLeaseClient({ kubeConfig, namespace, name: election.leaseName }) };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new ConfigError([{ file: "config", path: "leaderElection.enabled", message: `needs the cluster's API, but its kubeconfig does not load: ${message}` }], { cause: error });
  }
  const { namespace, client } = lease;
  const logger = options.logger.child({ component: "leader" });
  logger.info({ lease: `${namespace}/${election.leaseName}`, identity }, "leader election: background work waits for the Lease");
  return createLeaseElector({
    client,
    name: election.leaseName,
    namespace,
    identity,
    leaseDurationMs: election.leaseDurationSeconds * 1000,
    renewDeadlineMs: election.renewDeadlineSeconds * 1000,
    retryPeriodMs: election.retryPeriodSeconds * 1000,
    logger,
    metrics: options.metrics,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.now ? { now: options.now } : {}),
    ...(options.delay ? { delay: options.delay } : {}),
  });
}

/**
 * The Prometheus endpoint on its own port: GET /metrics only, plain HTTP, no credentials (the
 * OSB port keeps its basic auth and TLS; keep this one where only Prometheus reaches it).
 */
async function serveMetrics(
  prometheus: PrometheusMetrics,
  listen: { host: string; port: number },
  logger: Logger,
): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const pathname = (req.url ?? "/").split("?")[0];
    if (pathname !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found: GET /metrics\n");
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain" }).end("method not allowed\n");
      return;
    }
    prometheus.exposition().then(
      (text) => res.writeHead(200, { "content-type": prometheus.contentType }).end(req.method === "HEAD" ? undefined : text),
      (e: unknown) => {
        logger.error({ err: e }, "collecting metrics failed");
        res.writeHead(500, { "content-type": "text/plain" }).end("collecting metrics failed\n");
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(listen.port, listen.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = listen.host.includes(":") ? `[${listen.host}]` : listen.host;
  const url = `http://${host}:${port}/metrics`;
  logger.info({ url }, "metrics served");
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * Why a start failed, when it is the operator's to fix (another broker on the data directory, the
 * port taken, the remote unreachable): one log line without a stack, exit code 2.
 */
function startFailure(error: unknown): { code: string; message: string; fields: Record<string, unknown> } | undefined {
  if (error instanceof DataDirLockedError) return { code: error.code, message: error.message, fields: error.data };
  if (error instanceof GitRemoteError) {
    // Only the control repository stops a start (a store that does not answer is served as unavailable).
    const remote = error.repository ? `the Git remote of ${error.repository}` : "the Git remote";
    return { code: error.code, message: `cannot reach ${remote} at start-up: ${error.remoteMessage}`, fields: { kind: error.kind, repository: error.repository } };
  }
  const errno = (error as NodeJS.ErrnoException | null)?.code;
  if (errno === "EADDRINUSE" || errno === "EACCES" || errno === "EADDRNOTAVAIL") {
    const { address, port } = error as { address?: string; port?: number };
    const what = errno === "EADDRINUSE" ? "is in use" : errno === "EACCES" ? "is not allowed" : "is not an address of this machine";
    return { code: errno, message: `cannot listen on ${address ?? "?"}:${port ?? "?"}: the address ${what}`, fields: { address, port } };
  }
  return undefined;
}

/** `gitops-broker serve`: run until SIGTERM / SIGINT, then shut down gracefully. Resolves with the exit code. */
export async function serve(argv: string[], options: { version: string }): Promise<number> {
  const config = await loadConfig({ argv });
  const logger = createLogger({ level: config.log.level });
  let broker: RunningBroker;
  try {
    broker = await startBroker(config, { ...options, logger });
  } catch (error) {
    // Configuration problems (secret files included) are the command line's: all of them on
    // stderr, exit 2 (see cli/args.ts).
    if (error instanceof ConfigError) throw error;
    const failure = startFailure(error);
    if (failure === undefined) {
      logger.fatal({ err: error }, "gitops-broker failed to start");
      return 1;
    }
    logger.fatal({ code: failure.code, ...failure.fields }, failure.message);
    return 2;
  }
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  });
  logger.info({ signal }, "shutting down: finishing in-flight pushes");
  await broker.close();
  return 0;
}

/**
 * A /readyz line per store (not the control repository's, which has its own): a warning, since
 * a store that does not answer fails only the requests for its clusters (503), never the others.
 */
function storeReadiness(storeSet: StoreSet | undefined): ReadinessCheck[] {
  if (!storeSet) return [];
  return storeSet
    .health()
    .filter((h) => h.name !== CONTROL_STORE)
    .map((h) => ({ name: `store ${h.name}`, ok: h.reachable, ...(h.reachable ? {} : { severity: "warning" as const, message: h.trouble }) }));
}

/** Records GC of several repositories as one collector (each pass removes records of one store per commit). */
function createRecordsCollectors(writers: GitWriter[], options: Omit<RecordsCollectorOptions, "writer">): RecordsCollector {
  const collectors = writers.map((writer) => createRecordsCollector({ ...options, writer }));
  return {
    start: () => collectors.forEach((c) => c.start()),
    stop: async () => {
      await Promise.all(collectors.map((c) => c.stop()));
    },
    collect: async () => (await Promise.all(collectors.map((c) => c.collect()))).flat(),
    close: async () => {
      await Promise.all(collectors.map((c) => c.close()));
    },
  };
}
