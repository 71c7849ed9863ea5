import { createHook } from "node:async_hooks";
import type { KubeConfig, KubernetesObject } from "@kubernetes/client-node";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { startKubeApiServer, type KubeApiServer, type KubeObject } from "../../test/support/kube-api-server.js";
import { createLogger } from "../log/index.js";
import { InvalidArgumentError, KubeApiError } from "../errors/index.js";
import { createWatchCache, type WatchCache, type WatchCacheEvent, type WatchCacheOptions } from "./kube-cache.js";
import type { ListWatchTransport } from "../kube/index.js";
import { EVENT_CEILING_MS } from "../../test/support/processes.js";

const POSTGRESQLS = "/apis/acid.zalan.do/v1/postgresqls";

/** Waits until `assertion` passes (5 s at most): every test awaits what it asserts. */
const eventually = <T>(assertion: () => T): Promise<T> => vi.waitFor(assertion, { timeout: EVENT_CEILING_MS, interval: 10 });

let server: KubeApiServer;
let kc: KubeConfig;
let caches: WatchCache[];

beforeEach(async () => {
  server = await startKubeApiServer({
    bookmarkIntervalMs: 50,
    resources: [{ group: "acid.zalan.do", version: "v1", kind: "postgresql", plural: "postgresqls", namespaced: true }],
  });
  kc = server.loadKubeConfig();
  caches = [];
});
afterEach(async () => {
  await Promise.all(caches.map((c) => c.stop()));
  await server.close();
});

const postgresql = (namespace: string, name: string, spec: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: "acid.zalan.do/v1",
  kind: "postgresql",
  metadata: { namespace, name },
  spec: { teamId: "acid", numberOfInstances: 1, ...spec },
});

const ref = (namespace: string, name: string) => ({ apiVersion: "acid.zalan.do/v1", kind: "postgresql", namespace, name });

/** Log lines as objects, to assert that failures are logged. */
function captureLogs() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) } });
  return { logger, lines, warnings: () => lines.filter((l) => l.level === 40) };
}

/** An injected delay that records each wait and resolves it when the test says so. */
function heldDelay() {
  const calls: number[] = [];
  const held: Array<() => void> = [];
  return {
    calls,
    delay: (ms: number) => {
      calls.push(ms);
      return new Promise<void>((resolve) => held.push(resolve));
    },
    release: () => held.splice(0).forEach((resolve) => resolve()),
  };
}

function makeCache(options: Partial<WatchCacheOptions> = {}) {
  const logs = captureLogs();
  const events: Array<[string, string]> = [];
  const cache = createWatchCache({ kubeConfig: kc, path: POSTGRESQLS, logger: logs.logger, random: () => 0.5, ...options });
  cache.onChange((e: WatchCacheEvent) => events.push([e.type, `${e.object.metadata?.namespace}/${e.object.metadata?.name}`]));
  caches.push(cache);
  return { cache, events, logs };
}

/**
 * Timers created from now on that are still pending and would keep the process alive (unref'd
 * ones, like the AbortSignal.timeout client-node's Watch creates, do not count).
 */
function trackTimers() {
  const live = new Map<number, { hasRef(): boolean }>();
  const hook = createHook({
    init(id, type, _trigger, resource) {
      if (type === "Timeout") live.set(id, resource as { hasRef(): boolean });
    },
    destroy(id) {
      live.delete(id);
    },
  }).enable();
  return {
    async pending(): Promise<number> {
      // Destroy hooks of cleared timers run asynchronously.
      await new Promise((resolve) => setImmediate(resolve));
      return [...live.values()].filter((t) => t.hasRef()).length;
    },
    disable: () => hook.disable(),
  };
}

