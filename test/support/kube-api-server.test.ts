/**
 * The test Kubernetes API server, driven by the real @kubernetes/client-node 1.x: if these pass,
 * the server speaks what client-node sends and understands what it answers.
 */
import {
  ApiException,
  ApisApi,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  KubeConfig,
  PatchStrategy,
  Watch,
  setHeaderOptions,
  type KubernetesObject,
} from "@kubernetes/client-node";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { startKubeApiServer, type KubeApiServer } from "./kube-api-server.js";
import { EVENT_CEILING_MS } from "./processes.js";

const POSTGRESQL = { group: "acid.zalan.do", version: "v1", kind: "postgresql", plural: "postgresqls", namespaced: true };
const APPLICATION = { group: "argoproj.io", version: "v1alpha1", kind: "Application", plural: "applications", namespaced: true };
const KUSTOMIZATION = { group: "kustomize.toolkit.fluxcd.io", version: "v1", kind: "Kustomization", plural: "kustomizations", namespaced: true };

/** Waits until `assertion` passes (5 s at most): every test awaits what it asserts. */
const eventually = <T>(assertion: () => T): Promise<T> => vi.waitFor(assertion, { timeout: EVENT_CEILING_MS, interval: 10 });

let server: KubeApiServer;
let kc: KubeConfig;

beforeEach(async () => {
  server = await startKubeApiServer({ bookmarkIntervalMs: 50, resources: [POSTGRESQL, APPLICATION] });
  server.registerResource(KUSTOMIZATION);
  kc = server.loadKubeConfig();
});
afterEach(async () => {
  await server.close();
});

/** The error a promise rejects with (fails the test when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<ApiException<string>> {
  const outcome = await promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!("error" in outcome)) throw new Error(`expected a rejection, got ${JSON.stringify(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(ApiException);
  return outcome.error as ApiException<string>;
}

/** client-node 1.x hands error bodies over as text: the Kubernetes Status, parsed. */
function statusOf(error: ApiException<string>): Record<string, unknown> {
  return JSON.parse(error.body) as Record<string, unknown>;
}

interface WatchEvent {
  type: string;
  object: KubernetesObject & { code?: number; reason?: string };
}

/** A client-node watch whose events and end are collected for awaiting. */
async function openWatch(path: string, query: Record<string, string | number | boolean | undefined>) {
  const events: WatchEvent[] = [];
  let resolveDone!: (err: unknown) => void;
  const done = new Promise<unknown>((resolve) => (resolveDone = resolve));
  const controller = await new Watch(kc).watch(
    path,
    query,
    (type, object: WatchEvent["object"]) => events.push({ type, object }),
    (err: unknown) => resolveDone(err),
  );
  const changes = (): Array<[string, string | undefined]> =>
    events.filter((e) => e.type !== "BOOKMARK").map((e) => [e.type, e.object.metadata?.name]);
  return { events, done, controller, changes };
}

const secret = (namespace: string, name: string, labels: Record<string, string> = {}) => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { namespace, name, labels },
  data: { password: Buffer.from(`pw-${name}`).toString("base64") },
});

const postgresql = (namespace: string, name: string) => ({
  apiVersion: "acid.zalan.do/v1",
  kind: "postgresql",
  metadata: { namespace, name },
  spec: { teamId: "acid", numberOfInstances: 1, volume: { size: "1Gi" } },
});

