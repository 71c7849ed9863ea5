import type { ClusterEntry } from "../catalog/index.js";
import type { Logger } from "../log/index.js";
import type { LiveCluster } from "./live-cluster.js";
import { sourceKinds } from "./live-status.js";
import type { StatusMode, StatusView } from "./types.js";

/**
 * The live clusters of the registry (watcher.ts): started for the registry's live entries, stopped
 * when they leave it or their kubeconfig or sync reference changes, and told which kinds the plans'
 * statuses read before the first request needs them.
 */

export interface LiveClusters {
  /** Starts and stops live clusters to match the registry, when it changed since last time. */
  reconcile(): void;
  /** Watches what the plans' statuses read on every live cluster, when the catalog or registry changed. */
  warmUp(): void;
  get(clusterId: string): LiveCluster | undefined;
  values(): IterableIterator<LiveCluster>;
  readonly size: number;
  /** Stops every cluster; none is started after. */
  close(): Promise<void>;
}

export interface LiveClustersOptions {
  view: StatusView;
  /** Mode of clusters without `spec.status.mode`. */
  defaultMode: StatusMode;
  logger: Logger;
  /** Starts watching one cluster. */
  start: (entry: ClusterEntry) => LiveCluster;
}

/** What a running cluster was started from: a change of any of it starts it anew. */
export const clusterSignature = (e: ClusterEntry): string => JSON.stringify([e.namespace, e.kubeconfig ?? null, e.sync ?? null]);

export function createLiveClusters({ view, defaultMode, logger, start }: LiveClustersOptions): LiveClusters {
  const clusters = new Map<string, { signature: string; live: LiveCluster }>();
  let knownEntries: readonly ClusterEntry[] | undefined;
  let warmed: { catalog: unknown; clusters: unknown } | undefined;
  let closed = false;

  const self: LiveClusters = {
    reconcile() {
      const entries = view.clusters();
      if (entries === knownEntries || closed) return;
      knownEntries = entries;
      const wanted = new Map(entries.filter((e) => (e.statusMode ?? defaultMode) === "live").map((e) => [e.id, e]));
      for (const [id, c] of clusters) {
        const entry = wanted.get(id);
        if (entry && clusterSignature(entry) === c.signature) continue;
        clusters.delete(id);
        c.live.stop().catch((error: unknown) => logger.error({ err: error, cluster: id }, "stopping a cluster's watches failed"));
      }
      for (const entry of wanted.values()) {
        if (!clusters.has(entry.id)) clusters.set(entry.id, { signature: clusterSignature(entry), live: start(entry) });
      }
      self.warmUp();
    },
    warmUp() {
      const catalog = view.catalog();
      if (warmed?.catalog === catalog && warmed.clusters === knownEntries) return;
      warmed = { catalog, clusters: knownEntries };
      const plans = catalog.services.flatMap((service) => service.plans.map((plan) => ({ service, plan })));
      for (const { live } of clusters.values()) {
        const kinds = sourceKinds(plans, live.entry.id, live.entry.namespace);
        live.watch("owned", kinds);
        live.watch("foreign", kinds);
      }
    },
    get: (clusterId) => clusters.get(clusterId)?.live,
    *values() {
      for (const c of clusters.values()) yield c.live;
    },
    get size() {
      return clusters.size;
    },
    async close() {
      closed = true;
      const stopping = [...clusters.values()].map((c) => c.live.stop());
      clusters.clear();
      await Promise.all(stopping);
    },
  };
  return self;
}
