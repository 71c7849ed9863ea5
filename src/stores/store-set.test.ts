import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClusterMovedError, ClusterMovingError, GitRemoteError, InstanceMoveAcrossStoresError, StoreMismatchError } from "../errors/index.js";
import { createGitWriter, type Draft, type GitWriter, type OperationOutcome } from "../gitwriter/index.js";
import { commitImport, type ImportPlan } from "../import/index.js";
import { silentLogger } from "../log/index.js";
import { clusterNamespacePath, instanceRecordPath, moveFencePath, moveFenceYaml, recordYaml, writeInstance, type InstanceRecord } from "../repo/index.js";
import { createBareRemote, createTempDir, gitLog, pushExternalCommit, readRemoteFile } from "../../test/support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../../test/support/git-http-server.js";
import { provisionedRecord } from "../../test/support/records.js";
import { clusterStores, CONTROL, createStoreSet, routedWriter, type StoreSet } from "./index.js";

/**
 * The store set's seam (ADR 0036) over real repositories served over smart HTTP: the route decides
 * the repository before an operation runs, an operation writes there only, and an edit of another
 * repository is an assertion (StoreMismatchError), never a second run elsewhere.
 */

const AUTHOR = { name: "gitops-broker", email: "broker@example.com" };
const CLUSTERS = [
  { id: "eu-1", store: "eu", schedulable: true },
  { id: "eu-2", store: "eu", schedulable: true },
  { id: "local", schedulable: true },
  { id: "us-1", store: "us", schedulable: true },
];
const NAMES = ["control", "eu", "us"] as const;

let root: string;
let server: GitHttpServer;
let run = 0;
const opened: StoreSet[] = [];

beforeAll(async () => {
  root = await createTempDir("store-set-test-");
  server = await startGitHttpServer({ root: path.join(root, "remotes") });
});

afterAll(async () => {
  await Promise.all(opened.map((s) => s.close()));
  await server.close();
  await fs.rm(root, { recursive: true, force: true });
});

interface Repos {
  stores: StoreSet;
  bare: Record<(typeof NAMES)[number], string>;
  commits: () => Promise<number[]>;
}

/** Three repositories (the control repository, stores eu and us), each with a writer, behind a started store set. */
async function repos(): Promise<Repos> {
  run += 1;
  const bare = {} as Repos["bare"];
  const writers = new Map<string, GitWriter>();
  for (const name of NAMES) {
    bare[name] = await createBareRemote(path.join(root, "remotes"), `${name}-${run}.git`, { "README.md": `${name}\n` });
    writers.set(
      name,
      createGitWriter({ gitdir: path.join(root, `work-${run}`, `${name}.git`), remoteUrl: server.url(`${name}-${run}.git`), branch: "main", author: AUTHOR, logger: silentLogger() }),
    );
  }
  const control = writers.get(CONTROL)!;
  writers.delete(CONTROL);
  const stores = createStoreSet({ control, stores: writers, storeOf: clusterStores(() => CLUSTERS), clusters: () => CLUSTERS, logger: silentLogger(), startWaitMs: 30_000 });
  opened.push(stores);
  await stores.start();
  return { stores, bare, commits: () => Promise.all(NAMES.map(async (n) => (await gitLog(bare[n])).length)) };
}

function onCluster(id: string, clusterId: string, deleted = false): InstanceRecord {
  const record = provisionedRecord(id);
  record.spec.clusterId = clusterId;
  if (deleted) record.status.deleted = true;
  return record;
}

const commit = <R>(subject: string, result: R): OperationOutcome<R> => ({ commit: { subject, trailers: {} }, result });

/** Writes files straight into one repository (its own writer: no routing, as a cluster's move does). */
async function seed(stores: StoreSet, store: string, write: (draft: Draft) => void): Promise<void> {
  await stores.writer(store).submit(async (draft) => {
    write(draft);
    return commit(`seed ${store}`, undefined);
  });
}

