import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { ClusterEntry } from "../catalog/index.js";
import type { WatchCache, WatchCacheState } from "./kube-cache.js";
import { kindWatchProblem, syncReader, type KindWatch } from "./live-cluster.js";

/** The pieces of live-cluster.ts that decide from what the caches hold (the I/O is tested in watcher.test and test/e2e). */

const kind = { apiVersion: "acid.zalan.do/v1", kind: "postgresql", namespace: "pg" };
const state = (synced: boolean, lastError?: string): WatchCacheState => ({ synced, relists: 0, watchRestarts: 0, resourceVersion: "", ...(lastError ? { lastError } : {}) });
/** A cache holding `objects` in the state given. */
const cacheOf = (s: WatchCacheState, objects: KubernetesObject[] = []): Pick<WatchCache, "state" | "get"> => ({
  state: () => s,
  get: (namespace, name) => objects.find((o) => o.metadata?.namespace === namespace && o.metadata.name === name),
});

describe("kindWatchProblem", () => {
  it("blocked while its discovery or watch failed, even when tried again", () => {
    const w: KindWatch = { role: "owned", kind, discovering: true, failure: { message: "the server could not find the requested resource", at: 0 } };
    expect(kindWatchProblem(w)).toEqual({ state: "blocked", description: "cannot watch acid.zalan.do/v1 postgresql in pg: the server could not find the requested resource" });
  });

  it("gathering while discovering and while the first list has not succeeded, with the list's last error", () => {
    expect(kindWatchProblem({ role: "owned", kind, discovering: true })).toEqual({ state: "gathering", description: "discovering acid.zalan.do/v1 postgresql in pg" });
    const cache = cacheOf(state(false, "HTTP 503")) as WatchCache;
    expect(kindWatchProblem({ role: "foreign", kind: { ...kind, namespace: "" }, discovering: false, cache })).toEqual({
      state: "gathering",
      description: "listing acid.zalan.do/v1 postgresql: HTTP 503",
    });
  });

  it("nothing once the cache listed, also while a later list or watch fails", () => {
    expect(kindWatchProblem({ role: "owned", kind, discovering: false, cache: cacheOf(state(true, "HTTP 503")) as WatchCache })).toBeUndefined();
  });
});

describe("syncReader", () => {
  const sha = "0123456789abcdef0123456789abcdef01234567";
  const entry = { id: "east", namespace: "pg", sync: { kind: "argocd", name: "east", namespace: "argocd" } } as ClusterEntry;
  const application = (revision: string): KubernetesObject => ({
    apiVersion: "argoproj.io/v1alpha1",
    kind: "Application",
    metadata: { namespace: "argocd", name: "east" },
    status: { sync: { status: "Synced", revision }, health: { status: "Healthy" } },
  } as KubernetesObject);

  it("says why the sync object is not known: no spec.sync, not connected, not listed, not found", () => {
    expect(syncReader({ ...entry, sync: undefined })(cacheOf(state(true)))).toMatchObject({ state: "blocked", description: expect.stringContaining("cluster east has no spec.sync") });
    const read = syncReader(entry);
    expect(read(undefined)).toEqual({ state: "gathering", description: "connecting to cluster east" });
    expect(read(cacheOf(state(false)))).toEqual({ state: "gathering", description: "listing the Argo CD application east" });
    expect(read(cacheOf(state(true)))).toEqual({ state: "blocked", description: "Argo CD application east not found in namespace argocd" });
  });

  it("observes the object, and again only when the cache holds another one", () => {
    const read = syncReader(entry);
    const first = application(sha);
    const observed = read(cacheOf(state(true), [first]));
    expect(observed).toMatchObject({ subject: "Argo CD application east", appliedRevision: sha, healthy: true });
    expect(read(cacheOf(state(true), [first]))).toBe(observed);
    const next = read(cacheOf(state(true), [application(sha.replace("0", "f"))]));
    expect(next).not.toBe(observed);
    expect(next).toMatchObject({ appliedRevision: sha.replace("0", "f") });
  });
});
