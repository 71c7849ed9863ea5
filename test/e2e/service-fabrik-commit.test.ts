/**
 * End to end, status.mode commit: Service Fabrik's sample SFService, SFPlan and SFCluster
 * (src/catalog/testdata/service-fabrik/, files unchanged) in a fresh remote; the real broker on
 * port 0 renders the plan's Go templates with the WebAssembly engine. Provision -> manifests
 * under clusters/1/ -> succeeded -> bind (the bind template reads the committed postgresql; its
 * user lands in the instance's object) -> unbind (the user goes) -> deprovision; and a template that fails: OSB 400 naming `<instance-id>/provision`
 * with Go's line and column, nothing committed.
 * Plans with `manager.settings.dashboard_url_template`: dashboard_url on provision and GET
 * instance, and 422 with nothing committed for a template that renders no URL.
 */
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bindingManifestDir, instanceManifestDir } from "../../src/repo/index.js";
import { expectOsbError, provisionBody, remoteFiles, remoteHead } from "../broker/helpers.js";
import { startHarness, type Harness } from "../support/broker-harness.js";

const run = promisify(execFile);
const SF = new URL("../../src/catalog/testdata/service-fabrik/", import.meta.url);
const SERVICE_ID = "24731fb8-7b84-5f57-914f-c3d55d793dd4";
const PLAN_ID = "39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88";
const ASYNC = { accepts_incomplete: "true" };

/** A second plan of the same service whose provision template fails at run time. */
const BROKEN_PLAN = `apiVersion: osb.servicefabrik.io/v1alpha1
kind: SFPlan
metadata:
  name: broken-plan
spec:
  name: broken
  id: broken-plan
  serviceId: ${SERVICE_ID}
  description: fails
  free: true
  bindable: true
  manager:
    async: true
  templates:
  - action: provision
    type: gotemplate
    content: |
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: {{ index .instance.spec.parameters.sizes 3 }}
`;

/**
 * Plans of the same service with Service Fabrik's `manager.settings.dashboard_url_template`
 * (base64 of a lodash-style `${...}` template): one good, one that renders no URL.
 */
const DASHBOARD_TEMPLATE = "https://dash.example.com/manage/${plan.name}/instances/${instance_id}?space=${space_guid}&on=${context.platform}";
const dashboardPlan = (id: string, template: string) => `apiVersion: osb.servicefabrik.io/v1alpha1
kind: SFPlan
metadata:
  name: ${id}
spec:
  name: ${id}
  id: ${id}
  serviceId: ${SERVICE_ID}
  description: with a dashboard
  free: true
  bindable: true
  manager:
    async: true
    settings:
      dashboard_url_template: ${Buffer.from(template, "utf8").toString("base64")}
  templates:
  - action: provision
    type: gotemplate
    content: |
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: dash-{{ .instance.metadata.name }}
`;

let h: Harness;
const show = async (path: string) => (await run("git", ["show", `main:${path}`], { cwd: h.remoteDir })).stdout;

