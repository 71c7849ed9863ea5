import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { instanceRecordPath } from "../../src/repo/index.js";
import { CREDENTIALS, startHarness, type Harness } from "../support/broker-harness.js";
import { pushExternalCommit, readRemoteFile } from "../support/git-fixtures.js";
import { osbClient } from "../support/osb-client.js";
import { expectOsbError, provisionBody, samplePlans, unchangedRemote, type SamplePlans } from "./helpers.js";

/**
 * OSB Service Instance metadata: labels (2.16) and attributes (2.17) in the provision and update
 * answers and, from 2.17, in GET instance; rendered by the plan's `metadata` template at
 * provision and update and answered from the instance's record.
 */

const ASYNC = { accepts_incomplete: "true" };

let h: Harness;
let plans: SamplePlans;
const BROKEN_PLAN = "0d9e0a4b-6f60-4d35-b7cf-2f7f0d2e9a11";
const PLAIN_PLAN = "0d9e0a4b-6f60-4d35-b7cf-2f7f0d2e9a12";

beforeAll(async () => {
  h = await startHarness();
  plans = await samplePlans(h.osb);
  const plan = (id: string, name: string, templates: Record<string, unknown>[]) =>
    stringify({
      apiVersion: "gitops-broker.io/v1alpha1",
      kind: "Plan",
      spec: { id, name, description: name, serviceId: plans.serviceId, templates: [{ action: "provision", type: "handlebars", content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n" }, ...templates] },
    });
  await pushExternalCommit(
    h.remoteDir,
    {
      "catalog/test-plans.yaml": [
        plan(BROKEN_PLAN, "broken", [{ action: "metadata", type: "handlebars", content: "labels:\n  size: 5\nextra: 1\n" }]),
        plan(PLAIN_PLAN, "plain", []),
      ].join("---\n"),
    },
    "catalog: test plans",
  );
  await h.broker.writer.refresh();
});
afterAll(async () => {
  await h?.close();
});

const record = async (id: string) => parse((await readRemoteFile(h.remoteDir, "main", instanceRecordPath(id))) ?? "null");

describe("instance metadata", () => {
  it("answers labels and attributes at 2.17 from provision, repeated provision and GET instance, and keeps them in the record", async () => {
    const res = await h.osb.provision("meta-1", provisionBody(plans.serviceId, plans.small.id, { parameters: { version: "15" } }));
    const expected = { labels: { "gitops-broker.io/cluster": "local", "gitops-broker.io/plan": "small" }, attributes: { "postgresql-version": "15" } };
    expect({ status: res.status, body: res.body }).toEqual({ status: 201, body: { metadata: expected } });
    expect((await record("meta-1")).status).toMatchObject(expected);
    const again = await h.osb.provision("meta-1", provisionBody(plans.serviceId, plans.small.id, { parameters: { version: "15" } }));
    expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: { metadata: expected } });
    expect((await h.osb.getInstance("meta-1")).body.metadata).toEqual(expected);
  });

  it("answers labels only at 2.16, nothing before; GET instance only from 2.17", async () => {
    const at16 = await h.osb.provision("meta-16", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC, version: "2.16" });
    expect(at16.status).toBe(202);
    expect(at16.body.metadata).toEqual({ labels: { "gitops-broker.io/cluster": "local", "gitops-broker.io/plan": "medium" } });
    const at15 = await h.osb.provision("meta-15", provisionBody(plans.serviceId, plans.medium.id), { query: ASYNC, version: "2.15" });
    expect(Object.keys(at15.body)).toEqual(["operation"]);
    expect((await h.osb.getInstance("meta-16", { version: "2.16" })).body.metadata).toBeUndefined();
    expect((await h.osb.getInstance("meta-16", { version: "2.17" })).body.metadata).toMatchObject({ attributes: { "postgresql-version": "16" } });
  });

  it("renders them again at an update: a new parameter, a plan change", async () => {
    expect((await h.osb.provision("meta-upd", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    const params = await h.osb.update("meta-upd", { service_id: plans.serviceId, parameters: { version: "17" } });
    expect({ status: params.status, body: params.body }).toEqual({
      status: 200,
      body: { metadata: { labels: { "gitops-broker.io/cluster": "local", "gitops-broker.io/plan": "small" }, attributes: { "postgresql-version": "17" } } },
    });
    const moved = await h.osb.update("meta-upd", { service_id: plans.serviceId, plan_id: plans.medium.id }, { query: ASYNC });
    expect(moved.status).toBe(202);
    expect(moved.body).toMatchObject({ operation: expect.any(String), metadata: { labels: { "gitops-broker.io/plan": "medium" } } });
    expect((await record("meta-upd")).status.labels).toEqual({ "gitops-broker.io/cluster": "local", "gitops-broker.io/plan": "medium" });
    // Nothing changed: 200 with the record's metadata, no commit.
    const same = await unchangedRemote(h.remoteDir, () => h.osb.update("meta-upd", { service_id: plans.serviceId }, { query: ASYNC }));
    expect(same.body).toEqual({ metadata: { labels: { "gitops-broker.io/cluster": "local", "gitops-broker.io/plan": "medium" }, attributes: { "postgresql-version": "17" } } });
  });

  it("labels the region of Service Fabrik's region route", async () => {
    const regional = osbClient(h.broker.url, CREDENTIALS, "/cf/region/eu10/v2");
    const res = await regional.provision("meta-eu", provisionBody(plans.serviceId, plans.small.id));
    expect(res.body.metadata).toMatchObject({ labels: { "gitops-broker.io/region": "eu10" } });
  });

  it("has none for a plan without a metadata template, and a template rendering something else is a 400 that commits nothing", async () => {
    const plain = await h.osb.provision("meta-plain", provisionBody(plans.serviceId, PLAIN_PLAN));
    expect({ status: plain.status, body: plain.body }).toEqual({ status: 201, body: {} });
    expect((await record("meta-plain")).status).not.toHaveProperty("labels");
    expect((await h.osb.getInstance("meta-plain")).body).not.toHaveProperty("metadata");

    const broken = await unchangedRemote(h.remoteDir, () => h.osb.provision("meta-broken", provisionBody(plans.serviceId, BROKEN_PLAN)));
    expectOsbError(broken, 400, /^plan broken: template metadata renders invalid metadata:\n- extra: unknown key \(only labels and attributes\)\n- labels\.size: must be a string \(quote it\)$/, "RenderFailed");
  });
});