describe("StoreSet.submitTo: one repository per operation", () => {
  it("an edit of another repository's path is an assertion: the operation runs once, fails, and nothing is committed anywhere", async () => {
    const { stores, commits } = await repos();
    const before = await commits();
    let runs = 0;
    const misrouted = stores.submitTo("eu", async (draft) => {
      runs++;
      draft.write(clusterNamespacePath("us-1"), "kind: Namespace\n");
      return commit("misrouted", undefined);
    });
    await expect(misrouted).rejects.toThrow(StoreMismatchError);
    await expect(misrouted).rejects.toThrow(/an operation on store eu edited clusters\/us-1\/namespace\.yaml, which belongs to store us/);
    // The control repository's queue (GitWriter.submit) takes no store's path either.
    const viaControl = stores.submit(async (draft) => {
      runs++;
      draft.write(clusterNamespacePath("eu-1"), "kind: Namespace\n");
      return commit("control", undefined);
    });
    await expect(viaControl).rejects.toThrow(StoreMismatchError);
    // A record written where its cluster is not.
    const record = stores.submitTo("us", async (draft) => {
      runs++;
      writeInstance(draft, onCluster("wrong-1", "eu-1"));
      return commit("record", undefined);
    });
    await expect(record).rejects.toThrow(/an operation on store us edited instances\/.*\/instance\.yaml, which belongs to store eu/);
    expect(runs).toBe(3);
    expect(await commits()).toEqual(before);
  });

  it("a cluster a move fenced in the store since the route: 503 (moving: until the copy is done; moved: the retry goes to the new store), nothing written", async () => {
    const { stores, bare, commits } = await repos();
    await pushExternalCommit(bare.eu, { [moveFencePath("eu-1")]: moveFenceYaml({ clusterId: "eu-1", to: "us", state: "moving" }) }, "fence");
    await stores.writer("eu").refresh();
    let before = await commits();
    const write = () => stores.submitTo("eu", async (draft) => {
      draft.write(clusterNamespacePath("eu-1"), "kind: Namespace\n");
      return commit("on eu-1", undefined);
    });
    await expect(write()).rejects.toThrow(ClusterMovingError);
    expect(await commits()).toEqual(before);
    await pushExternalCommit(bare.eu, { [moveFencePath("eu-1")]: moveFenceYaml({ clusterId: "eu-1", to: "us", state: "moved" }) }, "fence moved");
    await stores.writer("eu").refresh();
    before = await commits();
    await expect(write()).rejects.toThrow(ClusterMovedError);
    await expect(write()).rejects.toThrow(/cluster eu-1 moved from store eu to store us while the request waited; nothing was changed: try again/);
    expect(await commits()).toEqual(before);
    // The route sends the retry to the new store, where it lands.
    const routed = routedWriter(stores, stores);
    const landed = await routed.submit({ cluster: "eu-1" }, async (draft) => {
      draft.write(clusterNamespacePath("eu-1"), "kind: Namespace\n");
      return commit("on eu-1", undefined);
    });
    expect(landed.commit).not.toBeNull();
    expect(await readRemoteFile(bare.us, "main", clusterNamespacePath("eu-1"))).toBe("kind: Namespace\n");
  });
});

describe("StoreSet.refresh: every store current, or an error naming each that is not", () => {
  it("two stores that cannot be fetched are both named, not only the first", async () => {
    const { stores, bare } = await repos();
    await expect(stores.refresh()).resolves.toBeTypeOf("string");
    for (const name of ["eu", "us"] as const) await fs.rename(bare[name], `${bare[name]}.gone`);
    try {
      const failure = await stores.refresh().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(GitRemoteError);
      expect((failure as GitRemoteError).repository).toBe("store eu and store us");
      expect((failure as GitRemoteError).remoteMessage).toMatch(/^store eu: .+; store us: .+/);
    } finally {
      for (const name of ["eu", "us"] as const) await fs.rename(`${bare[name]}.gone`, bare[name]);
    }
    await expect(stores.refresh()).resolves.toBeTypeOf("string");
  });
});