describe("discovery", () => {
  it("lists the core resources and the registered groups", async () => {
    const core = await kc.makeApiClient(CoreV1Api).getAPIResources();
    expect(core.resources.map((r) => [r.name, r.kind, r.namespaced])).toEqual([
      ["namespaces", "Namespace", false],
      ["secrets", "Secret", true],
      ["configmaps", "ConfigMap", true],
      ["services", "Service", true],
    ]);
    const groups = await kc.makeApiClient(ApisApi).getAPIVersions();
    expect(groups.groups.map((g) => [g.name, g.preferredVersion?.groupVersion])).toEqual([
      ["acid.zalan.do", "acid.zalan.do/v1"],
      ["argoproj.io", "argoproj.io/v1alpha1"],
      ["kustomize.toolkit.fluxcd.io", "kustomize.toolkit.fluxcd.io/v1"],
    ]);
  });

  it("lets KubernetesObjectApi resolve custom kinds through /apis/<group>/<version>", async () => {
    const api = KubernetesObjectApi.makeApiClient(kc);
    const app = {
      apiVersion: "argoproj.io/v1alpha1",
      kind: "Application",
      metadata: { name: "cluster-a", namespace: "argocd" },
      spec: { destination: { server: "https://a.example" }, source: { path: "clusters/a" } },
    };
    const created = await api.create<KubernetesObject>(app);
    expect(created.metadata?.resourceVersion).toBe("1");
    const read = await api.read({ apiVersion: app.apiVersion, kind: app.kind, metadata: { name: "cluster-a", namespace: "argocd" } });
    expect(read).toMatchObject(app);
    const patched = await api.patch(
      { apiVersion: app.apiVersion, kind: app.kind, metadata: { name: "cluster-a", namespace: "argocd" }, status: { sync: { status: "Synced" } } },
      undefined,
      undefined,
      undefined,
      undefined,
      PatchStrategy.MergePatch,
    );
    expect(patched).toMatchObject({ spec: app.spec, status: { sync: { status: "Synced" } } });
    const listed = await api.list("argoproj.io/v1alpha1", "Application", "argocd");
    expect(listed.items.map((i) => i.metadata?.name)).toEqual(["cluster-a"]);
    const deleted = await api.delete(read);
    expect(deleted).toMatchObject({ kind: "Status", status: "Success", details: { name: "cluster-a", kind: "applications" } });
    expect(server.requests.filter((r) => r.path === "/apis/argoproj.io/v1alpha1").length).toBeGreaterThanOrEqual(1);

    const kustomization = await api.create<KubernetesObject>({
      apiVersion: "kustomize.toolkit.fluxcd.io/v1",
      kind: "Kustomization",
      metadata: { name: "cluster-b", namespace: "flux-system" },
    });
    expect(kustomization.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("answers unknown paths with a 404 Status", async () => {
    const error = await rejection(
      kc.makeApiClient(CustomObjectsApi).listClusterCustomObject({ group: "example.com", version: "v1", plural: "widgets" }),
    );
    expect(error.code).toBe(404);
    expect(statusOf(error)).toMatchObject({ kind: "Status", reason: "NotFound", code: 404 });
  });
});

describe("CRUD", () => {
  it("creates, reads, replaces and deletes a Secret with CoreV1Api", async () => {
    const core = kc.makeApiClient(CoreV1Api);
    const created = await core.createNamespacedSecret({ namespace: "ns1", body: secret("ns1", "creds") });
    expect(created.metadata).toMatchObject({ name: "creds", namespace: "ns1", resourceVersion: "1", generation: 1 });

    const duplicate = await rejection(core.createNamespacedSecret({ namespace: "ns1", body: secret("ns1", "creds") }));
    expect(duplicate.code).toBe(409);
    expect(statusOf(duplicate)).toMatchObject({ reason: "AlreadyExists", message: 'secrets "creds" already exists' });

    const read = await core.readNamespacedSecret({ namespace: "ns1", name: "creds" });
    read.data = { password: Buffer.from("new").toString("base64") };
    const replaced = await core.replaceNamespacedSecret({ namespace: "ns1", name: "creds", body: read });
    expect(replaced.metadata).toMatchObject({ resourceVersion: "2", generation: 2, uid: created.metadata?.uid });

    const stale = await rejection(core.replaceNamespacedSecret({ namespace: "ns1", name: "creds", body: read }));
    expect(stale.code).toBe(409);
    expect(statusOf(stale)).toMatchObject({ reason: "Conflict" });

    const status = await core.deleteNamespacedSecret({ namespace: "ns1", name: "creds" });
    expect(status).toMatchObject({ kind: "Status", status: "Success", details: { name: "creds", kind: "secrets" } });
    const gone = await rejection(core.readNamespacedSecret({ namespace: "ns1", name: "creds" }));
    expect(gone.code).toBe(404);
    expect(statusOf(gone)).toMatchObject({ kind: "Status", status: "Failure", reason: "NotFound", message: 'secrets "creds" not found', code: 404 });
    expect((await rejection(core.deleteNamespacedSecret({ namespace: "ns1", name: "creds" }))).code).toBe(404);
    expect(server.store.resourceVersion()).toBe("3");
  });

  it("serves cluster-scoped namespaces", async () => {
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "tenant-a", labels: { team: "a" } } } });
    expect((await core.readNamespace({ name: "tenant-a" })).metadata?.labels).toEqual({ team: "a" });
    expect((await core.listNamespace({ labelSelector: "team=a" })).items.map((n) => n.metadata?.name)).toEqual(["tenant-a"]);
  });

  it("serves custom resources through CustomObjectsApi, across namespaces", async () => {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const target = { group: "acid.zalan.do", version: "v1", plural: "postgresqls" };
    await custom.createNamespacedCustomObject({ ...target, namespace: "a", body: postgresql("a", "db1") });
    await custom.createNamespacedCustomObject({ ...target, namespace: "b", body: postgresql("b", "db2") });
    const mismatch = await rejection(custom.createNamespacedCustomObject({ ...target, namespace: "a", body: postgresql("b", "db3") }));
    expect(mismatch.code).toBe(400);

    const all = (await custom.listClusterCustomObject(target)) as { kind: string; items: KubernetesObject[] };
    expect(all.kind).toBe("postgresqlList");
    expect(all.items.map((i) => `${i.metadata?.namespace}/${i.metadata?.name}`)).toEqual(["a/db1", "b/db2"]);
    // Custom resources keep apiVersion/kind in list items (the core group does not).
    expect(all.items[0]).toMatchObject({ apiVersion: "acid.zalan.do/v1", kind: "postgresql" });
    const one = (await custom.getNamespacedCustomObject({ ...target, namespace: "b", name: "db2" })) as KubernetesObject;
    expect(one.metadata?.name).toBe("db2");
    await custom.deleteNamespacedCustomObject({ ...target, namespace: "b", name: "db2" });
    expect(server.store.list("acid.zalan.do/v1", "postgresql").map((o) => o.metadata.name)).toEqual(["db1"]);
  });

  it("keeps an object with finalizers until the last finalizer is removed", async () => {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const target = { group: "acid.zalan.do", version: "v1", plural: "postgresqls", namespace: "a", name: "db1" };
    const body = { ...postgresql("a", "db1"), metadata: { namespace: "a", name: "db1", finalizers: ["postgres-operator.acid.zalan.do"] } };
    await custom.createNamespacedCustomObject({ ...target, body });
    const pending = (await custom.deleteNamespacedCustomObject(target)) as KubernetesObject;
    expect(pending.metadata?.deletionTimestamp).toBeDefined();
    expect(server.store.get({ apiVersion: "acid.zalan.do/v1", kind: "postgresql", namespace: "a", name: "db1" })).toBeDefined();
    await custom.patchNamespacedCustomObject(
      { ...target, body: { metadata: { finalizers: null } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    expect(server.store.get({ apiVersion: "acid.zalan.do/v1", kind: "postgresql", namespace: "a", name: "db1" })).toBeUndefined();
  });

  it("rejects a wrong token with 401", async () => {
    const other = new KubeConfig();
    other.loadFromString(server.kubeconfig().replace(/token: .*/, "token: wrong"));
    const error = await rejection(other.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: "x" }));
    expect(error.code).toBe(401);
  });
});

