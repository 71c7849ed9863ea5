import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { bindingRecordPath } from "../../src/repo/index.js";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { readRemoteFile } from "../support/git-fixtures.js";
import { commitCount, expectOsbError, provisionBody, samplePlans, unchangedRemote, type SamplePlans } from "./helpers.js";
import { SF_PLANS, sfCatalogFiles } from "./sf-catalog.js";

/**
 * Service Fabrik's broker behaviour (its osb-broker middleware and ServiceBrokerApiController):
 * 403 for a deprecated plan, update_predecessors, shareable instances.
 */

let h: Harness;
let plans: SamplePlans;

beforeAll(async () => {
  h = await startHarness({ files: await sfCatalogFiles() });
  plans = await samplePlans(h.osb);
});
afterAll(async () => {
  await h?.close();
});

const unchanged = <T>(fn: () => Promise<T>): Promise<T> => unchangedRemote(h.remoteDir, fn);

describe("a deprecated plan (metadata.state: deprecated)", () => {
  it("refuses a provision with 403 and Service Fabrik's words, before any other check, and commits nothing", async () => {
    // Even an async-required or schema-failing request gets the 403 first, as isPlanDeprecated ran first.
    const res = await unchanged(() => h.osb.provision("dep-1", provisionBody(plans.serviceId, SF_PLANS.deprecated, { parameters: { storageGB: "x" } })));
    expectOsbError(res, 403, /^Service instance with the requested plan cannot be created as it is deprecated\.$/, "Forbidden");
  });

  it("is still listed in the catalog", async () => {
    expect(JSON.stringify((await h.osb.catalog()).body)).toContain(SF_PLANS.deprecated);
  });
});

describe("manager.settings.update_predecessors", () => {
  it("allows a plan change only from a listed predecessor, else 400 with Service Fabrik's words and no commit", async () => {
    expect((await h.osb.provision("pred-1", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    expect((await h.osb.provision("pred-2", provisionBody(plans.serviceId, SF_PLANS.platformDefault))).status).toBe(201);
    const refused = await unchanged(() => h.osb.update("pred-2", { service_id: plans.serviceId, plan_id: SF_PLANS.large }));
    expectOsbError(refused, 400, /^Update to plan 'large' is not possible$/, "BadRequest");
    const before = await commitCount(h.remoteDir);
    expect((await h.osb.update("pred-1", { service_id: plans.serviceId, plan_id: SF_PLANS.large })).status).toBe(200);
    expect(await commitCount(h.remoteDir)).toBe(before + 1);
    // A parameter change on the plan itself is no plan change.
    expect((await h.osb.update("pred-1", { service_id: plans.serviceId, plan_id: SF_PLANS.large, parameters: { storageGB: 6 } })).status).toBe(200);
  });

  it("refuses every plan change to an SFPlan that lists none, as Service Fabrik; a Plan without the list takes any", async () => {
    expect((await h.osb.provision("pred-3", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    const refused = await unchanged(() => h.osb.update("pred-3", { service_id: plans.serviceId, plan_id: SF_PLANS.sfPlan }));
    expectOsbError(refused, 400, /^Update to plan 'sf-xl' is not possible$/);
    expect((await h.osb.update("pred-3", { service_id: plans.serviceId, plan_id: SF_PLANS.platformDefault })).status).toBe(200);
  });
});

describe("instance sharing (metadata.shareable)", () => {
  it("passes shareable through in the service's metadata", async () => {
    const services = (await h.osb.catalog()).body.services as { name: string; metadata?: Record<string, unknown> }[];
    expect(services.find((s) => s.name === "postgresql")?.metadata).toMatchObject({ shareable: true });
  });

  it("binds an app of another space and organization to a shared instance, and keeps that context on the binding", async () => {
    const id = "shared-1";
    expect((await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    // Cloud Foundry's bind for a shared instance: the consuming app's space in context and bind_resource.
    const context = { platform: "cloudfoundry", organization_guid: "other-org", space_guid: "other-space" };
    const body = { service_id: plans.serviceId, plan_id: plans.small.id, context, bind_resource: { app_guid: "app-x", space_guid: "other-space" } };
    expect((await h.osb.bind(id, "shared-b", body)).status).toBe(201);
    const record = parse((await readRemoteFile(h.remoteDir, "main", bindingRecordPath(id, "shared-b"))) ?? "") as { spec: Record<string, unknown> };
    expect(record.spec).toMatchObject({ context, bindResource: { app_guid: "app-x", space_guid: "other-space" } });
    expect((await h.osb.unbind(id, "shared-b", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(200);
  });
});
