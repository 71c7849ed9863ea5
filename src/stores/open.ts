import path from "node:path";
import type { Config } from "../config/index.js";
import { createGitWriter, type GitWriter } from "../gitwriter/index.js";
import type { Logger } from "../log/index.js";
import type { GitWriterInstruments } from "../metrics/index.js";
import { storeLabel } from "../repo/index.js";
import { createStoreSet, type StoreSet } from "./store-set.js";
import { CONTROL } from "./types.js";

export interface OpenWritersOptions {
  /** The control repository's URL (`git.remote`, or the embedded remote's path). */
  remoteUrl: string;
  /** The https tokens read at start: `git.tokenFile`'s and each store's. */
  tokens: { control: string | null; stores: ReadonlyMap<string, string | null> };
  logger: Logger;
  metrics?: GitWriterInstruments;
  confirmRejection?: (error: unknown) => boolean;
  /** The registry as the view serves it now: which store each cluster names, which take new instances. */
  clusters: () => readonly { id: string; store?: string | undefined; schedulable: boolean }[];
  /**
   * The local repositories, below the data directory: the control repository's `<prefix>.git`
   * (`work` for serve, `cli` for the commands), each store's `<prefix>-stores/<name>.git`.
   */
  localPrefix?: string;
  /** Rejected pushes of one batch before its operations fail (the writers' default: 10). */
  maxPushAttempts?: number;
  /** Every writer's background repacks wait for this (the view's first load; see GitWriterOptions.holdRepacksUntil). */
  holdRepacksUntil?: PromiseLike<unknown>;
}

/** Environment for the git CLI: ssh deploy key command, https token (via env, never argv). */
function gitEnv(sshCommand: string | undefined, token: string | null): Record<string, string> {
  const env: Record<string, string> = {};
  if (sshCommand) env.GIT_SSH_COMMAND = sshCommand;
  if (token !== null) {
    const basic = Buffer.from(`x-access-token:${token}`).toString("base64");
    env.GIT_CONFIG_COUNT = "1";
    env.GIT_CONFIG_KEY_0 = "http.extraHeader";
    env.GIT_CONFIG_VALUE_0 = `Authorization: Basic ${basic}`;
  }
  return env;
}

/**
 * The control repository's writer and, with `stores` configured, one writer per store behind a
 * store set (ADR 0027). Every writer keeps its own local repository under the data directory and
 * its own credentials, pacing and poll interval. Not started.
 */
export function openWriters(config: Config, options: OpenWritersOptions): { writer: GitWriter; storeSet?: StoreSet } {
  const { logger, localPrefix = "work" } = options;
  const common = {
    author: config.git.author,
    ...(options.metrics ? { metrics: options.metrics } : {}),
    remoteTimeoutMs: config.git.pushTimeoutSeconds * 1000,
    activityTimeoutMs: config.git.activityTimeoutSeconds * 1000,
    ...(options.confirmRejection ? { confirmRejection: options.confirmRejection } : {}),
    ...(options.maxPushAttempts !== undefined ? { maxPushAttempts: options.maxPushAttempts } : {}),
    ...(options.holdRepacksUntil ? { holdRepacksUntil: options.holdRepacksUntil } : {}),
  };
  const control = createGitWriter({
    ...common,
    gitdir: path.join(config.dataDir, `${localPrefix}.git`),
    remoteUrl: options.remoteUrl,
    branch: config.git.branch,
    logger: logger.child({ component: "gitwriter" }),
    gitEnv: gitEnv(config.git.sshCommand, options.tokens.control),
    minPushIntervalMs: config.git.minPushIntervalSeconds * 1000,
    repository: storeLabel(CONTROL),
  });
  const names = Object.keys(config.stores).sort();
  if (names.length === 0) return { writer: control };
  const stores = new Map<string, GitWriter>();
  for (const name of names) {
    const store = config.stores[name]!;
    stores.set(
      name,
      createGitWriter({
        ...common,
        gitdir: path.join(config.dataDir, `${localPrefix}-stores`, `${name}.git`),
        remoteUrl: store.remote,
        branch: store.branch,
        logger: logger.child({ component: "gitwriter", store: name }),
        gitEnv: gitEnv(store.sshCommand, options.tokens.stores.get(name) ?? null),
        minPushIntervalMs: store.minPushIntervalSeconds * 1000,
        store: name,
        repository: storeLabel(name),
      }),
    );
  }
  const storeSet = createStoreSet({
    control,
    stores,
    storeOf: clusterStores(options.clusters),
    clusters: options.clusters,
    logger: logger.child({ component: "stores" }),
    startWaitMs: Math.min(config.git.pushTimeoutSeconds * 1000, 10_000),
    ...(options.metrics ? { metrics: options.metrics } : {}),
  });
  return { writer: storeSet, storeSet };
}

/** Which store a cluster is in, from the registry `clusters()` returns now (memoized per registry): CONTROL for none; undefined for a cluster not in it. */
export function clusterStores(clusters: () => readonly { id: string; store?: string | undefined }[]): (clusterId: string) => string | undefined {
  let seen: readonly { id: string; store?: string | undefined }[] | undefined;
  let byId = new Map<string, string>();
  return (clusterId) => {
    const now = clusters();
    if (now !== seen) {
      seen = now;
      byId = new Map(now.map((c) => [c.id, c.store ?? CONTROL]));
    }
    return byId.get(clusterId);
  };
}