describe("patch", () => {
  it("applies JSON patches (the client-node default), merge patches and strategic merge patches", async () => {
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({ namespace: "ns", body: { metadata: { name: "cfg", labels: { a: "1" } }, data: { x: "1", y: "2" } } });

    const jsonPatched = await core.patchNamespacedConfigMap({
      namespace: "ns",
      name: "cfg",
      body: [
        { op: "test", path: "/data/x", value: "1" },
        { op: "replace", path: "/data/x", value: "10" },
        { op: "remove", path: "/data/y" },
        { op: "add", path: "/metadata/labels/b", value: "2" },
      ],
    });
    expect(jsonPatched.data).toEqual({ x: "10" });
    expect(jsonPatched.metadata?.labels).toEqual({ a: "1", b: "2" });
    expect(server.requests.at(-1)).toMatchObject({ method: "PATCH", contentType: "application/json-patch+json", status: 200 });

    const failedTest = await rejection(
      core.patchNamespacedConfigMap({ namespace: "ns", name: "cfg", body: [{ op: "test", path: "/data/x", value: "1" }] }),
    );
    expect(failedTest.code).toBe(422);

    const merged = await core.patchNamespacedConfigMap(
      { namespace: "ns", name: "cfg", body: { data: { z: "3" }, metadata: { labels: { a: null } } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    expect(merged.data).toEqual({ x: "10", z: "3" });
    expect(merged.metadata?.labels).toEqual({ b: "2" });

    const strategic = await core.patchNamespacedConfigMap(
      { namespace: "ns", name: "cfg", body: { data: { x: "11" } } },
      setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
    );
    expect(strategic.data).toEqual({ x: "11", z: "3" });

    const conditional = await rejection(
      core.patchNamespacedConfigMap(
        { namespace: "ns", name: "cfg", body: { metadata: { resourceVersion: "1" }, data: { x: "12" } } },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      ),
    );
    expect(conditional.code).toBe(409);
    expect((await rejection(core.patchNamespacedConfigMap({ namespace: "ns", name: "missing", body: [] }))).code).toBe(404);
  });
});

describe("store.subscribe", () => {
  it("tells a controller of each change, HTTP or store, until it unsubscribes; an annotation does not bump the generation", async () => {
    const seen: Array<[string, string | undefined, number | undefined, string | undefined]> = [];
    const unsubscribe = server.store.subscribe((type, object, previous) =>
      seen.push([type, object.metadata.annotations?.["reconcile.fluxcd.io/requestedAt"], object.metadata.generation, previous?.metadata.resourceVersion]),
    );
    const ks = server.store.upsert({ apiVersion: "kustomize.toolkit.fluxcd.io/v1", kind: "Kustomization", metadata: { name: "east", namespace: "flux-system" }, spec: { interval: "1m" } });
    await kc.makeApiClient(KubernetesObjectApi).patch(
      { apiVersion: "kustomize.toolkit.fluxcd.io/v1", kind: "Kustomization", metadata: { name: "east", namespace: "flux-system", annotations: { "reconcile.fluxcd.io/requestedAt": "now" } } },
      undefined, undefined, undefined, undefined, PatchStrategy.MergePatch,
    );
    unsubscribe();
    server.store.delete({ apiVersion: "kustomize.toolkit.fluxcd.io/v1", kind: "Kustomization", namespace: "flux-system", name: "east" });
    expect(seen).toEqual([
      ["ADDED", undefined, 1, undefined],
      ["MODIFIED", "now", 1, ks.metadata.resourceVersion],
    ]);
  });
});

describe("list", () => {
  beforeEach(() => {
    server.store.upsert(secret("ns", "a", { app: "db", tier: "back" }));
    server.store.upsert(secret("ns", "b", { app: "cache", tier: "back", legacy: "yes" }));
    server.store.upsert(secret("ns", "c", { app: "web", tier: "front" }));
    server.store.upsert(secret("ns", "d", {}));
    server.store.upsert(secret("other", "a", { app: "db" }));
  });

  it.each([
    ["app=db", ["a"]],
    ["app==db", ["a"]],
    ["app!=db", ["b", "c", "d"]],
    ["app in (db, cache)", ["a", "b"]],
    ["tier notin (front)", ["a", "b", "d"]],
    ["legacy", ["b"]],
    ["!legacy", ["a", "c", "d"]],
    ["app in (db,cache),!legacy,tier=back", ["a"]],
    ["", ["a", "b", "c", "d"]],
  ])("selects by labels with %j", async (labelSelector, names) => {
    const list = await kc.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: "ns", labelSelector });
    expect(list.items.map((s) => s.metadata?.name)).toEqual(names);
  });

  it("selects by metadata.name / metadata.namespace and lists across namespaces", async () => {
    const core = kc.makeApiClient(CoreV1Api);
    const byName = await core.listSecretForAllNamespaces({ fieldSelector: "metadata.name=a" });
    expect(byName.items.map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`)).toEqual(["ns/a", "other/a"]);
    const notNs = await core.listSecretForAllNamespaces({ fieldSelector: "metadata.namespace!=ns" });
    expect(notNs.items.map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`)).toEqual(["other/a"]);
  });

  it("returns the list resourceVersion and leaves apiVersion/kind out of core items, like kube-apiserver", async () => {
    const response = await fetch(`${server.url}/api/v1/namespaces/ns/secrets?labelSelector=app%3Ddb`, {
      headers: { authorization: `Bearer ${kc.getCurrentUser()?.token}` },
    });
    const list = (await response.json()) as { kind: string; apiVersion: string; metadata: { resourceVersion: string }; items: object[] };
    expect(list).toMatchObject({ kind: "SecretList", apiVersion: "v1", metadata: { resourceVersion: "5" } });
    expect(list.items).toHaveLength(1);
    expect(list.items[0]).not.toHaveProperty("kind");
    expect(list.items[0]).not.toHaveProperty("apiVersion");
  });

  it("answers an invalid selector with 400", async () => {
    const core = kc.makeApiClient(CoreV1Api);
    expect((await rejection(core.listNamespacedSecret({ namespace: "ns", labelSelector: "app in db" }))).code).toBe(400);
    expect((await rejection(core.listNamespacedSecret({ namespace: "ns", fieldSelector: "spec.type=x" }))).code).toBe(400);
  });
});

