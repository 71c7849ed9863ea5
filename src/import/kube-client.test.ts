import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startKubeApiServer, type KubeApiServer } from "../../test/support/kube-api-server.js";
import { registerServiceFabrik } from "../../test/support/service-fabrik-landscape.js";
import { clusterClient } from "./kube-client.js";
import { SF_INSTANCE_KIND, SF_OSB_API_VERSION } from "./landscape.js";

/**
 * The import's cluster access on the API server double, which pages as kube-apiserver does: more
 * Service Fabrik instances than one page of 500 are all read (a list that stopped after its first
 * page read 500 of 1,203). Against the real kube-apiserver: test/real-kube/paged-lists.test.ts.
 */

const COUNT = 1_203;
let server: KubeApiServer;

beforeAll(async () => {
  server = await startKubeApiServer();
  registerServiceFabrik(server);
  for (let i = 0; i < COUNT; i++) {
    server.store.upsert({ apiVersion: SF_OSB_API_VERSION, kind: SF_INSTANCE_KIND, metadata: { namespace: `sf-${i % 7}`, name: `inst-${i}` }, spec: { instanceId: `inst-${i}` } });
  }
  for (let i = 0; i < 23; i++) server.store.upsert({ apiVersion: "v1", kind: "Secret", metadata: { namespace: `sf-${i % 7}`, name: `sf-inst-${i}` } });
});
afterAll(async () => {
  await server.close();
});

const listRequests = (path: string) => server.requests.filter((r) => r.method === "GET" && r.path === path);

describe("clusterClient.list", () => {
  it("reads every SFServiceInstance past the first page of 500, and every Secret", async () => {
    const client = await clusterClient(server.loadKubeConfig(), "Service Fabrik's master");
    const instances = await client.list(SF_OSB_API_VERSION, SF_INSTANCE_KIND);
    expect(instances).toHaveLength(COUNT);
    expect(new Set(instances.map((o) => o.metadata.name)).size).toBe(COUNT);
    expect(instances.every((o) => o.apiVersion === SF_OSB_API_VERSION && o.kind === SF_INSTANCE_KIND)).toBe(true);
    expect(listRequests("/apis/osb.servicefabrik.io/v1alpha1/sfserviceinstances").map((r) => [r.query.limit, r.query.continue !== undefined])).toEqual([
      ["500", false],
      ["500", true],
      ["500", true],
    ]);
    const secrets = await client.list("v1", "Secret");
    expect(secrets.map((o) => o.metadata.name).sort()).toEqual(Array.from({ length: 23 }, (_, i) => `sf-inst-${i}`).sort());
  });

  it("with a small page size, in as many pages; a kind the cluster does not serve is an empty list", async () => {
    const before = listRequests("/apis/osb.servicefabrik.io/v1alpha1/sfserviceinstances").length;
    const client = await clusterClient(server.loadKubeConfig(), "master", { pageSize: 100 });
    expect(await client.list(SF_OSB_API_VERSION, SF_INSTANCE_KIND)).toHaveLength(COUNT);
    expect(listRequests("/apis/osb.servicefabrik.io/v1alpha1/sfserviceinstances").length - before).toBe(13);
    expect(await client.list("bind.servicefabrik.io/v1alpha1", "SFBind")).toEqual([]);
  });

  it("a failure names the cluster and the request", async () => {
    server.setAvailable(false, { code: 503 });
    try {
      const client = await clusterClient(server.loadKubeConfig(), "Service Fabrik's master");
      await expect(client.list("v1", "Secret")).rejects.toMatchObject({
        name: "KubeApiError",
        status: 503,
        message: `Service Fabrik's master (${server.url}): discovery of v1: HTTP 503: the server is currently unable to handle the request`,
      });
    } finally {
      server.setAvailable(true);
    }
  });
});
