import { rm } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createGitWriter, type Draft, type GitWriter, type TreeReader } from "../gitwriter/index.js";
import { silentLogger } from "../log/index.js";
import { createBareRemote, createTempDir } from "../../test/support/git-fixtures.js";
import {
  createInstanceSummaryCache,
  instanceCounts,
  liveInScope,
  liveOfPlan,
  scopeKey,
  summarizeInstances,
  type InstanceSummaryCache,
} from "./instance-summary.js";
import { instanceRecordDir } from "./layout.js";
import { RECORD_API_VERSION, writeInstance, type InstanceRecord } from "./records.js";

function record(id: string, clusterId: string, planId: string, at: string, deleted = false, org?: string): InstanceRecord {
  const tenancy = org === undefined ? {} : { organizationGuid: org, spaceGuid: `${org}-space`, context: { subaccount_id: `${org}-sub` } };
  return {
    apiVersion: RECORD_API_VERSION,
    kind: "ServiceInstance",
    metadata: { name: id, namespace: "ns" },
    spec: { instanceId: id, serviceId: "svc", planId, clusterId, ...tenancy },
    status: { ...(deleted ? { deleted: true } : {}), operations: [{ id: `op-${id}`, action: "provision", at }] },
  };
}

/** Counts reads of instance records, to prove that unchanged subtrees are not read again. */
function countingReader(tree: TreeReader): { tree: TreeReader; reads: () => number } {
  let reads = 0;
  const counted: TreeReader = {
    commit: tree.commit,
    readFile: (p) => tree.readFile(p),
    readText: (p) => {
      reads++;
      return tree.readText(p);
    },
    list: (d) => tree.list(d),
    oid: (p) => tree.oid(p),
  };
  return { tree: counted, reads: () => reads };
}

let root: string;
let writer: GitWriter;
let cache: InstanceSummaryCache;

async function commit(records: InstanceRecord[]): Promise<void> {
  await writer.submit(async (draft: Draft) => {
    for (const r of records) writeInstance(draft, r);
    return { commit: { subject: "records", trailers: {} }, result: null };
  });
}

beforeEach(async () => {
  root = await createTempDir();
  const remote = await createBareRemote(root, "remote.git", { "README.md": "x\n" });
  writer = createGitWriter({
    gitdir: path.join(root, "work.git"),
    remoteUrl: remote,
    branch: "main",
    author: { name: "t", email: "t@example.com" },
    logger: silentLogger(),
  });
  await writer.start();
  cache = createInstanceSummaryCache();
});
afterEach(async () => {
  await writer.close();
  await rm(root, { recursive: true, force: true });
});