describe("StoreSet.route: decided before the operation runs", () => {
  it("an instance goes where its record is; with two copies (a cluster's move), to the store of its cluster: the source until its fence says moved", async () => {
    const { stores, bare } = await repos();
    const routed = (id: string) => stores.route({ instance: id });
    await seed(stores, "eu", (d) => writeInstance(d, onCluster("r-eu", "eu-1")));
    await seed(stores, "us", (d) => writeInstance(d, onCluster("r-us", "us-1")));
    await seed(stores, CONTROL, (d) => writeInstance(d, onCluster("r-local", "local")));
    expect(await Promise.all(["r-eu", "r-us", "r-local"].map(routed))).toEqual(["eu", "us", CONTROL]);

    // The copy of a move to us: eu keeps the instance until its fence says moved.
    await seed(stores, "us", (d) => writeInstance(d, onCluster("r-eu", "eu-1")));
    expect(await routed("r-eu")).toBe("eu");
    await pushExternalCommit(bare.eu, { [moveFencePath("eu-1")]: moveFenceYaml({ clusterId: "eu-1", to: "us", state: "moving" }) }, "fence");
    await stores.writer("eu").refresh();
    expect(await routed("r-eu")).toBe("eu");
    await pushExternalCommit(bare.eu, { [moveFencePath("eu-1")]: moveFenceYaml({ clusterId: "eu-1", to: "us", state: "moved" }) }, "fence moved");
    await stores.writer("eu").refresh();
    expect(await routed("r-eu")).toBe("us");

    // A re-provision of an id whose deleted record is elsewhere, and an id nobody holds.
    await seed(stores, "us", (d) => writeInstance(d, onCluster("r-us", "us-1", true)));
    await seed(stores, CONTROL, (d) => writeInstance(d, onCluster("r-us", "local")));
    expect(await routed("r-us")).toBe(CONTROL);
    expect(await routed("nobody")).toBe(CONTROL);
  });

  it("a cluster a human chose: its store; an instance moved there must be in it (else 422, decided from every store's current tip)", async () => {
    const { stores, bare } = await repos();
    await seed(stores, "eu", (d) => writeInstance(d, onCluster("m-1", "eu-1")));
    expect(await stores.route({ cluster: "us-1" })).toBe("us");
    expect(await stores.route({ cluster: "local" })).toBe(CONTROL);
    expect(await stores.route({ cluster: "eu-2", instance: "m-1" })).toBe("eu");
    const across = stores.route({ cluster: "us-1", instance: "m-1" });
    await expect(across).rejects.toThrow(InstanceMoveAcrossStoresError);
    await expect(across).rejects.toThrow(
      /instance m-1 is in store eu and the instances of cluster us-1 are in store us: an instance moves only between clusters of one repository/,
    );
    // Written by another replica since the last fetch: found before anything is refused.
    await pushExternalCommit(bare.us, { [instanceRecordPath("m-2")]: recordYaml(onCluster("m-2", "us-1")) }, "another replica");
    expect(await stores.route({ cluster: "us-1", instance: "m-2" })).toBe("us");
  });
});

describe("RoutedWriter", () => {
  it("a provision routed to a store places only among its clusters and says why; one repository places among all", async () => {
    const { stores } = await repos();
    const routed = routedWriter(stores, stores);
    const { result } = await stores.submitTo("eu", async (draft) => ({ commit: null, result: await routed.placeable(draft, CLUSTERS) }));
    expect(result.clusters.map((c) => c.id)).toEqual(["eu-1", "eu-2"]);
    expect(result.narrowed).toMatch(/^a new instance is placed only among the clusters of store eu \(eu-1, eu-2\), the repository its id belongs to/);
    const single = routedWriter(stores.writer(CONTROL));
    const { result: all } = await stores.writer(CONTROL).submit(async (draft) => ({ commit: null, result: await single.placeable(draft, CLUSTERS) }));
    expect(all).toEqual({ clusters: CLUSTERS });
  });

  it("an import onto clusters of several stores: one commit per repository, each holding its own instances", async () => {
    const { stores, bare, commits } = await repos();
    const before = await commits();
    const planned = (instanceId: string, clusterId: string) => ({
      instanceId,
      clusterId,
      bindingIds: [],
      edits: [{ path: instanceRecordPath(instanceId), content: recordYaml(onCluster(instanceId, clusterId)) }],
    });
    const plan = { source: "https://sf.example", imported: [planned("i-1", "eu-1"), planned("i-2", "local"), planned("i-3", "us-1"), planned("i-4", "eu-2")] } as unknown as ImportPlan;
    const result = await commitImport(routedWriter(stores, stores), plan, { brokerVersion: "test" });
    expect(result.imported.sort()).toEqual(["i-1", "i-2", "i-3", "i-4"]);
    expect(result.commits).toHaveLength(3);
    expect((await commits()).map((n, i) => n - before[i]!)).toEqual([1, 1, 1]);
    const holds = async (name: (typeof NAMES)[number], id: string) => (await readRemoteFile(bare[name], "main", instanceRecordPath(id))) !== null;
    expect(await Promise.all([holds("eu", "i-1"), holds("eu", "i-4"), holds("control", "i-2"), holds("us", "i-3")])).toEqual([true, true, true, true]);
    expect(await Promise.all([holds("control", "i-1"), holds("us", "i-4"), holds("eu", "i-3")])).toEqual([false, false, false]);
  });
});
