/**
 * The import's plan does not depend on how many instances are planned at a time or on how many
 * workers render them (planImport's `concurrency`, render's setModuleWorkers): planned one at a
 * time on one worker and eight at a time on three workers, a landscape with bound, unbound,
 * skipped and refused instances gives the same plan, in the same order, with the same files; only
 * the operation ids differ (taken from `newId` in the order the instances are rendered).
 */
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCatalog, loadClusters } from "../../src/catalog/index.js";
import { clusterClient, planImport, planText, readLandscape, type ImportPlan, type Landscape } from "../../src/import/index.js";
import { createGitWriter, type TreeReader } from "../../src/gitwriter/index.js";
import { silentLogger } from "../../src/log/index.js";
import { setModuleWorkers } from "../../src/render/index.js";
import { AUTHOR } from "../support/broker-harness.js";
import { trackedTempDir } from "../support/processes.js";
import type { KubeApiServer } from "../support/kube-api-server.js";
import { startImportLandscape, type ImportLandscape, type SfInstanceSpec } from "../support/service-fabrik-landscape.js";

const LANDSCAPE: SfInstanceSpec[] = Array.from({ length: 24 }, (_, i) => ({
  id: `c-${String(i).padStart(2, "0")}`,
  clusterId: i % 3 === 0 ? "west" : "east",
  ...(i % 4 === 0 ? { bindings: [{ id: `c-${i}-b1` }, { id: `c-${i}-b2` }] } : i % 4 === 1 ? { bindings: [{ id: `c-${i}-b` }] } : {}),
  ...(i === 5 ? { state: "in progress" } : i === 6 ? { planId: "unknown-plan" } : i === 7 ? { renamed: true } : i === 9 ? { drift: { patroni: { ttl: 30 } } } : {}),
}));

let land: ImportLandscape;
let landscape: Landscape;
let tip: TreeReader;

beforeAll(async () => {
  land = await startImportLandscape("sf-plan-concurrency-", LANDSCAPE);
  const client = (server: KubeApiServer) => clusterClient(server.loadKubeConfig(), "test");
  const sisters: Record<string, KubeApiServer> = { east: land.east.server, west: land.west.server };
  landscape = await readLandscape(await client(land.master), async (id) => (sisters[id] ? client(sisters[id]) : undefined));
  const writer = createGitWriter({ gitdir: path.join(await trackedTempDir("sf-plan-concurrency-clone-"), "work.git"), remoteUrl: land.h.remoteUrl, branch: "main", author: AUTHOR, logger: silentLogger() });
  await writer.start();
  tip = writer.snapshot();
  await writer.close();
}, 120_000);
afterAll(async () => {
  await land?.close();
});

async function plan(concurrency: number, workers: number): Promise<ImportPlan> {
  const previous = setModuleWorkers(workers);
  try {
    let n = 0;
    return await planImport({
      landscape,
      catalog: (await loadCatalog(tip)).catalog,
      clusters: (await loadClusters(tip)).clusters,
      base: tip,
      now: () => new Date("2026-11-29T00:00:00Z"),
      newId: () => `op-${++n}`,
      concurrency,
    });
  } finally {
    setModuleWorkers(previous);
  }
}

/** The plan as JSON, operation ids replaced and timings left out. */
const comparable = ({ timings: _t, ...p }: ImportPlan) =>
  JSON.stringify(p, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString("base64") : v)).replace(/op-\d+/g, "op");

describe("planning in parallel", () => {
  it("gives the same plan, in the same order, as planning one instance at a time on one worker", async () => {
    const one = await plan(1, 1);
    const parallel = await plan(8, 3);
    expect(one.imported.length).toBe(21);
    expect(one.refused.length + one.skipped.length).toBe(3);
    expect(parallel.imported.map((i) => i.instanceId)).toEqual(one.imported.map((i) => i.instanceId));
    expect(comparable(parallel)).toBe(comparable(one));
    expect(planText(parallel)).toBe(planText(one));
  });
});