beforeAll(async () => {
  const file = (name: string) => readFile(new URL(name, SF), "utf8");
  h = await startHarness({
    files: {
      "catalog/sfservice-postgresql.yaml": await file("sfservice-postgresql.yaml"),
      "catalog/sfplan-postgresql-v9.6-xxsmall.yaml": await file("sfplan-postgresql-v9.6-xxsmall.yaml"),
      "catalog/broken.yaml": BROKEN_PLAN,
      "catalog/dashboard.yaml": dashboardPlan("dash-plan", DASHBOARD_TEMPLATE),
      "catalog/bad-dashboard.yaml": dashboardPlan("bad-dash-plan", "dashboard of ${instance_id}"),
      "registry/clusters/1.yaml": await file("sfcluster-1.yaml"),
    },
  });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

describe("the sample Service Fabrik plan, commit mode", () => {
  it("lists the plan", async () => {
    const res = await h.osb.catalog();
    expect(res.status).toBe(200);
    const plans = (res.body.services as { plans: { id: string }[] }[]).flatMap((s) => s.plans.map((p) => p.id));
    expect(plans).toContain(PLAN_ID);
  });

  it("provisions, binds, unbinds and deprovisions", async () => {
    const provision = await h.osb.provision("abc-123", provisionBody(SERVICE_ID, PLAN_ID, { parameters: { foo: "bar" } }), { query: ASYNC });
    expect(provision.status).toBe(202);
    const dir = instanceManifestDir("1", "abc-123");
    expect(await remoteFiles(h.remoteDir, dir)).toContain(`${dir}/postgresql-sapcp-abc-123.yaml`);
    const postgresql = parse(await show(`${dir}/postgresql-sapcp-abc-123.yaml`)) as { spec: Record<string, unknown>; metadata: Record<string, unknown> };
    // The values of the template's float64 numbers as Go prints them: "9.6", "100", "1", 2Gi, 20Gi.
    expect(postgresql.spec).toMatchObject({
      teamId: "sapcp",
      postgresql: { version: "9.6", parameters: { max_connections: "100" } },
      users: { main: ["superuser", "createdb"] },
      resources: { limits: { cpu: "1", memory: "2Gi" } },
      volume: { size: "20Gi" },
    });
    expect(postgresql.metadata.annotations).toEqual({ "operator-broker/service-id": SERVICE_ID, "operator-broker/plan-id": PLAN_ID });
    const last = await h.osb.lastOperation("abc-123", { operation: String(provision.body.operation ?? "") });
    expect(last.status).toBe(200);
    expect(last.body.state).toBe("succeeded");

    // bind: the template takes `.postgresql` (a `sources` key: the committed object) and adds the
    // binding's user (`set $users $bindingID (list "superuser")`); the instance's object carries
    // it, and no second copy of the object is committed under the binding (ADR 0017).
    const users = async () => (parse(await show(`${dir}/postgresql-sapcp-abc-123.yaml`)) as { spec: { users: Record<string, string[]> } }).spec.users;
    const bind = await h.osb.bind("abc-123", "b-1", { service_id: SERVICE_ID, plan_id: PLAN_ID });
    expect(bind.status).toBe(201);
    const bdir = bindingManifestDir("1", "abc-123", "b-1");
    expect(await users()).toEqual({ "b-1": ["superuser"], main: ["superuser", "createdb"] });
    expect(await remoteFiles(h.remoteDir, bdir)).toEqual([]);

    const unbind = await h.osb.unbind("abc-123", "b-1", { service_id: SERVICE_ID, plan_id: PLAN_ID });
    expect(unbind.status).toBe(200);
    expect(await users()).toEqual({ main: ["superuser", "createdb"] });
    expect(await remoteFiles(h.remoteDir, bdir)).toEqual([]);

    const deprovision = await h.osb.deprovision("abc-123", { service_id: SERVICE_ID, plan_id: PLAN_ID, ...ASYNC });
    expect(deprovision.status).toBe(202);
    expect(await remoteFiles(h.remoteDir, dir)).toEqual([]);
  }, 120_000);

  it("answers 400 naming the template <instance-id>/provision with Go's line and column, and commits nothing", async () => {
    const before = await remoteHead(h.remoteDir);
    const res = await h.osb.provision("bad-1", provisionBody(SERVICE_ID, "broken-plan", { parameters: { sizes: [1] } }), { query: ASYNC });
    // Line 4 of the template is `  name: {{ index ... }}`; Go reports the `index` node at its
    // 0-based byte column: 8 characters of `  name: ` and 3 of `{{ ` make 11.
    expectOsbError(
      res,
      400,
      /gotemplate renderer - can't render template for bad-1\/provision\. template: bad-1\/provision:4:11: executing "bad-1\/provision" at <index \.instance\.spec\.parameters\.sizes 3>: error calling index: index out of range: 3/,
    );
    expect(await remoteHead(h.remoteDir)).toBe(before);
  }, 60_000);

  it("answers dashboard_url from the plan's dashboard_url_template on provision and GET instance", async () => {
    const provision = await h.osb.provision("dash-1", provisionBody(SERVICE_ID, "dash-plan"), { query: ASYNC });
    expect(provision.status).toBe(202);
    // plan.name is the SFPlan's spec.name; space_guid and context.platform come from provisionBody.
    const url = "https://dash.example.com/manage/dash-plan/instances/dash-1?space=space-guid&on=cloudfoundry";
    expect(provision.body).toEqual({ dashboard_url: url, operation: expect.any(String) as unknown });
    const last = await h.osb.lastOperation("dash-1", { operation: String(provision.body.operation) });
    expect(last.body.state).toBe("succeeded");
    const fetched = await h.osb.getInstance("dash-1");
    expect(fetched.status).toBe(200);
    expect(fetched.body.dashboard_url).toBe(url);
  }, 60_000);

  it("refuses a dashboard_url_template that renders no URL with 422, and commits nothing", async () => {
    const before = await remoteHead(h.remoteDir);
    const res = await h.osb.provision("dash-2", provisionBody(SERVICE_ID, "bad-dash-plan"), { query: ASYNC });
    expectOsbError(res, 422, /dashboard_url_template renders "dashboard of dash-2", which is not a valid URL/);
    expect(await remoteHead(h.remoteDir)).toBe(before);
  }, 60_000);
});