const names = (objects: KubernetesObject[]): string[] =>
  objects.map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`).sort();

const lists = (): number => server.requests.filter((r) => r.method === "GET" && r.path === POSTGRESQLS && !r.watch).length;
const watches = () => server.requests.filter((r) => r.path === POSTGRESQLS && r.watch);

describe("createWatchCache", () => {
  it("lists, then answers get/list from memory", async () => {
    server.store.upsert(postgresql("a", "db1"));
    server.store.upsert(postgresql("b", "db2"));
    const syncedAt = new Date("2030-01-02T03:04:05Z");
    const { cache, events } = makeCache({ now: () => syncedAt });
    await cache.start();

    expect(names(cache.list())).toEqual(["a/db1", "b/db2"]);
    expect(events).toEqual([["ADDED", "a/db1"], ["ADDED", "b/db2"]]);
    expect(cache.get("a", "db1")).toMatchObject({ kind: "postgresql", spec: { teamId: "acid" } });
    expect(cache.get("b", "db1")).toBeUndefined();
    expect(cache.state()).toEqual({ synced: true, lastSyncAt: syncedAt, resourceVersion: "2", relists: 0, watchRestarts: 0 });
    await eventually(() => expect(watches()).toHaveLength(1));
    expect(watches()[0]!.query).toMatchObject({ resourceVersion: "2", allowWatchBookmarks: "true", timeoutSeconds: "240" });

    const before = server.requests.length;
    for (let i = 0; i < 100; i++) cache.get("a", "db1");
    cache.list();
    expect(server.requests.length).toBe(before);
  });

  it("restores apiVersion/kind on core list items and passes the label selector", async () => {
    server.store.upsert({ apiVersion: "v1", kind: "Secret", metadata: { namespace: "a", name: "s1", labels: { app: "db" } } });
    server.store.upsert({ apiVersion: "v1", kind: "Secret", metadata: { namespace: "a", name: "s2", labels: { app: "web" } } });
    const { cache } = makeCache({ path: "/api/v1/secrets", labelSelector: "app in (db)" });
    await cache.start();
    expect(cache.list()).toEqual([expect.objectContaining({ apiVersion: "v1", kind: "Secret", metadata: expect.objectContaining({ name: "s1" }) })]);
    await eventually(() => expect(server.requests.at(-1)).toMatchObject({ watch: true, query: { labelSelector: "app in (db)" } }));
  });

  it("sees additions, modifications and deletions live", async () => {
    server.store.upsert(postgresql("a", "db1"));
    const { cache, events } = makeCache();
    await cache.start();
    await eventually(() => expect(server.openWatches()).toBe(1));

    server.store.upsert(postgresql("a", "db2"));
    server.store.upsert(postgresql("a", "db1", { numberOfInstances: 3 }));
    server.store.delete(ref("a", "db2"));
    await eventually(() => expect(events).toEqual([["ADDED", "a/db1"], ["ADDED", "a/db2"], ["MODIFIED", "a/db1"], ["DELETED", "a/db2"]]));
    expect(cache.get("a", "db1")).toMatchObject({ spec: { numberOfInstances: 3 } });
    expect(names(cache.list())).toEqual(["a/db1"]);
    expect(cache.state().resourceVersion).toBe(server.store.resourceVersion());
  });

  it("treats objects leaving the label selector as deleted", async () => {
    server.store.upsert({ apiVersion: "v1", kind: "Secret", metadata: { namespace: "a", name: "s1", labels: { app: "db" } } });
    const { cache, events } = makeCache({ path: "/api/v1/secrets", labelSelector: "app=db" });
    await cache.start();
    await eventually(() => expect(server.openWatches()).toBe(1));
    server.store.upsert({ apiVersion: "v1", kind: "Secret", metadata: { namespace: "a", name: "s1", labels: { app: "web" } } });
    await eventually(() => expect(events).toEqual([["ADDED", "a/s1"], ["DELETED", "a/s1"]]));
    expect(cache.list()).toEqual([]);
  });

  it("advances its resourceVersion on bookmarks, so a later resume needs no re-list", async () => {
    server.store.upsert(postgresql("a", "db1"));
    const held = heldDelay();
    const { cache, events } = makeCache({ delay: held.delay });
    await cache.start();
    expect(cache.state().resourceVersion).toBe("1");
    // Changes to other kinds move the global resourceVersion; only bookmarks tell the cache.
    server.store.upsert({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "a", name: "c1" } });
    server.store.upsert({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "a", name: "c2" } });
    await eventually(() => expect(cache.state().resourceVersion).toBe("3"));
    expect(events).toEqual([["ADDED", "a/db1"]]);

    server.compact();
    server.dropWatches();
    await eventually(() => expect(held.calls).toEqual([1500]));
    held.release();
    await eventually(() => expect(watches().at(-1)).toMatchObject({ query: { resourceVersion: "3" } }));
    await eventually(() => expect(server.openWatches()).toBe(1));
    expect(cache.state()).toMatchObject({ relists: 0, watchRestarts: 1 });
    expect(lists()).toBe(1);
  });

  it("re-lists after 410 Expired and reports what vanished while it was disconnected", async () => {
    server.store.upsert(postgresql("a", "db1"));
    server.store.upsert(postgresql("a", "db2"));
    server.store.upsert(postgresql("a", "db3"));
    const held = heldDelay();
    const { cache, events, logs } = makeCache({ delay: held.delay });
    await cache.start();
    await eventually(() => expect(server.openWatches()).toBe(1));

    server.dropWatches();
    await eventually(() => expect(held.calls).toEqual([1500]));
    expect(cache.state().lastError).toMatch(/^watch \/apis\/acid\.zalan\.do\/v1\/postgresqls failed: Premature close/);
    // While the cache waits: changes it cannot see, then the history it would need is compacted.
    server.store.delete(ref("a", "db1"));
    server.store.upsert(postgresql("a", "db2", { numberOfInstances: 2 }));
    server.store.upsert(postgresql("b", "db4"));
    server.compact();
    held.release();

    await eventually(() =>
      expect(events.slice(3)).toEqual([["DELETED", "a/db1"], ["MODIFIED", "a/db2"], ["ADDED", "b/db4"]]),
    );
    expect(names(cache.list())).toEqual(["a/db2", "a/db3", "b/db4"]);
    await eventually(() => expect(server.openWatches()).toBe(1));
    expect(cache.state()).toMatchObject({ synced: true, relists: 1, watchRestarts: 2, resourceVersion: server.store.resourceVersion() });
    expect(cache.state().lastError).toBeUndefined();
    expect(lists()).toBe(2);
    expect(logs.lines.some((l) => l.msg === "watch expired (410), re-listing")).toBe(true);
    expect(logs.warnings()).toHaveLength(1);
  });

  it("backs off 1s..30s with equal jitter while the server answers 503, then recovers", async () => {
    server.store.upsert(postgresql("a", "db1"));
    server.setAvailable(false);
    const calls: number[] = [];
    const states: Array<string | undefined> = [];
    const { cache, logs } = makeCache({
      delay: async (ms) => {
        calls.push(ms);
        states.push(cache.state().lastError);
        if (calls.length === 7) server.setAvailable(true);
      },
    });
    await cache.start();
    expect(calls).toEqual([1500, 3000, 6000, 12000, 22500, 22500, 22500]);
    expect(states).toEqual(Array(7).fill("list /apis/acid.zalan.do/v1/postgresqls: HTTP 503: the server is currently unable to handle the request"));
    expect(logs.warnings()).toHaveLength(7);
    expect(logs.warnings()[0]).toMatchObject({ delayMs: 1500, failures: 1, err: { type: "KubeApiError", status: 503, reason: "ServiceUnavailable" } });
    expect(cache.state()).toMatchObject({ synced: true, relists: 0 });
    expect(cache.state().lastError).toBeUndefined();
    expect(names(cache.list())).toEqual(["a/db1"]);
  });

  it("draws the jitter from the injected random and starts over after a success", async () => {
    const draws = [0, 0.999, 0.25];
    let next = 0;
    const held = heldDelay();
    const { cache } = makeCache({ delay: held.delay, random: () => draws[next++ % draws.length]! });
    server.setAvailable(false);
    const started = cache.start();
    for (const expected of [[1000], [1000, 3998], [1000, 3998, 5000]]) {
      await eventually(() => expect(held.calls).toEqual(expected));
      held.release();
    }
    await eventually(() => expect(held.calls).toHaveLength(4));
    server.setAvailable(true);
    held.release();
    await started;

    // The watch fails (server down), the backoff starts again at the bottom.
    await eventually(() => expect(server.openWatches()).toBe(1));
    server.setAvailable(false);
    server.dropWatches();
    await eventually(() => expect(held.calls).toHaveLength(5));
    expect(held.calls[4]).toBeLessThanOrEqual(2000);
    server.setAvailable(true);
    held.release();
    await eventually(() => expect(server.openWatches()).toBe(1));
    expect(cache.state().relists).toBe(0);
  });

  it("honours Retry-After on a 429 list", async () => {
    server.setAvailable(false, { code: 429, retryAfterSeconds: 7 });
    const calls: number[] = [];
    const { cache } = makeCache({
      delay: async (ms) => {
        calls.push(ms);
        if (calls.length === 2) server.setAvailable(true);
      },
    });
    await cache.start();
    expect(calls).toEqual([7000, 7000]);
  });

  it("survives refused connections and resumes the watch from its resourceVersion", async () => {
    server.store.upsert(postgresql("a", "db1"));
    const held = heldDelay();
    const { cache, events } = makeCache({ delay: held.delay });
    await cache.start();
    await eventually(() => expect(server.openWatches()).toBe(1));

    await server.stop();
    await eventually(() => expect(held.calls).toEqual([1500]));
    held.release();
    await eventually(() => expect(held.calls).toEqual([1500, 3000]));
    expect(cache.state().lastError).toMatch(/ECONNREFUSED/);
    await server.start();
    held.release();
    await eventually(() => expect(server.openWatches()).toBe(1));
    server.store.upsert(postgresql("a", "db2"));
    await eventually(() => expect(events).toEqual([["ADDED", "a/db1"], ["ADDED", "a/db2"]]));
    expect(cache.state()).toMatchObject({ relists: 0, resourceVersion: "2" });
    expect(cache.state().lastError).toBeUndefined();
  });

  it("re-lists periodically", async () => {
    server.store.upsert(postgresql("a", "db1"));
    const { cache, events } = makeCache({ relistIntervalMs: 100 });
    await cache.start();
    await eventually(() => expect(cache.state().relists).toBeGreaterThanOrEqual(3));
    expect(lists()).toBeGreaterThanOrEqual(4);
    expect(events).toEqual([["ADDED", "a/db1"]]);
    expect(cache.state().lastError).toBeUndefined();
  });

  it("keeps going when a listener throws, and logs it", async () => {
    const { cache, events, logs } = makeCache();
    cache.onChange(() => {
      throw new Error("listener bug");
    });
    await cache.start();
    await eventually(() => expect(server.openWatches()).toBe(1));
    server.store.upsert(postgresql("a", "db1"));
    server.store.upsert(postgresql("a", "db2"));
    await eventually(() => expect(events).toEqual([["ADDED", "a/db1"], ["ADDED", "a/db2"]]));
    expect(logs.lines.filter((l) => l.msg === "watch cache listener failed")).toHaveLength(2);
  });

  it("stop() closes the watch and clears its timers (re-list, backoff)", async () => {
    const timers = trackTimers();
    const { cache } = makeCache();
    await cache.start();
    await eventually(() => expect(server.openWatches()).toBe(1));
    expect(await timers.pending()).toBeGreaterThanOrEqual(1);
    await cache.stop();
    await eventually(() => expect(server.openWatches()).toBe(0));
    expect(await timers.pending()).toBe(0);
    await expect(cache.start()).rejects.toBeInstanceOf(KubeApiError);

    // Stopped during a (default, real-timer) backoff before the first list: start() rejects at
    // once and the backoff timer is gone.
    server.setAvailable(false);
    const waiting = makeCache({ random: () => 0.999 }).cache;
    const started = waiting.start().then(
      () => undefined,
      (error: unknown) => error,
    );
    await eventually(() => expect(waiting.state().lastError).toMatch(/HTTP 503/));
    expect(await timers.pending()).toBe(1);
    const t0 = Date.now();
    await waiting.stop();
    expect(Date.now() - t0).toBeLessThan(500);
    expect(await timers.pending()).toBe(0);
    timers.disable();
    const error = await started;
    expect(error).toBeInstanceOf(KubeApiError);
    expect((error as KubeApiError).cause).toMatchObject({ status: 503 });
    const listsAfterStop = lists();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(lists()).toBe(listsAfterStop);
  });

  it("rejects a path it cannot watch", () => {
    const logger = captureLogs().logger;
    expect(() => createWatchCache({ kubeConfig: kc, path: "apis/x", logger })).toThrow(InvalidArgumentError);
    expect(() => createWatchCache({ kubeConfig: kc, path: "/api/v1/secrets?watch=1", logger })).toThrow(InvalidArgumentError);
  });
});

describe("createWatchCache with an injected transport (no API server)", () => {
  /** A transport the test scripts: each list answers the next entry; each watch is held open until the test ends it. */
  function scriptedTransport(listAnswers: Array<{ items: KubernetesObject[]; resourceVersion: string } | KubeApiError>) {
    const watches: Array<{ from: string; send: (type: string, object: Record<string, unknown>) => void; end: (error?: unknown) => void }> = [];
    const listCalls: number[] = [];
    const transport: ListWatchTransport = {
      list: () => {
        listCalls.push(listCalls.length + 1);
        const answer = listAnswers.shift();
        if (answer === undefined) return new Promise(() => {});
        return answer instanceof KubeApiError ? Promise.reject(answer) : Promise.resolve(answer);
      },
      watch: (from, onEvent, onDone) => {
        let done = false;
        const end = (error?: unknown) => {
          if (done) return;
          done = true;
          onDone(error);
        };
        watches.push({ from, send: (type, object) => onEvent(type, object), end });
        return Promise.resolve({ abort: () => end(new Error("aborted")) });
      },
    };
    return { transport, watches, listCalls };
  }
  const item = (name: string, resourceVersion: string) => ({ apiVersion: "acid.zalan.do/v1", kind: "postgresql", metadata: { namespace: "ns", name, resourceVersion } });

  it("lists, watches from the list's resourceVersion, resumes from the last one seen, and re-lists after 410 with DELETED for what vanished", async () => {
    const script = scriptedTransport([
      { items: [item("a", "3"), item("b", "4")], resourceVersion: "5" },
      { items: [item("a", "3")], resourceVersion: "20" },
    ]);
    const held = heldDelay();
    const { cache, events } = makeCache({ kubeConfig: undefined, transport: script.transport, delay: held.delay });
    await cache.start();
    expect(events).toEqual([["ADDED", "ns/a"], ["ADDED", "ns/b"]]);
    await eventually(() => expect(script.watches.map((w) => w.from)).toEqual(["5"]));

    script.watches[0]!.send("MODIFIED", item("a", "7"));
    script.watches[0]!.send("BOOKMARK", { metadata: { resourceVersion: "9" } });
    script.watches[0]!.end(); // the server's timeout: resumed, not re-listed
    await eventually(() => expect(script.watches.map((w) => w.from)).toEqual(["5", "9"]));
    expect(script.listCalls).toEqual([1]);

    script.watches[1]!.send("ERROR", { kind: "Status", code: 410, reason: "Expired", message: "too old resource version" });
    script.watches[1]!.end();
    await eventually(() => expect(script.watches.map((w) => w.from)).toEqual(["5", "9", "20"]));
    expect(script.listCalls).toEqual([1, 2]);
    expect(events.slice(2)).toEqual([["MODIFIED", "ns/a"], ["DELETED", "ns/b"], ["MODIFIED", "ns/a"]]);
    expect(cache.state()).toMatchObject({ synced: true, relists: 1, watchRestarts: 2, resourceVersion: "20" });
    expect(held.calls).toEqual([]);
  });

  it("waits the Retry-After of a failed list, else the backoff, and clears the failure once a list succeeds", async () => {
    const script = scriptedTransport([
      new KubeApiError("list /p: HTTP 429", { status: 429, retryAfterMs: 3_000 }),
      new KubeApiError("list /p: HTTP 503", { status: 503 }),
      { items: [], resourceVersion: "1" },
    ]);
    const held = heldDelay();
    const { cache } = makeCache({ kubeConfig: undefined, transport: script.transport, delay: held.delay, random: () => 0 });
    const started = cache.start();
    await eventually(() => expect(held.calls).toEqual([3_000]));
    expect(cache.state().lastError).toBe("list /p: HTTP 429");
    held.release();
    // The second failure in a row: the policy's second step (2 s doubled), half of it with random 0.
    await eventually(() => expect(held.calls).toEqual([3_000, 2_000]));
    held.release();
    await started;
    expect(cache.state().lastError).toBeUndefined();
  });

  it("needs a kubeConfig or a transport", () => {
    expect(() => createWatchCache({ path: POSTGRESQLS, logger: captureLogs().logger })).toThrow(/needs a kubeConfig or a transport/);
  });
});
