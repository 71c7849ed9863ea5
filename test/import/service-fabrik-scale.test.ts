/**
 * The import at scale (ADR 0026): a landscape of 1,000 Service Fabrik instances in the doubles
 * (a master, two sisters; a tenth bound, a few in progress and failed), imported first as a dry
 * run, then for real: the sync that follows creates, deletes or renames no live object, the
 * hand-over leaves no owner reference to Service Fabrik, and every imported instance is served by
 * the broker.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Harness } from "../support/broker-harness.js";
import { remoteHead } from "../support/git-fixtures.js";
import { runImport, SF_PLAN_ID as PLAN_ID, startImportLandscape, type ImportLandscape, type SfInstanceSpec } from "../support/service-fabrik-landscape.js";
import type { SisterCluster } from "../support/sister-cluster.js";
import { createSyncAgent } from "../support/sync-agent.js";

const COUNT = 1000;

const id = (i: number) => `sf-${String(i).padStart(4, "0")}`;
const LANDSCAPE: SfInstanceSpec[] = Array.from({ length: COUNT }, (_, i) => ({
  id: id(i),
  clusterId: i % 2 === 0 ? "east" : "west",
  // One in ten bound: a bound instance costs four renders, an unbound one one (docs/benchmarks.md).
  ...(i % 10 === 0 ? { bindings: [{ id: `${id(i)}-b` }] } : {}),
  ...(i % 200 === 1 ? { state: "in progress" } : i % 200 === 2 ? { state: "failed" } : {}),
}));
const IMPORTED = LANDSCAPE.filter((s) => s.state === undefined).map((s) => s.id);
const BOUND = LANDSCAPE.filter((s) => s.bindings && !s.state).length;

let land: ImportLandscape;
let east: SisterCluster;
let west: SisterCluster;
let h: Harness;

const importCli = (...extra: string[]) => runImport(["service-fabrik", ...land.args, "--differences", "summary", ...extra]);

beforeAll(async () => {
  land = await startImportLandscape("sf-import-scale-", LANDSCAPE, { renderOnce: true });
  ({ east, west, h } = land);
}, 300_000);
afterAll(async () => {
  await land?.close();
});

describe("importing 1,000 Service Fabrik instances", () => {
  it("dry run, then for real; the sync creates and deletes nothing; the hand-over leaves no owner; every instance is served", async () => {
    const start = await remoteHead(h.remoteDir);
    const dry = await importCli();
    // The ones in progress and failed stay with Service Fabrik: incomplete.
    expect(dry.code).toBe(3);
    expect(dry.out).toContain(`to import: ${IMPORTED.length} instance(s) with ${BOUND} binding(s)`);
    expect(dry.out).toContain("skipped: 10 instance(s)");
    expect(await remoteHead(h.remoteDir)).toBe(start);

    const real = await importCli("--yes", "--hand-over");
    expect(real.code).toBe(3);
    expect(real.out).toContain(`imported ${IMPORTED.length} instance(s) with ${BOUND} binding(s) in 2 commit(s)`);
    expect(real.out).toContain(`SFServiceInstances: ${COUNT} found = ${IMPORTED.length} imported + 0 already imported + 0 refused + 10 skipped`);
    expect(real.out).toContain("no imported object is owned by a Service Fabrik resource");
    for (const cluster of [east, west]) {
      const owned = cluster.server.store.list("acid.zalan.do/v1", "postgresql").filter((o) => IMPORTED.includes(o.metadata.name!.replace(/^sapcp-/, "")) && o.metadata.ownerReferences !== undefined);
      expect(owned).toEqual([]);
      const before = cluster.server.store.list("acid.zalan.do/v1", "postgresql").map((o) => `${o.metadata.namespace}/${o.metadata.name}`);
      const agent = createSyncAgent({ kind: "argocd", name: `${cluster.id}-import`, namespace: "argocd", clusterId: cluster.id, remoteDir: h.remoteDir, server: cluster.server });
      await agent.sync();
      await agent.stop();
      const app = cluster.server.store.get({ apiVersion: "argoproj.io/v1alpha1", kind: "Application", namespace: "argocd", name: `${cluster.id}-import` });
      const state = (app?.status as { operationState: { phase: string; syncResult: { resources: { status: string; message: string }[] } } }).operationState;
      expect(state.phase).toBe("Succeeded");
      expect(state.syncResult.resources).toHaveLength(IMPORTED.length / 2);
      expect(state.syncResult.resources.filter((r) => r.status !== "Synced" || !r.message.endsWith(" configured"))).toEqual([]);
      expect(cluster.server.store.list("acid.zalan.do/v1", "postgresql").map((o) => `${o.metadata.namespace}/${o.metadata.name}`)).toEqual(before);
    }

    // After the hand-over the master holds only what was not imported: a second run commits nothing.
    const head = await remoteHead(h.remoteDir);
    const again = await importCli("--yes");
    expect(again.out).toContain("to import: 0 instance(s)");
    expect(again.out).toContain("skipped: 10 instance(s)");
    expect(again.out).toContain("imported 0 instance(s) with 0 binding(s) in 0 commit(s)");

    const states: string[] = [];
    for (let i = 0; i < IMPORTED.length; i += 16) {
      await Promise.all(
        IMPORTED.slice(i, i + 16).map(async (instanceId) => {
          const last = await h.osb.lastOperation(instanceId);
          const got = await h.osb.getInstance(instanceId);
          states.push(`${last.status} ${String(last.body.state)} ${got.status} ${String(got.body.plan_id)}`);
        }),
      );
    }
    expect(new Set(states)).toEqual(new Set([`200 succeeded 200 ${PLAN_ID}`]));
    expect(states).toHaveLength(IMPORTED.length);
    expect(await remoteHead(h.remoteDir)).toBe(head);
  }, 600_000);
});
