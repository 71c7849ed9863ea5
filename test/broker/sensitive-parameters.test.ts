import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { pushExternalCommit } from "../support/git-fixtures.js";
import { expectOsbError, provisionBody, remoteHead, samplePlans, type SamplePlans } from "./helpers.js";
import { editedPlan, filesWith, SMALL, withSensitiveSchemas } from "./reconcile-support.js";
import { EVENT_CEILING_MS } from "../support/processes.js";

let h: Harness;
let plans: SamplePlans;

beforeAll(async () => {
  h = await startHarness({
    files: await filesWith(({ small }) => {
      withSensitiveSchemas(small, {
        adminPassword: { type: "string", writeOnly: true },
        tls: { type: "object", properties: { key: { type: "string", format: "password" } } },
        legacySecret: { type: "string" },
      });
    }),
  });
  plans = await samplePlans(h.osb);
});
afterAll(async () => {
  await h?.close();
});

/** Runs `fn` and asserts that the remote did not move. */
async function nothingCommitted<T>(fn: () => Promise<T>): Promise<T> {
  const before = await remoteHead(h.remoteDir);
  const out = await fn();
  expect(await remoteHead(h.remoteDir)).toBe(before);
  return out;
}

const small = (parameters: Record<string, unknown>) => provisionBody(plans.serviceId, plans.small.id, { parameters });
const NO_ENCRYPTION = /sensitive parameters cannot be stored in Git unless cluster local declares how to encrypt them$/;

describe("sensitive parameters (writeOnly / format: password)", () => {
  it("refuses them with a 400 naming the parameter, on provision, update and bind, committing nothing", async () => {
    const flat = await nothingCommitted(() => h.osb.provision("sp-1", small({ version: "16", adminPassword: "hunter2" })));
    expectOsbError(flat, 400, /^parameters\.adminPassword is marked writeOnly in plan small: /);
    expectOsbError(flat, 400, NO_ENCRYPTION);
    const nested = await nothingCommitted(() => h.osb.provision("sp-1", small({ tls: { key: "-----BEGIN KEY-----" } })));
    expectOsbError(nested, 400, /^parameters\.tls\.key is marked format: password in plan small: /);

    expect((await h.osb.provision("sp-1", small({ version: "16" }))).status).toBe(201);
    const update = await nothingCommitted(() => h.osb.update("sp-1", { service_id: plans.serviceId, parameters: { adminPassword: "x" } }));
    expectOsbError(update, 400, /^parameters\.adminPassword is marked writeOnly in plan small: /);
    const bind = await nothingCommitted(() =>
      h.osb.bind("sp-1", "b-1", { service_id: plans.serviceId, plan_id: plans.small.id, parameters: { token: "t" } }),
    );
    expectOsbError(bind, 400, /^parameters\.token is marked writeOnly in plan small: /);
    expect((await h.osb.bind("sp-1", "b-1", { service_id: plans.serviceId, plan_id: plans.small.id, parameters: { note: "n" } })).status).toBe(201);
  });

  it("never returns a stored parameter that the plan has marked sensitive since", async () => {
    expect((await h.osb.provision("legacy-1", small({ version: "16", legacySecret: "old" }))).status).toBe(201);
    const bound = await h.osb.bind("legacy-1", "lb-1", { service_id: plans.serviceId, plan_id: plans.small.id, parameters: { note: "secret-ish" } });
    expect(bound.status).toBe(201);
    expect((await h.osb.getInstance("legacy-1")).body.parameters).toEqual({ version: "16", legacySecret: "old" });

    const marked = await editedPlan(h.remoteDir, SMALL, (p) => {
      p.spec.schemas.service_instance.create.parameters.properties.legacySecret.writeOnly = true;
      p.spec.schemas.service_binding.create.parameters.properties.note.format = "password";
    });
    await pushExternalCommit(h.remoteDir, { [SMALL]: marked }, "small: legacySecret and note are sensitive");
    await h.broker.writer.refresh();

    // The catalog reloads in the background after the fetch.
    await vi.waitFor(async () => {
      const instance = await h.osb.getInstance("legacy-1");
      expect({ status: instance.status, parameters: instance.body.parameters }).toEqual({ status: 200, parameters: { version: "16" } });
    }, { timeout: EVENT_CEILING_MS, interval: 50 });
    const binding = await h.osb.getBinding("legacy-1", "lb-1");
    expect({ status: binding.status, parameters: binding.body.parameters }).toEqual({ status: 200, parameters: {} });
  });
});
