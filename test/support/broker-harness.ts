import { rm } from "node:fs/promises";
import path from "node:path";
import { SAMPLE_CATALOG_DIR, SAMPLE_REGISTRY_DIR, startBroker, type RecordsCollectorOverrides, type RunningBroker } from "../../src/cli/serve.js";
import { EMBEDDED_REMOTE_DIR, prepareEmbedded, type Config } from "../../src/config/index.js";
import { silentLogger, type Logger } from "../../src/log/index.js";
import { copyOfTemplate, createBareRemote, createTempDir } from "./git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "./git-http-server.js";
import { osbClient, type OsbClient } from "./osb-client.js";

/**
 * A real broker (the production wiring of `gitops-broker serve`, in process) on 127.0.0.1:0,
 * writing to a bare remote seeded with the sample catalog and served over smart HTTP on loopback.
 */

export const CREDENTIALS = { username: "broker", password: "test-password-1234" };
export const AUTHOR = { name: "gitops-broker test", email: "test@gitops-broker.invalid" };

export interface Harness {
  root: string;
  /** Directory of the bare remote (for git CLI inspection). */
  remoteDir: string;
  /** Smart-HTTP URL of the remote. */
  remoteUrl: string;
  /** The smart-HTTP server (its `requests` count fetches and pushes). */
  git: GitHttpServer;
  broker: RunningBroker;
  osb: OsbClient;
  /** Start another broker (own data dir) on the same remote. */
  startReplica(name: string): Promise<{ broker: RunningBroker; osb: OsbClient }>;
  close(): Promise<void>;
}

export function testConfig(
  root: string,
  name: string,
  remoteUrl: string,
  overrides: Partial<Config["git"]> = {},
  scheduler: Config["scheduler"]["type"] = "single",
): Config {
  return {
    listen: { host: "127.0.0.1", port: 0 },
    http: { headersTimeoutSeconds: 10, requestTimeoutSeconds: 30, idleTimeoutSeconds: 5, maxConnectionsPerClient: 256, trustedProxies: [], maxConnectionsPerProxy: 4096 },
    dataDir: path.join(root, name),
    git: {
      remote: remoteUrl,
      branch: "main",
      author: AUTHOR,
      // The product's default: a push or fetch on a machine loaded 15 times over took longer than
      // 10 s, and the operations behind it were refused as if the remote were down (ADR 0019).
      pushTimeoutSeconds: 30,
      activityTimeoutSeconds: 5,
      pollIntervalSeconds: 3600,
      minPushIntervalSeconds: 0,
      ...overrides,
    },
    auth: { mode: "basic", username: CREDENTIALS.username, password: CREDENTIALS.password, passwordFile: null },
    tls: null,
    log: { level: "fatal" },
    status: { mode: "commit", bindTimeoutSeconds: 10, syncTimeoutSeconds: 60 },
    scheduler: { type: scheduler },
    webhook: { secret: null, secretFile: null },
    reconcile: { maxPerSecond: 1000, batchSize: 4, retrySeconds: 30 },
    records: { retentionDays: 90, gcIntervalSeconds: 60, gcBatchSize: 100 },
    metrics: { listen: null },
    leaderElection: { enabled: false, leaseName: "gitops-broker", namespace: null, identity: null, leaseDurationSeconds: 15, renewDeadlineSeconds: 10, retryPeriodSeconds: 2 },
    stores: {},
  };
}

export interface HarnessOptions {
  /** Seed the remote with exactly these files instead of the embedded default's sample. */
  files?: Record<string, string>;
  scheduler?: Config["scheduler"]["type"];
  /** Changes to the configuration of the brokers (webhook secret, reconcile limits). */
  configure?: (config: Config) => void;
  /** The first broker's logger (default: silent). */
  logger?: Logger;
  /** The first broker's records GC clock and waits (default: the system's). */
  records?: RecordsCollectorOverrides;
  /** Where `osb` sends OSB requests (default /v2; see OSB_BASES). */
  osbBase?: string;
}

/**
 * A copy of the remote `gitops-broker serve` seeds with the sample catalog when it has no
 * configuration (`prepareEmbedded`, once per worker), in `<dir>/remote.git`. The seed's date is
 * fixed, so every copy holds the same commit.
 */
function sampleRemote(dir: string): Promise<string> {
  const make = async (dataDir: string) =>
    (
      await prepareEmbedded({
        dataDir,
        catalogSource: SAMPLE_CATALOG_DIR,
        registrySource: SAMPLE_REGISTRY_DIR,
        branch: "main",
        author: AUTHOR,
        now: () => new Date("2026-01-01T00:00:00Z"),
        log: silentLogger(),
      })
    ).remoteDir;
  return copyOfTemplate("the embedded sample", make, path.join(dir, EMBEDDED_REMOTE_DIR));
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const root = await createTempDir("gitops-broker-test-");
  const remotes = path.join(root, "remotes");
  const remoteDir = options.files ? await createBareRemote(remotes, "remote.git", options.files) : await sampleRemote(remotes);
  const git = await startGitHttpServer({ root: remotes });
  const remoteUrl = git.url(path.basename(remoteDir));
  const started: RunningBroker[] = [];

  async function start(name: string, logger: Logger = silentLogger(), records?: RecordsCollectorOverrides) {
    const config = testConfig(root, name, remoteUrl, {}, options.scheduler);
    options.configure?.(config);
    const broker = await startBroker(config, { version: "test", logger, ...(records ? { records } : {}) });
    started.push(broker);
    return { broker, osb: osbClient(broker.url, CREDENTIALS, options.osbBase) };
  }

  const first = await start("broker-1", options.logger, options.records);
  return {
    root,
    remoteDir,
    remoteUrl,
    git,
    broker: first.broker,
    osb: first.osb,
    startReplica: (name) => start(name),
    async close() {
      for (const b of started.reverse()) await b.close();
      await git.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}
