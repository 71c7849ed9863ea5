import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { instanceRecordPath } from "../../src/repo/index.js";
import { readRemoteFile } from "../support/git-fixtures.js";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { osbClient } from "../support/osb-client.js";
import { CREDENTIALS } from "../support/broker-harness.js";
import { commitCount, expectOsbError, provisionBody } from "./helpers.js";
import { K8S_SERVICE_ID, SF_PLANS, sfCatalogFiles } from "./sf-catalog.js";

/**
 * Service Fabrik's routes, /<platform>[/region/<region>]/v2 beside /v2 (ADR 0025): the catalog
 * each platform sees, and what is not a route. The OSB conformance tests run at every one of them
 * (osb-api.test.ts, exactness.test.ts).
 */

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ files: await sfCatalogFiles() });
});
afterAll(async () => {
  await h?.close();
});

async function planNames(base: string): Promise<Record<string, string[]>> {
  const res = await osbClient(h.broker.url, CREDENTIALS, base).catalog();
  expect(res.status).toBe(200);
  const services = res.body.services as { name: string; plans: { name: string }[] }[];
  return Object.fromEntries(services.map((s) => [s.name, s.plans.map((p) => p.name).sort()]));
}

describe("the catalog of each platform", () => {
  it("lists at /v2 every service and plan but those named -fabrik-internal", async () => {
    expect(await planNames("/v2")).toEqual({
      postgresql: ["k8s-only", "large", "medium", "old", "platform-default", "sf-xl", "small"],
      "pg-k8s": ["small"],
    });
  });

  it("filters by supported_platform, cf and sm when a plan or service does not say, as Service Fabrik", async () => {
    const everywhere = ["large", "medium", "old", "sf-xl", "small"];
    expect(await planNames("/cf/v2")).toEqual({ postgresql: [...everywhere, "platform-default"].sort() });
    expect(await planNames("/sm/region/eu10/v2")).toEqual({ postgresql: [...everywhere, "platform-default"].sort() });
    // pg-k8s is offered to k8s only; its plan names cf too, but the service does not.
    expect(await planNames("/k8s/v2")).toEqual({ postgresql: ["k8s-only", ...everywhere].sort(), "pg-k8s": ["small"] });
    expect(await planNames("/k8s/region/eu10/v2")).toEqual(await planNames("/k8s/v2"));
  });

  it("serves plans of other platforms outside the catalog, as Service Fabrik (it filtered only the catalog)", async () => {
    const cf = osbClient(h.broker.url, CREDENTIALS, "/cf/v2");
    expect((await cf.provision("k8s-plan-on-cf", provisionBody(K8S_SERVICE_ID, SF_PLANS.k8sService))).status).toBe(201);
  });
});

describe("the region", () => {
  it("is kept in the record of an instance provisioned at /<platform>/region/<region>/v2", async () => {
    const osb = osbClient(h.broker.url, CREDENTIALS, "/cf/region/eu10/v2");
    expect((await osb.provision("in-eu10", provisionBody(K8S_SERVICE_ID, SF_PLANS.k8sService))).status).toBe(201);
    const record = parse((await readRemoteFile(h.remoteDir, "main", instanceRecordPath("in-eu10"))) ?? "") as { spec: Record<string, unknown> };
    expect(record.spec).toMatchObject({ instanceId: "in-eu10", region: "eu10" });
  });
});

describe("what is not a route", () => {
  it("answers 404 with an OSB body for an unknown platform, and commits nothing", async () => {
    const before = await commitCount(h.remoteDir);
    for (const base of ["/cloudfoundry/v2", "/kubernetes/region/eu10/v2", "/CF/v2"]) {
      const osb = osbClient(h.broker.url, CREDENTIALS, base);
      const platform = base.split("/")[1]!;
      const description = new RegExp(`^no platform "${platform}" in /${platform}.*: the OSB API is served at /v2 and at /<platform>/v2 .* cf, k8s, sm$`);
      expectOsbError(await osb.catalog(), 404, description);
      expectOsbError(await osb.provision("nowhere", provisionBody(K8S_SERVICE_ID, SF_PLANS.k8sService)), 404, description);
    }
    expect(await commitCount(h.remoteDir)).toBe(before);
  });

  it("answers 400 for a region that is not a label value, as Service Fabrik", async () => {
    const osb = osbClient(h.broker.url, CREDENTIALS, "/cf/region/-eu10-/v2");
    expectOsbError(await osb.catalog(), 400, /^region "-eu10-" in \/cf\/region\/-eu10-\/v2 must be a valid label value/);
  });

  it("asks for credentials on a platform route as on /v2", async () => {
    const res = await osbClient(h.broker.url, CREDENTIALS, "/sm/v2").catalog({ auth: false });
    expectOsbError(res, 401, /missing basic authentication/);
  });
});