interface ListBody {
  kind: string;
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: KubernetesObject[];
}

/** One GET of a list, raw: what a client sees of the pages, not what a typed client keeps of them. */
async function getList(path: string, query: Record<string, string | number> = {}): Promise<{ status: number; body: ListBody & { reason?: string; message?: string } }> {
  const search = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]));
  const response = await fetch(`${server.url}${path}?${search.toString()}`, { headers: { authorization: `Bearer ${kc.getCurrentUser()?.token}` } });
  return { status: response.status, body: (await response.json()) as ListBody & { reason?: string; message?: string } };
}

/** Every page of a list with `limit`, following `continue`. */
async function pages(path: string, limit: number, query: Record<string, string> = {}): Promise<ListBody[]> {
  const out: ListBody[] = [];
  let token = "";
  do {
    const { status, body } = await getList(path, { ...query, limit, ...(token ? { continue: token } : {}) });
    expect(status).toBe(200);
    out.push(body);
    token = body.metadata.continue ?? "";
  } while (token !== "");
  return out;
}

const names = (items: KubernetesObject[]) => items.map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`);
const PG_PATH = "/apis/acid.zalan.do/v1/postgresqls";

describe("paged lists, as kube-apiserver pages them", () => {
  const all: string[] = [];
  beforeEach(() => {
    all.length = 0;
    // 23 custom resources in three namespaces, created out of key order.
    for (let i = 22; i >= 0; i--) {
      const ns = `ns-${i % 3}`;
      const name = `pg-${String(i).padStart(2, "0")}`;
      server.store.upsert(postgresql(ns, name));
      all.push(`${ns}/${name}`);
    }
    all.sort();
  });

  it("a custom resource list: limit objects a page in key order, continue and remainingItemCount until the last, one resourceVersion", async () => {
    const got = await pages(PG_PATH, 5);
    expect(got.map((p) => p.items.length)).toEqual([5, 5, 5, 5, 3]);
    expect(got.map((p) => p.metadata.remainingItemCount)).toEqual([18, 13, 8, 3, undefined]);
    // A custom resource list is unstructured in kube-apiserver: its last page says `continue: ""`.
    expect(got.map((p) => p.metadata.continue === "")).toEqual([false, false, false, false, true]);
    expect(new Set(got.map((p) => p.metadata.resourceVersion))).toEqual(new Set([server.store.resourceVersion()]));
    expect(got.flatMap((p) => names(p.items))).toEqual(all);
    // Without limit, limit 0, or resourceVersion 0 (the watch cache ignores the limit): the whole list.
    for (const query of [{}, { limit: 0 }, { limit: 5, resourceVersion: 0 }] as Record<string, number>[]) {
      const { body } = await getList(PG_PATH, query);
      expect(names(body.items)).toEqual(all);
      expect(body.metadata).toEqual({ resourceVersion: server.store.resourceVersion(), continue: "" });
    }
    // client-node's typed list of a built-in kind keeps the token (ListMeta's `_continue`).
    const core = kc.makeApiClient(CoreV1Api);
    for (const name of ["s1", "s2", "s3"]) server.store.upsert(secret("ns-0", name));
    const first = await core.listNamespacedSecret({ namespace: "ns-0", limit: 2 });
    expect(first.items.map((x) => x.metadata?.name)).toEqual(["s1", "s2"]);
    expect(first.metadata?.remainingItemCount).toBe(1);
    const second = await core.listNamespacedSecret({ namespace: "ns-0", limit: 2, _continue: first.metadata?._continue });
    expect(second.items.map((x) => x.metadata?.name)).toEqual(["s3"]);
    expect(second.metadata?._continue).toBeUndefined();
  });

  it("every page is read from the first page's snapshot: writes in between show in the next list, not in this one", async () => {
    const first = await getList(PG_PATH, { limit: 10 });
    const before = first.body.metadata.resourceVersion;
    server.store.upsert(postgresql("ns-2", "pg-99")); // a key after the first page
    server.store.delete({ apiVersion: "acid.zalan.do/v1", kind: "postgresql", namespace: "ns-2", name: "pg-20" });
    server.store.upsert({ ...postgresql("ns-1", "pg-22"), metadata: { namespace: "ns-1", name: "pg-22", labels: { changed: "yes" } } });
    const rest = await pages(PG_PATH, 10, { continue: first.body.metadata.continue! });
    // `pages` adds limit and continue; the query's own continue starts it on the second page.
    expect(rest.every((p) => p.metadata.resourceVersion === before)).toBe(true);
    const listed = [...first.body.items, ...rest.flatMap((p) => p.items)];
    expect(names(listed)).toEqual(all);
    expect(listed.find((o) => o.metadata?.name === "pg-22")?.metadata?.labels).toBeUndefined();
    const now = (await pages(PG_PATH, 10)).flatMap((p) => p.items);
    expect(names(now)).toEqual([...all.filter((n) => n !== "ns-2/pg-20"), "ns-2/pg-99"].sort());
    expect(now.find((o) => o.metadata?.name === "pg-22")?.metadata?.labels).toEqual({ changed: "yes" });
    // The legacy form: an exact resourceVersion with a limit reads that snapshot.
    const old = await pages(PG_PATH, 100, { resourceVersion: before });
    expect(names(old.flatMap((p) => p.items))).toEqual(all);
  });

  it("in one namespace, and with a selector: pages of up to limit objects, continue while keys follow, no remainingItemCount", async () => {
    const inNs = await pages("/apis/acid.zalan.do/v1/namespaces/ns-1/postgresqls", 3);
    expect(inNs.map((p) => p.items.length)).toEqual([3, 3, 2]);
    expect(inNs.map((p) => p.metadata.remainingItemCount)).toEqual([5, 2, undefined]);
    expect(inNs.flatMap((p) => names(p.items))).toEqual(all.filter((n) => n.startsWith("ns-1/")));
    // A selector filters within the pages, no count of what follows: the keys after the last
    // match (ns-1, ns-2) make the second page continue, to an empty third.
    const selected = await pages(PG_PATH, 4, { fieldSelector: "metadata.namespace=ns-0" });
    expect(selected.map((p) => p.items.length)).toEqual([4, 4, 0]);
    expect(selected.flatMap((p) => names(p.items))).toEqual(all.filter((n) => n.startsWith("ns-0/")));
    expect(selected.map((p) => p.metadata.remainingItemCount)).toEqual([undefined, undefined, undefined]);
  });

  it("a continue token older than a compaction: 410 Expired, with a token that goes on from the latest state", async () => {
    const first = await getList(PG_PATH, { limit: 10 });
    server.store.upsert(postgresql("ns-2", "pg-99"));
    server.compact();
    const expired = await getList(PG_PATH, { limit: 10, continue: first.body.metadata.continue! });
    expect(expired.status).toBe(410);
    expect(expired.body).toMatchObject({ kind: "Status", reason: "Expired", code: 410 });
    expect(expired.body.message).toMatch(/^The provided continue parameter is too old to display a consistent list result\./);
    const inconsistent = await pages(PG_PATH, 100, { continue: expired.body.metadata.continue! });
    expect(names(inconsistent.flatMap((p) => p.items))).toEqual([...all.slice(10), "ns-2/pg-99"].sort());
    expect(inconsistent[0]!.metadata.resourceVersion).toBe(server.store.resourceVersion());
  });

  it("refuses a resourceVersion with a continue token, and a token it did not make, with 400", async () => {
    const first = await getList(PG_PATH, { limit: 10 });
    const both = await getList(PG_PATH, { limit: 10, continue: first.body.metadata.continue!, resourceVersion: first.body.metadata.resourceVersion });
    expect([both.status, both.body.message]).toEqual([400, "specifying resource version is not allowed when using continue"]);
    const bogus = await getList(PG_PATH, { limit: 10, continue: "bm90LWEtdG9rZW4" });
    expect(bogus.status).toBe(400);
    expect(bogus.body.message).toMatch(/^invalid continue token/);
  });
});

describe("watch", () => {
  it("replays the events after a resourceVersion, filtered by namespace and labels, then streams live events", async () => {
    server.store.upsert(secret("ns", "before", { app: "db" }));
    const from = server.store.resourceVersion();
    server.store.upsert(secret("ns", "a", { app: "db" }));
    server.store.upsert(secret("other", "x", { app: "db" }));
    server.store.upsert(secret("ns", "b", { app: "web" }));
    server.store.delete({ apiVersion: "v1", kind: "Secret", namespace: "ns", name: "before" });

    const w = await openWatch("/api/v1/namespaces/ns/secrets", { resourceVersion: from, labelSelector: "app=db" });
    await eventually(() => expect(w.changes()).toEqual([["ADDED", "a"], ["DELETED", "before"]]));
    expect(w.events[1]!.object.metadata?.resourceVersion).toBe("5");

    server.store.upsert({ ...secret("ns", "a", { app: "db" }), data: { password: "Y2hhbmdlZA==" } });
    // Label changes move objects in and out of the selection.
    server.store.upsert(secret("ns", "b", { app: "db" }));
    server.store.upsert(secret("ns", "a", { app: "web" }));
    await eventually(() =>
      expect(w.changes()).toEqual([["ADDED", "a"], ["DELETED", "before"], ["MODIFIED", "a"], ["ADDED", "b"], ["DELETED", "a"]]),
    );
    expect(w.events.at(-1)!.object.metadata?.resourceVersion).toBe(server.store.resourceVersion());
    expect(server.requests.at(-1)).toMatchObject({ watch: true, query: { resourceVersion: from, labelSelector: "app=db" } });
    w.controller.abort();
    await w.done;
  });

  it("starts with the current state as ADDED events when no resourceVersion is given", async () => {
    server.store.upsert(postgresql("a", "db1"));
    server.store.upsert(postgresql("b", "db2"));
    const w = await openWatch("/apis/acid.zalan.do/v1/postgresqls", {});
    await eventually(() => expect(w.changes()).toEqual([["ADDED", "db1"], ["ADDED", "db2"]]));
    w.controller.abort();
    await w.done;
  });

  it("sends bookmarks with the current resourceVersion when asked to", async () => {
    server.store.upsert(secret("ns", "a"));
    const w = await openWatch("/api/v1/secrets", { resourceVersion: server.store.resourceVersion(), allowWatchBookmarks: true });
    await eventually(() => expect(w.events.filter((e) => e.type === "BOOKMARK").length).toBeGreaterThanOrEqual(2));
    server.store.upsert(secret("ns", "other-kind-does-not-matter"));
    await eventually(() => expect(w.events.at(-1)).toMatchObject({ type: "BOOKMARK", object: { metadata: { resourceVersion: "2" } } }));
    expect(w.events.find((e) => e.type === "BOOKMARK")!.object).toEqual({ kind: "Secret", apiVersion: "v1", metadata: { resourceVersion: "1" } });
    w.controller.abort();
    await w.done;

    const plain = await openWatch("/api/v1/secrets", { resourceVersion: "2" });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(plain.events).toEqual([]);
    plain.controller.abort();
    await plain.done;
  });

  it("answers a watch from a compacted resourceVersion with one 410 Expired ERROR event, then ends", async () => {
    server.store.upsert(secret("ns", "a"));
    const old = server.store.resourceVersion();
    server.store.upsert(secret("ns", "b"));
    server.compact();
    const w = await openWatch("/api/v1/namespaces/ns/secrets", { resourceVersion: old });
    expect(await w.done).toBeNull();
    expect(w.events).toEqual([
      {
        type: "ERROR",
        object: { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message: "too old resource version: 1 (2)", reason: "Expired", code: 410 },
      },
    ]);
    // From the current resourceVersion the watch works.
    const fresh = await openWatch("/api/v1/namespaces/ns/secrets", { resourceVersion: server.store.resourceVersion() });
    server.store.upsert(secret("ns", "c"));
    await eventually(() => expect(fresh.changes()).toEqual([["ADDED", "c"]]));
    fresh.controller.abort();
    await fresh.done;
  });

  it("lets the client see a dropped connection as an error", async () => {
    const w = await openWatch("/api/v1/secrets", { resourceVersion: "0" });
    await eventually(() => expect(server.openWatches()).toBe(1));
    server.dropWatches();
    expect(await w.done).toMatchObject({ code: "ERR_STREAM_PREMATURE_CLOSE" });
    expect(server.openWatches()).toBe(0);
  });

  it("ends the stream after timeoutSeconds (the client sees a normal end)", async () => {
    const started = Date.now();
    const w = await openWatch("/api/v1/secrets", { resourceVersion: "0", timeoutSeconds: 1 });
    expect(await w.done).toBeNull();
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });
});

describe("faults", () => {
  it("answers 503 (or 429 with Retry-After) while unavailable", async () => {
    const core = kc.makeApiClient(CoreV1Api);
    server.setAvailable(false);
    expect((await rejection(core.listNamespacedSecret({ namespace: "ns" }))).code).toBe(503);
    server.setAvailable(false, { code: 429, retryAfterSeconds: 7 });
    const throttled = await rejection(core.listNamespacedSecret({ namespace: "ns" }));
    expect(throttled.code).toBe(429);
    expect(throttled.headers["retry-after"]).toBe("7");
    const watchErr = await openWatch("/api/v1/secrets", {});
    expect(await watchErr.done).toMatchObject({ statusCode: 429 });
    server.setAvailable(true);
    expect((await core.listNamespacedSecret({ namespace: "ns" })).items).toEqual([]);
  });

  it("refuses connections while stopped and serves again after start()", async () => {
    const core = kc.makeApiClient(CoreV1Api);
    await server.stop();
    const refused = await core.listNamespacedSecret({ namespace: "ns" }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toMatchObject({ code: "ECONNREFUSED" });
    await server.start();
    expect((await core.listNamespacedSecret({ namespace: "ns" })).items).toEqual([]);
  });
});
