/**
 * Paged lists against a REAL kube-apiserver and etcd (test/support/real-kube.ts) and, with the
 * same assertions, against the API server double (test/support/kube-api-server.ts), which pages as
 * the real one does: a few hundred Service Fabrik instances (the CRD of test/support/crds) and
 * Secrets, listed ten a page by src/kube and by the import's cluster client. A list that stops
 * after its first page (client-node's typed list drops a custom resource list's
 * `metadata.continue`) reads ten of them.
 */
import path from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { clusterClient } from "../../src/import/index.js";
import { createKubeApi, listAll } from "../../src/kube/index.js";
import { startKubeApiServer, type KubeApiServer } from "../support/kube-api-server.js";
import { PROCESS_TEST_TIMEOUT_MS } from "../support/processes.js";
import { startRealKube, type KubeObject, type RealKube } from "../support/real-kube.js";
import { SF_INSTANCE } from "../support/service-fabrik-landscape.js";
import { tappedKubeApi } from "../support/tapped-kube-api.js";

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const CRD = path.resolve(import.meta.dirname, "../support/crds/sfserviceinstances.osb.servicefabrik.io.yaml");
const API_VERSION = "osb.servicefabrik.io/v1alpha1";
const INSTANCES = `/apis/${API_VERSION}/sfserviceinstances`;
const NAMESPACES = ["sf-a", "sf-b", "sf-c", "sf-d"];
const COUNT = 260;
const SECRETS = 30;

interface ListBody {
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: KubeObject[];
}

/** What the test needs of a server: objects in, raw lists out, and a snapshot made unreadable. */
interface Backend {
  kubeConfig(): KubeConfig;
  create(object: KubeObject): Promise<void>;
  get(path: string): Promise<{ status: number; body: ListBody & { reason?: string; message?: string } }>;
  /** A write, then the history behind it forgotten: the continue tokens of lists begun before expire. */
  expireSnapshots(): Promise<void>;
  close(): Promise<void>;
}

async function realBackend(): Promise<Backend> {
  const kube: RealKube = await startRealKube();
  await kube.installCrds([CRD]);
  let tick = 0;
  return {
    kubeConfig: () => kube.admin(),
    async create(object) {
      await kube.apply(object, "service-fabrik-broker");
    },
    get: async (p) => (await kube.request("GET", p)) as unknown as Awaited<ReturnType<Backend["get"]>>,
    async expireSnapshots() {
      await kube.apply({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "tick", namespace: "sf-a" }, data: { n: String(++tick) } });
      await kube.compactEtcd();
      // kube-apiserver serves later pages from its watch cache's snapshots, which outlive a
      // compaction it did not make itself: a restart drops them, as their expiry would.
      await kube.restartApiServer();
    },
    close: () => kube.close(),
  };
}

async function doubleBackend(): Promise<Backend> {
  const server: KubeApiServer = await startKubeApiServer({ resources: [SF_INSTANCE] });
  const kc = server.loadKubeConfig();
  let tick = 0;
  return {
    kubeConfig: () => server.loadKubeConfig(),
    create(object) {
      server.store.upsert(object);
      return Promise.resolve();
    },
    async get(p) {
      const response = await fetch(`${server.url}${p}`, { headers: { authorization: `Bearer ${kc.getCurrentUser()?.token}` } });
      return { status: response.status, body: (await response.json()) as ListBody & { reason?: string; message?: string } };
    },
    expireSnapshots() {
      server.store.upsert({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "tick", namespace: "sf-a" }, data: { n: String(++tick) } });
      server.compact();
      return Promise.resolve();
    },
    close: () => server.close(),
  };
}

