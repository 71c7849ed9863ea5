import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { parse, stringify } from "yaml";
import type { RecordsCollectorOverrides } from "../../src/cli/serve.js";
import type { Config } from "../../src/config/index.js";
import { createLogger } from "../../src/log/index.js";
import { clusterNamespacePath, clusterRegistryPath, instanceRecordPath, namespaceManifest } from "../../src/repo/index.js";
import { AUTHOR, startHarness, type Harness } from "./broker-harness.js";
import { createBareRemote, createTempDir, readRemoteFile } from "./git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "./git-http-server.js";
import { startHangProxy, type HangProxy } from "./hang-proxy.js";
import { sampleCatalogFiles } from "./repo-files.js";

/**
 * A broker with stores (ADR 0027), every repository real and served over smart HTTP on loopback:
 * the control repository (the harness's) holds the catalog, the registry and cluster `local`'s
 * instances; store `eu` (a Git server of its own, so that it can fail alone) cluster `eu-1`'s,
 * store `us` (another server) `us-1`'s. Round-robin places the n-th new instance on the n-th
 * cluster in id order: eu-1, local, us-1.
 */

export interface Store {
  name: string;
  git: GitHttpServer;
  /** The bare repository (for git CLI inspection). */
  dir: string;
  url: string;
  /** With `proxied`: the TCP proxy the broker reaches the store through (to make it hang). */
  proxy?: HangProxy;
}

export interface StoresHarness {
  h: Harness;
  stores: Record<"eu" | "us", Store>;
  /** The bare repository of a store name ("control": the harness's). */
  dirOf(store: string): string;
  /** The instance's record in one repository, parsed; null when that repository has none. */
  recordIn(dir: string, instanceId: string): Promise<Record<string, any> | null>;
  /** Where the record of an instance is: every repository holding one. */
  holders(instanceId: string): Promise<string[]>;
  /** A config file for the commands (`--config`): the broker's remotes, a data directory of its own. */
  configFile(): Promise<string>;
  close(): Promise<void>;
}

export const STORE_CLUSTERS = [
  { id: "eu-1", store: "eu" },
  { id: "local", store: undefined },
  { id: "us-1", store: "us" },
] as const;

export function registryFile(cluster: { id: string; store?: string | undefined; maxInstances?: number }): string {
  return stringify({
    apiVersion: "gitops-broker.io/v1alpha1",
    kind: "Cluster",
    metadata: { name: cluster.id },
    spec: {
      namespace: "gitops-broker-instances",
      ...(cluster.store ? { store: cluster.store } : {}),
      ...(cluster.maxInstances !== undefined ? { capacity: { maxInstances: cluster.maxInstances } } : {}),
    },
  });
}

async function startStore(root: string, name: string, proxied: boolean): Promise<Store> {
  const dir = path.join(root, name);
  await mkdir(dir, { recursive: true });
  const bare = await createBareRemote(dir, `${name}.git`, { [clusterNamespacePath(`${name}-1`)]: namespaceManifest("gitops-broker-instances") });
  const git = await startGitHttpServer({ root: dir });
  if (!proxied) return { name, git, dir: bare, url: git.url(path.basename(bare)) };
  const proxy = await startHangProxy(git.port);
  return { name, git, dir: bare, url: `http://127.0.0.1:${proxy.port}/${path.basename(bare)}`, proxy };
}

async function closeStore(store: Store): Promise<void> {
  await store.proxy?.close();
  await store.git.close();
}

export interface StoresHarnessOptions {
  configure?: (config: Config) => void;
  records?: RecordsCollectorOverrides;
  /** Reach each store through a HangProxy (`stores.<name>.proxy`). */
  proxied?: boolean;
  /** Runs after the stores' remotes started, before the first broker (e.g. to take one down). */
  beforeBroker?: (stores: Record<"eu" | "us", Store>) => Promise<void>;
}

export async function startStoresHarness(options: StoresHarnessOptions = {}): Promise<StoresHarness> {
  const root = await createTempDir("gitops-broker-stores-");
  const started: Store[] = [];
  try {
    const stores = { eu: await startStore(root, "eu", options.proxied ?? false), us: await startStore(root, "us", options.proxied ?? false) };
    started.push(stores.eu, stores.us);
    await options.beforeBroker?.(stores);
    const storeConfig = (): Config["stores"] => ({
      eu: { remote: stores.eu.url, branch: "main", minPushIntervalSeconds: 0, pollIntervalSeconds: 3600 },
      us: { remote: stores.us.url, branch: "main", minPushIntervalSeconds: 0, pollIntervalSeconds: 3600 },
    });
    const files: Record<string, string> = { ...(await sampleCatalogFiles()), [clusterNamespacePath("local")]: namespaceManifest("gitops-broker-instances") };
    for (const c of STORE_CLUSTERS) files[clusterRegistryPath(c.id)] = registryFile(c);
    const h = await startHarness({
      scheduler: "round-robin",
      files,
      configure: (config) => {
        config.stores = storeConfig();
        options.configure?.(config);
      },
      ...(process.env.STORES_DEBUG ? { logger: createLogger({ level: "debug" }) } : {}),
      ...(options.records ? { records: options.records } : {}),
    });
    const dirOf = (store: string) => (store === "control" ? h.remoteDir : stores[store as "eu" | "us"].dir);
    const recordIn = async (dir: string, instanceId: string) => {
      const text = await readRemoteFile(dir, "main", instanceRecordPath(instanceId));
      return text === null ? null : (parse(text) as Record<string, any>);
    };
    return {
      h,
      stores,
      dirOf,
      recordIn,
      async holders(instanceId) {
        const names = ["control", "eu", "us"];
        const found = await Promise.all(names.map((n) => recordIn(dirOf(n), instanceId)));
        return names.filter((_, i) => found[i] !== null);
      },
      async configFile() {
        const file = path.join(root, "cli.yaml");
        await writeFile(
          file,
          stringify({
            dataDir: path.join(root, "cli-data"),
            git: { remote: h.remoteUrl, branch: "main", author: AUTHOR },
            log: { level: "fatal" },
            stores: storeConfig(),
          }),
        );
        return file;
      },
      async close() {
        await h.close();
        for (const s of started) await closeStore(s);
        await rm(root, { recursive: true, force: true });
      },
    };
  } catch (error) {
    for (const s of started) await closeStore(s);
    await rm(root, { recursive: true, force: true });
    throw error;
  }
}
