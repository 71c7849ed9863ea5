import { rm } from "node:fs/promises";
import path from "node:path";
import { Writable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createBareRemote, createTempDir, pushExternalCommit, revParse } from "../../test/support/git-fixtures.js";
import { clusterFiles, repoFiles } from "../../test/support/repo-files.js";
import { createGitWriter, type GitWriter } from "../gitwriter/index.js";
import { createLogger } from "../log/index.js";
import { createInstanceSummaryCache } from "../repo/index.js";
import { createRepoView, type LiveRepoView } from "./repo-view.js";

/** The bound of the walk a start makes for the last good catalog and registry (ADR 0012), on a real repository. */

const MEDIUM = "catalog/postgresql/plans/medium.yaml";
const SMALL = "catalog/postgresql/plans/small.yaml";
const LOCAL = "registry/clusters/local.yaml";

let root: string;
let remote: string;
let seeded: string;
let writer: GitWriter | undefined;
let view: LiveRepoView | undefined;
let lines: Record<string, unknown>[];

beforeEach(async () => {
  root = await createTempDir();
  remote = await createBareRemote(root, "remote.git", await repoFiles([{ id: "local" }]));
  seeded = (await revParse(remote, "main"))!;
  lines = [];
});

afterEach(async () => {
  view?.close();
  view = undefined;
  await writer?.close();
  writer = undefined;
  await rm(root, { recursive: true, force: true });
});

/** A start: a writer on a fresh clone and a view that looks back at most `depth` catalog changes. */
async function start(depth: number): Promise<LiveRepoView> {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const logger = createLogger({ level: "info", destination: sink });
  writer = createGitWriter({ gitdir: path.join(root, "work.git"), remoteUrl: remote, branch: "main", author: { name: "t", email: "t@example.com" }, logger });
  await writer.start();
  view = createRepoView(writer, logger, createInstanceSummaryCache(), {}, { historyDepth: depth });
  await view.reload();
  return view;
}

const plans = (v: LiveRepoView) => v.catalog().services.flatMap((s) => s.plans.map((p) => p.name)).sort();

describe("last good catalog at start: the walk's bound", () => {
  it("within the bound: the newest version without problems, skipping commits that do not touch catalog/", async () => {
    await pushExternalCommit(remote, { "registry/notes.txt": "not a catalog change\n" }, "notes");
    await pushExternalCommit(remote, { [SMALL]: "spec: [\n" }, "small: broken");
    const v = await start(2);
    expect(plans(v)).toEqual(["medium", "small"]);
    expect(v.catalogSource()).toEqual({ state: "last-good", commit: seeded, back: 1 });
    expect((await v.readiness()).find((c) => c.name === "catalog-source")).toMatchObject({ ok: false, severity: "warning" });
  });

  it("beyond the bound: what loads at the tip, said as such (the plans that fail are missing)", async () => {
    await pushExternalCommit(remote, { [SMALL]: "spec: [\n" }, "small: broken");
    await pushExternalCommit(remote, { [MEDIUM]: "spec: [\n" }, "medium: broken");
    const tip = await pushExternalCommit(remote, { [SMALL]: "spec: {\n" }, "small: broken again");
    const v = await start(2);
    expect(plans(v)).toEqual([]);
    expect(v.catalogSource()).toEqual({ state: "partial", commit: tip });
    const said = lines.find((l) => typeof l.msg === "string" && l.msg.includes("none of the last 2 catalog changes"));
    expect(said).toMatchObject({ level: 50, commit: tip, bounded: true });
    expect((await v.readiness()).find((c) => c.name === "catalog-source")?.message).toMatch(/without the files that have problems/);
  });

  it("a broken catalog since the first commit: nothing older to serve, and not a bounded walk", async () => {
    await rm(remote, { recursive: true, force: true });
    remote = await createBareRemote(root, "remote.git", { ...(await repoFiles([{ id: "local" }])), [SMALL]: "spec: [\n" });
    const v = await start(5);
    expect(plans(v)).toEqual(["medium"]);
    expect(v.catalogSource().state).toBe("partial");
    expect(lines.find((l) => typeof l.msg === "string" && l.msg.includes("no earlier catalog loads"))).toMatchObject({ bounded: false });
  });
});

describe("last good cluster registry at start", () => {
  const clusterIds = (v: LiveRepoView) => v.clusters().map((c) => c.id).sort();

  it("within the bound: the newest registry without problems, skipping commits that do not touch the registry", async () => {
    const good = await pushExternalCommit(remote, { "registry/clusters/other.yaml": clusterFiles([{ id: "other" }])["registry/clusters/other.yaml"]! }, "add other");
    await pushExternalCommit(remote, { "registry/notes.txt": "not a registry change\n" }, "notes");
    await pushExternalCommit(remote, { [LOCAL]: "spec: [\n" }, "local: broken");
    const v = await start(2);
    expect(clusterIds(v)).toEqual(["local", "other"]);
    expect(v.registrySource()).toEqual({ state: "last-good", commit: good, back: 1 });
    expect(v.catalogSource().state).toBe("tip");
    expect((await v.readiness()).find((c) => c.name === "registry-source")).toEqual({
      name: "registry-source",
      ok: false,
      severity: "warning",
      message: `serving the last good cluster registry, of commit ${good}, found 1 registry change(s) back in the branch's history at start: the tip's has problems`,
    });
    const said = lines.find((l) => typeof l.msg === "string" && l.msg.includes("serving the last good registry"));
    expect(said).toMatchObject({ level: 50, registryCommit: good, back: 1, subject: "add other" });
  });

  it("beyond the bound: the clusters that load at the tip, said as such", async () => {
    await pushExternalCommit(remote, { "registry/clusters/other.yaml": clusterFiles([{ id: "other" }])["registry/clusters/other.yaml"]! }, "add other");
    await pushExternalCommit(remote, { [LOCAL]: "spec: [\n" }, "local: broken");
    const tip = await pushExternalCommit(remote, { [LOCAL]: "spec: {\n" }, "local: broken again");
    const v = await start(2);
    expect(clusterIds(v)).toEqual(["other"]);
    expect(v.registrySource()).toEqual({ state: "partial", commit: tip });
    expect((await v.readiness()).find((c) => c.name === "registry-source")?.message).toBe(
      `serving the cluster registry of ${tip} without the files that have problems (no earlier cluster registry without problems is known)`,
    );
  });

  it("a registry without problems at the tip: no warning line", async () => {
    const v = await start(2);
    expect(v.registrySource()).toEqual({ state: "tip", commit: seeded });
    expect((await v.readiness()).map((c) => c.name)).toEqual(["repository"]);
  });
});