const instance = (i: number): KubeObject => ({
  apiVersion: API_VERSION,
  kind: SF_INSTANCE.kind,
  metadata: { name: `inst-${String(i).padStart(3, "0")}`, namespace: NAMESPACES[i % NAMESPACES.length]! },
  spec: { instanceId: `inst-${i}` },
});
const names = (items: { metadata?: { namespace?: string; name?: string } }[]) => items.map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`);
const ALL = Array.from({ length: COUNT }, (_, i) => instance(i)).map((o) => `${o.metadata.namespace}/${o.metadata.name}`).sort();

describe.each([
  ["the real kube-apiserver", realBackend],
  ["the API server double", doubleBackend],
])("paged lists on %s", (_name, start) => {
  let backend: Backend;

  beforeAll(async () => {
    backend = await start();
    for (const name of NAMESPACES) await backend.create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
    const objects = [
      ...Array.from({ length: COUNT }, (_, i) => instance(i)),
      ...Array.from({ length: SECRETS }, (_, i): KubeObject => ({ apiVersion: "v1", kind: "Secret", metadata: { name: `sf-inst-${String(i).padStart(2, "0")}`, namespace: "sf-b" }, data: { x: "eA==" } })),
    ];
    // Eight at a time: a few hundred objects in seconds, however loaded the machine.
    for (let i = 0; i < objects.length; i += 8) await Promise.all(objects.slice(i, i + 8).map((o) => backend.create(o)));
  });
  afterAll(async () => {
    await backend?.close();
  });

  it("the server pages a custom resource list: limit objects a page in key order, continue and remainingItemCount, one snapshot", async () => {
    const got: ListBody[] = [];
    let token = "";
    do {
      const { status, body } = await backend.get(`${INSTANCES}?limit=10${token ? `&continue=${encodeURIComponent(token)}` : ""}`);
      expect(status).toBe(200);
      got.push(body);
      token = body.metadata.continue ?? "";
      // A write after the first page shows in the next list, not in this one.
      if (got.length === 1) await backend.create({ ...instance(COUNT), metadata: { name: "zz-late", namespace: "sf-d" } });
    } while (token !== "");
    expect(got).toHaveLength(COUNT / 10);
    expect(got.every((p) => p.items.length === 10)).toBe(true);
    expect(got.map((p) => p.metadata.remainingItemCount)).toEqual([...Array.from({ length: COUNT / 10 - 1 }, (_, i) => COUNT - 10 * (i + 1)), undefined]);
    // An unstructured list: the last page says `continue: ""`.
    expect(got.at(-1)!.metadata.continue).toBe("");
    expect(new Set(got.map((p) => p.metadata.resourceVersion)).size).toBe(1);
    expect(got.flatMap((p) => names(p.items))).toEqual(ALL);
  });

  it("src/kube and the import's cluster client read every SFServiceInstance and Secret, ten a page", async () => {
    const api = tappedKubeApi(createKubeApi({ kubeConfig: backend.kubeConfig() }));
    const listed = await listAll<KubeObject>(api, INSTANCES, { pageSize: 10 });
    expect(names(listed.items)).toEqual([...ALL, "sf-d/zz-late"].sort());
    expect(api.requests).toHaveLength(COUNT / 10 + 1);

    const client = await clusterClient(backend.kubeConfig(), "Service Fabrik's master", { pageSize: 10 });
    const instances = await client.list(API_VERSION, SF_INSTANCE.kind);
    expect(instances).toHaveLength(COUNT + 1);
    expect(new Set(names(instances)).size).toBe(COUNT + 1);
    const secrets = (await client.list("v1", "Secret")).filter((o) => o.metadata.namespace === "sf-b");
    expect(secrets.map((o) => o.metadata.name)).toEqual(Array.from({ length: SECRETS }, (_, i) => `sf-inst-${String(i).padStart(2, "0")}`));
  });

  it("a continue token that expired between pages (410): the list starts again from the first page and reads it all", async () => {
    const api = tappedKubeApi(createKubeApi({ kubeConfig: backend.kubeConfig() }), async (n) => {
      if (n === 3) await backend.expireSnapshots();
    });
    const listed = await listAll<KubeObject>(api, INSTANCES, { pageSize: 50 });
    expect(names(listed.items)).toEqual([...ALL, "sf-d/zz-late"].sort());
    // Pages 1-3 of the first snapshot, a 410 on page 4, then all six pages of a new one.
    expect(api.requests.map((r) => (r.query?.continue === undefined ? "first" : "next"))).toEqual(["first", "next", "next", "next", "first", "next", "next", "next", "next", "next"]);
  });
});
