import { writeFile } from "node:fs/promises";
import path from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { runCleanupBinding, runInstances } from "../../src/cli/admin-commands.js";
import { bindingRecordPath, instanceRecordPath } from "../../src/repo/index.js";
import { CREDENTIALS, startHarness, type Harness } from "../support/broker-harness.js";
import { gitLog, pushExternalCommit, readRemoteFile } from "../support/git-fixtures.js";
import { repoFiles } from "../support/repo-files.js";
import { expectOsbError, provisionBody, samplePlans, unchangedRemote, type SamplePlans } from "./helpers.js";

/**
 * The operator views of Service Fabrik's operator APIs: GET /admin/instances (by cluster, service,
 * plan and state, paged) and POST /admin/bindings/cleanup (the records of a binding whose
 * instance is gone), and their CLI commands `instances` and `cleanup-binding`.
 */

let h: Harness;
let plans: SamplePlans;
let configArgs: string[];

const AUTH = `Basic ${Buffer.from(`${CREDENTIALS.username}:${CREDENTIALS.password}`).toString("base64")}`;

interface Page {
  instances: { instanceId: string; clusterId: string; planId: string; planName?: string; organizationGuid?: string; lastOperation?: { action: string; state: string } }[];
  nextPageToken?: string;
}

async function admin(method: string, pathAndQuery: string, body?: unknown, auth = true): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(new URL(pathAndQuery, h.broker.url), {
    method,
    headers: { ...(auth ? { authorization: AUTH } : {}), ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function page(query: string): Promise<Page> {
  const res = await admin("GET", `/admin/instances${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as unknown as Page;
}

/** Every page of a query, following nextPageToken. */
async function allPages(query: Record<string, string>): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let token: string | undefined;
  let pages = 0;
  do {
    const p = await page(`?${new URLSearchParams({ ...query, ...(token ? { page_token: token } : {}) }).toString()}`);
    ids.push(...p.instances.map((i) => i.instanceId));
    token = p.nextPageToken;
    pages++;
  } while (token !== undefined && pages < 20);
  return { ids, pages };
}

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on("data", (c: Buffer) => chunks.push(c));
  return { stream, text: () => Buffer.concat(chunks).toString("utf8") };
}

const SMALL = ["a-1", "a-2", "a-3", "a-4", "a-5"];

beforeAll(async () => {
  h = await startHarness({ scheduler: "round-robin", files: await repoFiles([{ id: "east" }, { id: "west" }]) });
  plans = await samplePlans(h.osb);
  for (const id of SMALL) expect((await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
  expect((await h.osb.provision("b-1", provisionBody(plans.serviceId, plans.medium.id), { query: { accepts_incomplete: "true" } })).status).toBe(202);
  expect((await h.osb.provision("gone-1", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
  expect((await h.osb.deprovision("gone-1", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(200);
  const configFile = path.join(h.root, "cli.yaml");
  await writeFile(configFile, stringify({ dataDir: path.join(h.root, "cli-data"), git: { remote: h.remoteUrl } }));
  configArgs = ["--config", configFile];
});
afterAll(async () => {
  await h?.close();
});

describe("GET /admin/instances", () => {
  it("lists the live instances with cluster, plan and last operation; a deprovisioned one is not listed", async () => {
    const p = await page("");
    expect(p.instances.map((i) => i.instanceId).sort()).toEqual([...SMALL, "b-1"].sort());
    expect(p.nextPageToken).toBeUndefined();
    expect(p.instances.find((i) => i.instanceId === "b-1")).toMatchObject({
      planId: plans.medium.id,
      planName: "medium",
      organizationGuid: "org-guid",
      lastOperation: { action: "provision", state: "succeeded" },
    });
  });

  it("filters by cluster, plan and state", async () => {
    const all = (await page("")).instances;
    for (const cluster of ["east", "west"]) {
      const ids = (await page(`?cluster=${cluster}`)).instances.map((i) => i.instanceId);
      expect(ids).toEqual(all.filter((i) => i.clusterId === cluster).map((i) => i.instanceId));
      expect(ids.length).toBeGreaterThan(0);
    }
    expect((await page(`?plan=${plans.medium.id}`)).instances.map((i) => i.instanceId)).toEqual(["b-1"]);
    expect((await page(`?service=${plans.serviceId}&plan=${plans.small.id}&state=succeeded`)).instances).toHaveLength(SMALL.length);
    expect((await page("?state=failed")).instances).toEqual([]);
    expect((await page("?state=in_progress")).instances).toEqual([]);
  });

  it("pages: every instance once, in a stable order, the last page without a token", async () => {
    const whole = (await page("")).instances.map((i) => i.instanceId);
    const paged = await allPages({ page_size: "2" });
    expect(paged).toEqual({ ids: whole, pages: 3 });
    // A page token stays valid when instances are added (keyset paging on the record paths: a-6's
    // record sorts after the first page's last one, so the rest holds it).
    const first = await page("?page_size=4");
    expect((await h.osb.provision("a-6", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    const rest = await page(`?page_size=10&page_token=${first.nextPageToken!}`);
    const ids = [...first.instances, ...rest.instances].map((i) => i.instanceId);
    expect(ids.sort()).toEqual([...whole, "a-6"].sort());
  });

  it("answers bad parameters 400 with an OSB body naming them, and no credentials 401", async () => {
    const cases: [string, RegExp][] = [
      ["?page_size=0", /^page_size must be an integer from 1 to 1000, not 0$/],
      ["?page_size=ten", /^page_size must be an integer, not "ten"$/],
      ["?state=done", /^state must be one of in_progress, succeeded, failed, not "done"$/],
      ["?clustr=east", /^unknown query parameter "clustr": the parameters are cluster, service, plan, state, page_size, page_token$/],
      ["?cluster=east&cluster=west", /^query parameter cluster must be given once, not empty$/],
      ["?page_token=bm9wZQ", /^page_token "bm9wZQ" is not one this broker gave/],
    ];
    for (const [query, description] of cases) expectOsbError(await admin("GET", `/admin/instances${query}`), 400, description);
    expect((await admin("GET", "/admin/instances", undefined, false)).status).toBe(401);
  });
});

describe("POST /admin/bindings/cleanup", () => {
  it("removes the record of a binding whose instance record is gone, in one commit with trailers; again: nothing", async () => {
    expect((await h.osb.provision("orphan-1", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    expect((await h.osb.bind("orphan-1", "app-1", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(201);
    // A human removed the instance's record but not its binding's.
    await pushExternalCommit(h.remoteDir, { [instanceRecordPath("orphan-1")]: null }, "remove orphan-1 by hand");
    const res = await admin("POST", "/admin/bindings/cleanup", { instance_id: "orphan-1", binding_id: "app-1" });
    expect(res).toMatchObject({ status: 200, body: { instanceId: "orphan-1", bindingId: "app-1", removed: [bindingRecordPath("orphan-1", "app-1")] } });
    const [head] = await gitLog(h.remoteDir);
    expect(head!.oid).toBe(res.body.commit);
    expect(head!.message).toMatch(/^binding-cleanup instance orphan-1 binding app-1 \(no instance record\)\n/);
    expect(head!.message).toMatch(/\nReason: binding-cleanup\nInstance-Id: orphan-1\nBinding-Id: app-1\nBroker-Version: /);
    expect(await readRemoteFile(h.remoteDir, "main", bindingRecordPath("orphan-1", "app-1"))).toBeNull();
    // The instance's history names the cleanup as its action.
    const history = await admin("GET", "/admin/instances/orphan-1/history");
    expect((history.body.entries as { action: string; commit: string }[]).at(-1)).toMatchObject({ action: "binding-cleanup", commit: res.body.commit });
    // Idempotent: nothing left, no commit.
    const again = await unchangedRemote(h.remoteDir, () => admin("POST", "/admin/bindings/cleanup", { instance_id: "orphan-1", binding_id: "app-1" }));
    expect(again).toEqual({ status: 200, body: { instanceId: "orphan-1", bindingId: "app-1", commit: null, removed: [] } });
  });

  it("refuses a binding of a live instance (422) and bad bodies (400), committing nothing", async () => {
    expect((await h.osb.bind("a-1", "live-app", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(201);
    const live = await unchangedRemote(h.remoteDir, () => admin("POST", "/admin/bindings/cleanup", { instance_id: "a-1", binding_id: "live-app" }));
    expectOsbError(live, 422, /^instance a-1 is live \(it is bound\): only a binding whose instance is deprovisioned or gone is cleaned up; unbind it through OSB$/);
    expectOsbError(await admin("POST", "/admin/bindings/cleanup", { instance_id: "a-1" }), 400, /^binding_id is required$/);
    expectOsbError(await admin("POST", "/admin/bindings/cleanup", ["a-1"]), 400, /^binding cleanup: the body must be a JSON object/);
    expect((await admin("POST", "/admin/bindings/cleanup", { instance_id: "a-1", binding_id: "x" }, false)).status).toBe(401);
  });
});

describe("the CLI: gitops-broker instances and cleanup-binding", () => {
  it("prints a page as a table with the next page's token, or as JSON", async () => {
    const text = capture();
    expect(await runInstances([...configArgs, "--cluster", "east", "--page-size", "1"], text.stream)).toBe(0);
    const lines = text.text().trim().split("\n");
    expect(lines[0]).toMatch(/^INSTANCE\s+CLUSTER\s+PLAN\s+STATE\s+LAST OPERATION\s+ORGANIZATION\s+SPACE$/);
    expect(lines[1]).toMatch(/^\S+\s+east\s+(small|medium)\s+succeeded\s+provision \S+\s+org-guid\s+space-guid$/);
    expect(lines[2]).toMatch(/^more: --page-token \S+$/);
    const json = capture();
    expect(await runInstances([...configArgs, "--plan", plans.medium.id, "--json"], json.stream)).toBe(0);
    expect((JSON.parse(json.text()) as Page).instances.map((i) => i.instanceId)).toEqual(["b-1"]);
    const err = capture();
    expect(await runInstances([...configArgs, "--state", "done"], capture().stream, err.stream)).toBe(2);
    expect(err.text()).toMatch(/option '--state <state>' argument 'done' is invalid\. one of in_progress, succeeded, failed/);
  });

  it("cleans up a binding of a deprovisioned instance; refuses a live one with exit 1", async () => {
    // The binding record outlived its instance's deprovision (as a record written before bindings went with it).
    expect((await h.osb.provision("old-1", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    expect((await h.osb.bind("old-1", "app-9", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(201);
    const bindingFile = bindingRecordPath("old-1", "app-9");
    const binding = (await readRemoteFile(h.remoteDir, "main", bindingFile))!;
    expect((await h.osb.deprovision("old-1", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(200);
    await pushExternalCommit(h.remoteDir, { [bindingFile]: binding }, "the binding record as it was");
    const out = capture();
    expect(await runCleanupBinding([...configArgs, "old-1", "app-9"], out.stream)).toBe(0);
    expect(out.text()).toMatch(new RegExp(`^removed binding app-9 of instance old-1 in commit [0-9a-f]{40}\\n  delete ${bindingFile}\\n$`));
    expect((await gitLog(h.remoteDir))[0]!.subject).toBe("binding-cleanup instance old-1 binding app-9 (instance deprovisioned)");
    const again = capture();
    expect(await unchangedRemote(h.remoteDir, () => runCleanupBinding([...configArgs, "old-1", "app-9"], again.stream))).toBe(0);
    expect(again.text()).toBe("nothing to clean up: instance old-1 has no record of binding app-9 left\n");
    const err = capture();
    expect(await unchangedRemote(h.remoteDir, () => runCleanupBinding([...configArgs, "a-2", "nope"], capture().stream, err.stream))).toBe(1);
    expect(err.text()).toMatch(/^cleanup-binding refused: instance a-2 is live \(it has no such binding\)/);
  });
});
