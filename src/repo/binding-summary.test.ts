import { rm } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createGitWriter, type Draft, type GitWriter, type TreeReader } from "../gitwriter/index.js";
import { silentLogger } from "../log/index.js";
import { createBareRemote, createTempDir } from "../../test/support/git-fixtures.js";
import { createBindingSummaryCache, summarizeBindings, type BindingCounts } from "./binding-summary.js";
import { instanceRecordDir } from "./layout.js";
import { RECORD_API_VERSION, writeBinding, writeInstance, type BindingRecord, type InstanceRecord } from "./records.js";

function instance(id: string, clusterId: string, planId: string, deleted = false): InstanceRecord {
  return {
    apiVersion: RECORD_API_VERSION,
    kind: "ServiceInstance",
    metadata: { name: id, namespace: "ns" },
    spec: { instanceId: id, serviceId: "svc", planId, clusterId },
    status: { ...(deleted ? { deleted: true } : {}), operations: [{ id: `op-${id}`, action: "provision", at: "2026-01-01T00:00:00Z" }] },
  };
}

function binding(instanceId: string, bindingId: string, deleted = false): BindingRecord {
  return {
    apiVersion: RECORD_API_VERSION,
    kind: "ServiceBinding",
    metadata: { name: bindingId, namespace: "ns" },
    spec: { bindingId, instanceId, serviceId: "svc", planId: "p" },
    status: { ...(deleted ? { deleted: true } : {}), operations: [{ id: `op-${bindingId}`, action: "bind", at: "2026-01-01T00:00:00Z" }] },
  };
}

/** The same tree without its bulk reader: folded record by record. */
function fileByFile(tree: TreeReader): TreeReader {
  return { commit: tree.commit, readFile: (p) => tree.readFile(p), readText: (p) => tree.readText(p), list: (d) => tree.list(d), oid: (p) => tree.oid(p) };
}

function plain(counts: BindingCounts): Record<string, Record<string, number>> {
  return Object.fromEntries([...counts].map(([c, plans]) => [c, Object.fromEntries(plans)]));
}

let root: string;
let writer: GitWriter;

async function commit(edit: (draft: Draft) => void): Promise<void> {
  await writer.submit(async (draft: Draft) => {
    edit(draft);
    return { commit: { subject: "records", trailers: {} }, result: null };
  });
}

beforeEach(async () => {
  root = await createTempDir();
  const remote = await createBareRemote(root, "remote.git", { "README.md": "x\n" });
  writer = createGitWriter({ gitdir: path.join(root, "work.git"), remoteUrl: remote, branch: "main", author: { name: "t", email: "t@example.com" }, logger: silentLogger() });
  await writer.start();
});
afterEach(async () => {
  await writer.close();
  await rm(root, { recursive: true, force: true });
});

describe("summarizeBindings", () => {
  it("counts live bindings of live instances by the instance's cluster and plan, in bulk as record by record, then incrementally", async () => {
    await commit((draft) => {
      for (let i = 0; i < 120; i++) {
        writeInstance(draft, instance(`i-${i}`, `c${i % 3}`, `p${i % 2}`, i % 10 === 0));
        // i bindings mod 4 each; every fifth one unbound.
        for (let b = 0; b < i % 4; b++) writeBinding(draft, binding(`i-${i}`, `b-${i}-${b}`, b === 2 && i % 5 === 0));
      }
      // A hand-edited binding record (a comment, a quoted key) is parsed properly.
      writeInstance(draft, instance("hand", "c9", "p9"));
      draft.write("instances/README.md", "not a record\n");
    });
    await commit((draft) => {
      const dir = `${instanceRecordDir("hand")}/bindings`;
      draft.write(`${dir}/x.yaml`, '# by hand\nspec:\n  bindingId: x\nstatus:\n  "delet\\x65d": true\n  operations: []\n');
      draft.write(`${dir}/y.yaml`, "spec:\n  bindingId: y\nstatus:\n  operations: []\n");
    });
    // Expected from the loop above, counted here.
    const expected: Record<string, Record<string, number>> = { c9: { p9: 1 } };
    for (let i = 0; i < 120; i++) {
      if (i % 10 === 0) continue;
      let live = 0;
      for (let b = 0; b < i % 4; b++) if (!(b === 2 && i % 5 === 0)) live++;
      if (live === 0) continue;
      const c = (expected[`c${i % 3}`] ??= {});
      c[`p${i % 2}`] = (c[`p${i % 2}`] ?? 0) + live;
    }
    const snapshot = writer.snapshot();
    expect(snapshot.bulk).toBeDefined();
    const bulkCache = createBindingSummaryCache();
    expect(plain(await summarizeBindings(snapshot, bulkCache))).toEqual(expected);
    expect(plain(await summarizeBindings(fileByFile(snapshot), createBindingSummaryCache()))).toEqual(expected);

    // Unbind one, bind one, delete an instance with bindings: the memoized fold follows.
    await commit((draft) => {
      writeBinding(draft, binding("i-1", "b-1-0", true));
      writeBinding(draft, binding("i-2", "b-2-9"));
      writeInstance(draft, instance("i-3", "c0", "p1", true));
    });
    expected.c1!.p1! -= 1; // i-1: c1, p1
    expected.c2!.p0! += 1; // i-2: c2, p0
    expected.c0!.p1! -= 3; // i-3: c0, p1, three live bindings
    const next = writer.snapshot();
    expect(plain(await summarizeBindings(next, bulkCache))).toEqual(expected);
    expect(plain(await summarizeBindings(fileByFile(next), createBindingSummaryCache()))).toEqual(expected);
  });
});