describe("summarizeInstances", () => {
  it("counts live instances per cluster and plan, and finds the newest provision", async () => {
    expect(instanceCounts(await summarizeInstances(writer.snapshot(), cache))).toEqual(new Map());
    await commit([
      record("a", "c1", "p1", "2026-01-01T00:00:01Z"),
      record("b", "c1", "p2", "2026-01-01T00:00:03Z"),
      record("c", "c2", "p1", "2026-01-01T00:00:02Z"),
      record("d", "c2", "p1", "2026-01-01T00:00:04Z", true),
    ]);
    const summary = await summarizeInstances(writer.snapshot(), cache);
    expect(instanceCounts(summary)).toEqual(new Map([["c1", 2], ["c2", 1]]));
    expect(liveOfPlan(summary, "p1")).toBe(2);
    // A deleted instance is not live, but its provision still counts as the newest for round-robin.
    expect(summary.latestProvision).toEqual({ at: "2026-01-01T00:00:04Z", clusterId: "c2" });
  });

  it("sees a draft's pending records, and re-reads only the changed bucket of the next commit", async () => {
    const many = Array.from({ length: 60 }, (_, i) => record(`i-${i}`, i % 2 ? "c1" : "c2", "p", `2026-01-01T00:01:${String(i).padStart(2, "0")}Z`));
    await commit(many);
    const first = countingReader(writer.snapshot());
    expect(instanceCounts(await summarizeInstances(first.tree, cache))).toEqual(new Map([["c1", 30], ["c2", 30]]));
    expect(first.reads()).toBe(60);

    await writer.submit(async (draft: Draft) => {
      writeInstance(draft, record("new-1", "c1", "p", "2026-01-02T00:00:00Z"));
      const pending = countingReader(draft);
      const summary = await summarizeInstances(pending.tree, cache);
      expect(instanceCounts(summary)).toEqual(new Map([["c1", 31], ["c2", 30]]));
      expect(pending.reads()).toBeLessThanOrEqual(2);
      return { commit: { subject: "one more", trailers: {} }, result: null };
    });
    const next = countingReader(writer.snapshot());
    expect(instanceCounts(await summarizeInstances(next.tree, cache))).toEqual(new Map([["c1", 31], ["c2", 30]]));
    expect(next.reads()).toBeLessThanOrEqual(2);
  });

  it("folds a cold tree in bulk to the same summary as file by file, and memoizes every level", async () => {
    const many = Array.from({ length: 300 }, (_, i) =>
      record(`bulk-${i}`, `c${i % 3}`, `p${i % 4}`, `2026-02-01T00:${String(Math.floor(i / 60)).padStart(2, "0")}:${String(i % 60).padStart(2, "0")}Z`, i % 7 === 0, i % 5 ? `o${i % 5}` : undefined),
    );
    await commit(many);
    await writer.submit(async (draft: Draft) => {
      // Beyond the scan: a hand-edited record with a comment is parsed; stray files are ignored.
      draft.write("instances/ff/ff/hand/instance.yaml", "# edited by hand\nspec:\n  clusterId: c9\n  planId: p9\nstatus:\n  operations:\n    - id: o\n      action: provision\n      at: 2027-01-01T00:00:00Z\n");
      draft.write("instances/README.md", "not a record\n");
      draft.write("instances/ff/ff/empty/notes.txt", "no record here\n");
      return { commit: { subject: "hand edits", trailers: {} }, result: null };
    });
    const snapshot = writer.snapshot();
    expect(snapshot.bulk).toBeDefined();
    const fileByFile = countingReader(snapshot); // forwards no bulk reader
    const expected = await summarizeInstances(fileByFile.tree, createInstanceSummaryCache());
    expect(fileByFile.reads()).toBe(302); // 301 records, and the directory without one

    const bulkCache = createInstanceSummaryCache();
    const summary = await summarizeInstances(snapshot, bulkCache);
    expect(summary.latestProvision).toEqual({ at: "2027-01-01T00:00:00Z", clusterId: "c9" });
    expect(instanceCounts(summary)).toEqual(instanceCounts(expected));
    for (const plan of ["p0", "p1", "p2", "p3", "p9"]) expect(liveOfPlan(summary, plan)).toBe(liveOfPlan(expected, plan));
    expect(summary.tenants).toEqual(expected.tenants);
    expect(liveInScope(summary, scopeKey("organization", "o1"), new Set(["p0", "p1", "p2", "p3"]))).toBeGreaterThan(0);

    // Every bucket is memoized: the next draft re-reads only what it changed, and the next
    // commit's tree (new root oid, one bucket changed) is folded incrementally, not walked again.
    await writer.submit(async (draft: Draft) => {
      writeInstance(draft, record("late", "c1", "p1", "2027-02-01T00:00:00Z"));
      const pending = countingReader(draft);
      expect(instanceCounts(await summarizeInstances(pending.tree, bulkCache)).get("c1")).toBe(instanceCounts(expected).get("c1")! + 1);
      expect(pending.reads()).toBeLessThanOrEqual(2);
      return { commit: { subject: "one more", trailers: {} }, result: null };
    });
    const next = writer.snapshot();
    let walks = 0;
    const counted: TreeReader = {
      commit: next.commit,
      readFile: (p) => next.readFile(p),
      readText: (p) => next.readText(p),
      list: (d) => next.list(d),
      oid: (p) => next.oid(p),
      bulk: { walk: (oid, keep) => (walks++, next.bulk!.walk(oid, keep)), readBlobs: (oids, each) => next.bulk!.readBlobs(oids, each) },
    };
    expect(instanceCounts(await summarizeInstances(counted, bulkCache)).get("c1")).toBe(instanceCounts(expected).get("c1")! + 1);
    expect(walks).toBe(0);
    expect(instanceCounts(await summarizeInstances(counted, createInstanceSummaryCache())).get("c1")).toBe(instanceCounts(expected).get("c1")! + 1);
    expect(walks).toBe(1);
  });

  it("stays equal to a fold from scratch through adds, deletions and removed records (incremental levels)", async () => {
    let seed = 7;
    const next = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const ids: string[] = [];
    let clock = 0;
    const at = () => new Date(Date.UTC(2026, 2, 1) + clock++ * 1000).toISOString();
    // Start from a bulk fold (start-up), so the rounds fold incrementally from what it remembered.
    await commit(Array.from({ length: 80 }, (_, i) => {
      ids.push(`seed-${i}`);
      return record(`seed-${i}`, `c${i % 3}`, `p${i % 2}`, at(), false, `o${i % 4}`);
    }));
    await summarizeInstances(writer.snapshot(), cache);
    expect(cache.previous("instances")).toBeDefined();
    for (let round = 0; round < 12; round++) {
      await writer.submit(async (draft: Draft) => {
        for (let k = 0; k < 1 + next(40); k++) {
          const roll = next(10);
          if (roll < 6 || ids.length === 0) {
            const id = `r${round}-${k}`;
            ids.push(id);
            writeInstance(draft, record(id, `c${next(3)}`, `p${next(2)}`, at(), false, `o${next(4)}`));
          } else if (roll < 8) {
            const id = ids[next(ids.length)]!;
            writeInstance(draft, record(id, `c${next(3)}`, "p0", at(), true, `o${next(4)}`));
          } else {
            const id = ids.splice(next(ids.length), 1)[0]!;
            draft.remove(instanceRecordDir(id));
          }
        }
        // The placement path: a fold of the draft itself, with edits, against the shared cache.
        const fresh = await summarizeInstances(countingReader(draft).tree, createInstanceSummaryCache());
        const incremental = await summarizeInstances(draft, cache);
        expect(incremental.live).toEqual(fresh.live);
        expect(incremental.tenants).toEqual(fresh.tenants);
        expect(incremental.latestProvision).toEqual(fresh.latestProvision);
        return { commit: { subject: `round ${round}`, trailers: {} }, result: null };
      });
      const fresh = await summarizeInstances(countingReader(writer.snapshot()).tree, createInstanceSummaryCache());
      const incremental = await summarizeInstances(writer.snapshot(), cache);
      expect(incremental.live).toEqual(fresh.live);
      expect(incremental.tenants).toEqual(fresh.tenants);
      expect(incremental.latestProvision).toEqual(fresh.latestProvision);
    }
  });

  it("counts live instances per organization, space and subaccount, and plan, for quotas", async () => {
    await commit([
      record("a", "c1", "p1", "2026-01-01T00:00:01Z", false, "o1"),
      record("b", "c2", "p1", "2026-01-01T00:00:02Z", false, "o1"),
      record("c", "c1", "p2", "2026-01-01T00:00:03Z", false, "o1"),
      record("d", "c1", "p1", "2026-01-01T00:00:04Z", true, "o1"),
      record("e", "c1", "p1", "2026-01-01T00:00:05Z", false, "o2"),
      record("f", "c1", "p1", "2026-01-01T00:00:06Z"),
    ]);
    const summary = await summarizeInstances(writer.snapshot(), cache);
    expect(liveInScope(summary, scopeKey("organization", "o1"), new Set(["p1"]))).toBe(2);
    expect(liveInScope(summary, scopeKey("space", "o1-space"), new Set(["p1", "p2"]))).toBe(3);
    expect(liveInScope(summary, scopeKey("subaccount", "o2-sub"), new Set(["p1"]))).toBe(1);
    expect(liveInScope(summary, scopeKey("organization", "o3"), new Set(["p1"]))).toBe(0);
    await commit([record("a", "c1", "p1", "2026-01-01T00:00:01Z", true, "o1")]);
    expect(liveInScope(await summarizeInstances(writer.snapshot(), cache), scopeKey("organization", "o1"), new Set(["p1"]))).toBe(1);
  });
});
