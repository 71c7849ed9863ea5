import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHangProxy, type HangProxy } from "../../test/support/hang-proxy.js";
import { tappedKubeApi } from "../../test/support/tapped-kube-api.js";
import { startKubeApiServer, type KubeApiServer } from "../../test/support/kube-api-server.js";
import { KubeApiError } from "../errors/index.js";
import { collectionPath, createDiscovery, createKubeApi, createResourceFinder, listAll, objectPath, type KubeApi } from "./index.js";

/**
 * The request helper and the paged list against the API server double (which pages as
 * kube-apiserver does, test/support/kube-api-server.ts); against the real kube-apiserver:
 * test/real-kube/paged-lists.test.ts.
 */

const INSTANCE = { group: "osb.servicefabrik.io", version: "v1alpha1", kind: "SFServiceInstance", plural: "sfserviceinstances", namespaced: true };
const INSTANCES = "/apis/osb.servicefabrik.io/v1alpha1/sfserviceinstances";

let server: KubeApiServer;
let api: KubeApi;
const names = (items: { metadata?: { namespace?: string; name?: string } }[]) => items.map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`);

beforeAll(async () => {
  server = await startKubeApiServer({ resources: [INSTANCE] });
  for (let i = 0; i < 57; i++) {
    server.store.upsert({ apiVersion: "osb.servicefabrik.io/v1alpha1", kind: "SFServiceInstance", metadata: { namespace: `sf-${i % 4}`, name: `i-${String(i).padStart(3, "0")}` }, spec: { instanceId: `i-${i}` } });
  }
  for (let i = 0; i < 12; i++) server.store.upsert({ apiVersion: "v1", kind: "Secret", metadata: { namespace: "sf-0", name: `s-${String(i).padStart(2, "0")}` } });
  api = createKubeApi({ kubeConfig: server.loadKubeConfig(), label: "cluster test" });
});
afterAll(async () => {
  await server.close();
});

describe("listAll", () => {
  it("follows continue to the last page for custom and built-in resources, with apiVersion and kind on every item", async () => {
    const counting = tappedKubeApi(api);
    const instances = await listAll<{ apiVersion: string; kind: string; metadata: { name: string } }>(counting, INSTANCES, { pageSize: 10 });
    expect(instances.items).toHaveLength(57);
    expect(new Set(names(instances.items)).size).toBe(57);
    expect(counting.requests.map((r) => r.query?.limit)).toEqual([10, 10, 10, 10, 10, 10]);
    expect(instances.resourceVersion).toBe(server.store.resourceVersion());
    expect(instances.items.every((o) => o.apiVersion === "osb.servicefabrik.io/v1alpha1" && o.kind === "SFServiceInstance")).toBe(true);
    const secrets = await listAll<{ apiVersion: string; kind: string }>(api, "/api/v1/namespaces/sf-0/secrets", { pageSize: 5 });
    expect(secrets.items.map((o) => [o.apiVersion, o.kind])).toEqual(Array(12).fill(["v1", "Secret"]));
    // The default page: 500, one request here.
    const whole = tappedKubeApi(api);
    expect((await listAll(whole, INSTANCES)).items).toHaveLength(57);
    expect(whole.requests.map((r) => r.query?.limit)).toEqual([500]);
  });

  it("keeps what `keep` answers for each item as its page arrives, and leaves out the items it answers undefined for", async () => {
    const seen: number[] = [];
    const kept = await listAll<{ metadata: { namespace: string; name: string } }, string>(api, INSTANCES, {
      pageSize: 10,
      keep: (o) => {
        seen.push(seen.length);
        return o.metadata.namespace === "sf-1" ? o.metadata.name : undefined;
      },
    });
    expect(seen).toHaveLength(57);
    expect(kept.items).toEqual([...Array(57).keys()].filter((i) => i % 4 === 1).map((i) => `i-${String(i).padStart(3, "0")}`));
  });

  it("starts again from the first page when the continue token expired (410), then lists what is there now", async () => {
    const compacting = tappedKubeApi(api, (n) => {
      if (n !== 2) return;
      server.store.upsert({ apiVersion: "osb.servicefabrik.io/v1alpha1", kind: "SFServiceInstance", metadata: { namespace: "sf-9", name: "late" } });
      server.compact();
    });
    const list = await listAll(compacting, INSTANCES, { pageSize: 20 });
    expect(names(list.items)).toContain("sf-9/late");
    expect(list.items).toHaveLength(58);
    // First pass: pages 1, 2, then 410 on page 3; second pass: three pages of the new snapshot.
    expect(compacting.requests.map((r) => (r.query?.continue === undefined ? "first" : "next"))).toEqual(["first", "next", "next", "first", "next", "next"]);
    server.store.delete({ apiVersion: "osb.servicefabrik.io/v1alpha1", kind: "SFServiceInstance", namespace: "sf-9", name: "late" });
  });

  it("fails with a KubeApiError (410 Expired) when the token expires on every try", async () => {
    // Any write, then a compaction at its revision: the snapshot of every first page is gone.
    const always = tappedKubeApi(api, (n) => {
      server.store.upsert({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "sf-0", name: "tick" }, data: { n: String(n) } });
      server.compact();
    });
    const error = await listAll(always, INSTANCES, { pageSize: 20, restarts: 2 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KubeApiError);
    expect(error).toMatchObject({ status: 410, reason: "Expired" });
    expect((error as Error).message).toMatch(
      new RegExp(`^list ${INSTANCES}: the continue token expired before the last page, 3 time\\(s\\) \\(the API server compacted its history meanwhile\\): cluster test: list ${INSTANCES} \\(page 2\\): HTTP 410: The provided continue parameter is too old`),
    );
    expect(always.requests).toHaveLength(6);
  });

  it("refuses a page size that is not a whole number from 1", async () => {
    await expect(listAll(api, INSTANCES, { pageSize: 0 })).rejects.toThrow("a list's page size must be a whole number from 1: 0");
  });
});

describe("the request helper: every failure a KubeApiError", () => {
  it("an HTTP status with the Status's reason and message, and Retry-After", async () => {
    server.setAvailable(false, { code: 429, retryAfterSeconds: 3 });
    try {
      const error = await listAll(api, INSTANCES).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(KubeApiError);
      expect(error).toMatchObject({
        message: `cluster test: list ${INSTANCES}: HTTP 429: the server is currently unable to handle the request`,
        status: 429,
        reason: "TooManyRequests",
        retryAfterMs: 3_000,
      });
    } finally {
      server.setAvailable(true);
    }
    const missing = await api.request({ method: "GET", path: "/api/v1/namespaces/sf-0/secrets/absent" }).catch((e: unknown) => e);
    expect(missing).toMatchObject({ name: "KubeApiError", status: 404, reason: "NotFound", message: 'cluster test: GET /api/v1/namespaces/sf-0/secrets/absent: HTTP 404: secrets "absent" not found' });
    // A status the caller expects is an answer.
    expect(await api.request({ method: "GET", path: "/api/v1/namespaces/sf-0/secrets/absent", answers: [404] })).toMatchObject({ status: 404, body: { reason: "NotFound" } });
  });

  it("no connection, no answer in time, an abort", async () => {
    const unreachable = new KubeConfig();
    unreachable.loadFromString(server.kubeconfig().replace(String(server.port), "1"));
    const refused = await createKubeApi({ kubeConfig: unreachable }).request({ method: "GET", path: "/api/v1" }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(KubeApiError);
    expect(refused).toMatchObject({ status: undefined, message: expect.stringMatching(/^GET \/api\/v1: no answer from the API server \(http:\/\/127\.0\.0\.1:1\): /) });

    let proxy: HangProxy | undefined;
    try {
      proxy = await startHangProxy(server.port);
      proxy.setHanging(true);
      const hung = new KubeConfig();
      hung.loadFromString(server.kubeconfig().replace(String(server.port), String(proxy.port)));
      const hangingApi = createKubeApi({ kubeConfig: hung, timeoutMs: 300 });
      await expect(hangingApi.request({ method: "GET", path: "/api/v1" })).rejects.toMatchObject({ name: "KubeApiError", message: "GET /api/v1: no answer within 0.3 s" });
      const stop = new AbortController();
      const aborted = hangingApi.request({ method: "GET", path: "/api/v1", signal: stop.signal, timeoutMs: 600_000 }).catch((e: unknown) => e);
      stop.abort();
      expect(await aborted).toMatchObject({ name: "KubeApiError", message: "GET /api/v1: aborted" });
    } finally {
      await proxy?.close();
    }
  });
});

describe("discovery", () => {
  it("finds a kind's collection, says when it is not served, and builds its paths", async () => {
    const find = createResourceFinder(api);
    const info = await find("osb.servicefabrik.io/v1alpha1", "SFServiceInstance");
    expect(info).toEqual({ plural: "sfserviceinstances", namespaced: true });
    expect(await find("osb.servicefabrik.io/v1alpha1", "SFServiceBinding")).toBeUndefined();
    expect(await find("bind.servicefabrik.io/v1alpha1", "SFBind")).toBeUndefined();
    await expect(createDiscovery(api)("bind.servicefabrik.io/v1alpha1", "SFBind")).rejects.toMatchObject({ status: 404, message: "the cluster does not serve bind.servicefabrik.io/v1alpha1 SFBind" });
    expect(collectionPath("osb.servicefabrik.io/v1alpha1", info!, "")).toBe(INSTANCES);
    expect(collectionPath("v1", { plural: "secrets", namespaced: true }, "sf-0")).toBe("/api/v1/namespaces/sf-0/secrets");
    expect(objectPath("v1", { plural: "namespaces", namespaced: false }, "ignored", "sf-0")).toBe("/api/v1/namespaces/sf-0");
    expect(() => objectPath("v1", { plural: "secrets", namespaced: true }, undefined, "s")).toThrow("secrets of v1 are namespaced: s needs a namespace");
  });
});
