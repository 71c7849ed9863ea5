import { describe, expect, it } from "vitest";
import type { Catalog, ClusterEntry } from "../catalog/index.js";
import { createLogger } from "../log/index.js";
import type { LiveCluster } from "./live-cluster.js";
import { createLiveClusters } from "./live-clusters.js";

/** A stand-in for a started cluster: records what it is asked to watch and whether it was stopped. */
interface Started {
  entry: ClusterEntry;
  watched: string[];
  stopped: boolean;
}

function setUp(entries: ClusterEntry[], defaultMode: "live" | "commit" = "live", stopFails: string[] = []) {
  let registry: readonly ClusterEntry[] = entries;
  let catalog = { services: [] } as unknown as Catalog;
  const started: Started[] = [];
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) } });
  const clusters = createLiveClusters({
    view: { catalog: () => catalog, clusters: () => registry },
    defaultMode,
    logger,
    start: (entry) => {
      const s: Started = { entry, watched: [], stopped: false };
      started.push(s);
      return {
        entry,
        watch: (role: string) => void s.watched.push(role),
        stop: async () => {
          s.stopped = true;
          if (stopFails.includes(entry.id)) throw new Error("stop failed");
        },
      } as unknown as LiveCluster;
    },
  });
  return {
    clusters,
    started,
    lines,
    setRegistry: (next: ClusterEntry[]) => (registry = next),
    newCatalog: () => (catalog = { services: [] } as unknown as Catalog),
  };
}

const entry = (id: string, more: Partial<ClusterEntry> = {}) => ({ id, namespace: "pg", ...more }) as ClusterEntry;
const sync = { kind: "argocd", name: "east", namespace: "argocd" } as const;

describe("the live clusters of the registry", () => {
  it("starts the clusters in live mode (their own, else the default) and none in commit mode", () => {
    const { clusters, started } = setUp([entry("east"), entry("plain", { statusMode: "commit" }), entry("north", { statusMode: "live" })]);
    clusters.reconcile();
    expect(started.map((s) => s.entry.id)).toEqual(["east", "north"]);
    expect(clusters.size).toBe(2);
    expect(clusters.get("east")?.entry.id).toBe("east");
    expect(clusters.get("plain")).toBeUndefined();

    const commit = setUp([entry("east"), entry("north", { statusMode: "live" })], "commit");
    commit.clusters.reconcile();
    expect(commit.started.map((s) => s.entry.id)).toEqual(["north"]);
  });

  it("keeps a cluster whose namespace, kubeconfig and sync are unchanged; restarts one where they changed; stops one that left", () => {
    const { clusters, started, setRegistry } = setUp([entry("east", { sync }), entry("west")]);
    clusters.reconcile();
    setRegistry([entry("east", { sync, labels: { zone: "a" } }), entry("west", { sync: { ...sync, name: "west" } })]);
    clusters.reconcile();
    expect(started.map((s) => `${s.entry.id}${s.stopped ? " stopped" : ""}`)).toEqual(["east", "west stopped", "west"]);
    setRegistry([entry("west", { sync: { ...sync, name: "west" } })]);
    clusters.reconcile();
    expect(started.map((s) => `${s.entry.id}${s.stopped ? " stopped" : ""}`)).toEqual(["east stopped", "west stopped", "west"]);
    expect([...clusters.values()].map((l) => l.entry.id)).toEqual(["west"]);
  });

  it("asks every cluster to watch what the statuses read, again only when the catalog or the registry changed", () => {
    const { clusters, started, newCatalog, setRegistry } = setUp([entry("east")]);
    clusters.reconcile();
    clusters.warmUp();
    expect(started[0]!.watched).toEqual(["owned", "foreign"]);
    newCatalog();
    clusters.warmUp();
    expect(started[0]!.watched).toEqual(["owned", "foreign", "owned", "foreign"]);
    setRegistry([entry("east")]);
    clusters.reconcile();
    expect(started[0]!.watched).toHaveLength(6);
  });

  it("close stops every cluster and starts none after; a stop that fails is logged", async () => {
    const { clusters, started, setRegistry, lines } = setUp([entry("east"), entry("west")], "live", ["west"]);
    clusters.reconcile();
    setRegistry([entry("east")]);
    clusters.reconcile();
    await expect.poll(() => lines.some((l) => l.msg === "stopping a cluster's watches failed" && l.cluster === "west")).toBe(true);
    await clusters.close();
    expect(started.every((s) => s.stopped)).toBe(true);
    expect(clusters.size).toBe(0);
    setRegistry([entry("north")]);
    clusters.reconcile();
    expect(started.map((s) => s.entry.id)).toEqual(["east", "west"]);
  });
});
