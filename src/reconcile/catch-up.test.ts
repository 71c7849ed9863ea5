import { rm } from "node:fs/promises";
import path from "node:path";
import { parse, stringify } from "yaml";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createBareRemote, createTempDir, pushExternalCommit, readRemoteFile } from "../../test/support/git-fixtures.js";
import { repoFiles } from "../../test/support/repo-files.js";
import { loadCatalog } from "../catalog/index.js";
import { createGitWriter, type GitWriter } from "../gitwriter/index.js";
import { silentLogger } from "../log/index.js";
import { instanceManifestDir, RECORD_API_VERSION, writeInstance } from "../repo/index.js";
import { staleInstances } from "./catch-up.js";
import { createPlanInstancesCache } from "./plan-instances.js";

/** The catch-up's walk for a plan's current version, on a real repository: found within its bound or not at all. */

const SERVICE = "4de30cf9-a981-48c9-9acf-909805db46bc";
const SMALL_ID = "55a0d659-3419-4ed1-adf3-19f9d0f5ba4b";
const SMALL = "catalog/postgresql/plans/small.yaml";
const MEDIUM = "catalog/postgresql/plans/medium.yaml";

let root: string;
let remote: string;
let writer: GitWriter;

beforeEach(async () => {
  root = await createTempDir();
  const files = await repoFiles([{ id: "local" }]);
  const small = parse(files[SMALL]!) as { spec: Record<string, unknown> };
  small.spec.autoUpdateInstances = true;
  remote = await createBareRemote(root, "remote.git", { ...files, [SMALL]: stringify(small) });
  writer = createGitWriter({ gitdir: path.join(root, "work.git"), remoteUrl: remote, branch: "main", author: { name: "t", email: "t@example.com" }, logger: silentLogger() });
  await writer.start();
  // One live instance of small, with one rendered file (what the catch-up compares).
  await writer.submit(async (draft) => {
    writeInstance(draft, {
      apiVersion: RECORD_API_VERSION,
      kind: "ServiceInstance",
      metadata: { name: "i-1", namespace: "gitops-broker-instances" },
      spec: { instanceId: "i-1", serviceId: SERVICE, planId: SMALL_ID, clusterId: "local" },
      status: { operations: [{ id: "op-1", action: "provision", at: "2026-01-01T00:00:00.000Z" }] },
    });
    draft.write(`${instanceManifestDir("local", "i-1")}/postgresql-pg-i-1.yaml`, "kind: postgresql\n");
    return { commit: { subject: "provision i-1", trailers: {} }, result: null };
  });
});

afterEach(async () => {
  await writer.close();
  await rm(root, { recursive: true, force: true });
});

async function edit(file: string, change: (spec: Record<string, unknown>) => void, message: string): Promise<string> {
  const doc = parse((await readRemoteFile(remote, "main", file)) ?? "") as { spec: Record<string, unknown> };
  change(doc.spec);
  return pushExternalCommit(remote, { [file]: stringify(doc) }, message);
}

async function stale(depth: number) {
  await writer.refresh();
  const tip = writer.snapshot();
  const { catalog } = await loadCatalog(tip);
  return staleInstances({ reader: writer, tip, catalog, planIds: createPlanInstancesCache(), logger: silentLogger(), depth });
}

describe("staleInstances", () => {
  it("finds the commit of the plan's current version within the bound, and nothing beyond it", async () => {
    const change = await edit(SMALL, (s) => (s.description = "changed"), "small: changed");
    await edit(MEDIUM, (s) => (s.description = "one"), "medium: one");
    await edit(MEDIUM, (s) => (s.description = "two"), "medium: two");
    // small's change is the third catalog change back, the seed (its older version) the fourth:
    // a walk of four sees the version change.
    expect(await stale(4)).toEqual([{ instance: "i-1", reason: "plan-changed", cause: change }]);
    // Three or fewer: small looks unchanged within them, so its instances are left as they are.
    expect(await stale(3)).toEqual([]);
    expect(await stale(2)).toEqual([]);
  });

  it("an instance rendered after the change is up to date; a plan never changed has nothing to catch up", async () => {
    expect(await stale(10)).toEqual([]);
    await edit(SMALL, (s) => (s.description = "changed"), "small: changed");
    await writer.submit(async (draft) => {
      draft.write(`${instanceManifestDir("local", "i-1")}/postgresql-pg-i-1.yaml`, "kind: postgresql\nre: rendered\n");
      return { commit: { subject: "re-render i-1", trailers: {} }, result: null };
    });
    expect(await stale(10)).toEqual([]);
  });
});
