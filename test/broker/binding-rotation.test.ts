import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import type { InstanceHistory } from "../../src/broker/index.js";
import { bindingManifestDir, bindingRecordPath, instanceManifestDir } from "../../src/repo/index.js";
import { CREDENTIALS, startHarness, type Harness } from "../support/broker-harness.js";
import { gitLog, pushExternalCommit, readRemoteFile } from "../support/git-fixtures.js";
import { commitCount, expectOsbError, provisionBody, remoteFiles, samplePlans, unchangedRemote, type SamplePlans } from "./helpers.js";

/**
 * OSB 2.17 binding rotation through the real app (commit mode): `binding_rotatable` from the
 * plan, `predecessor_binding_id` checked as the spec says, the successor a binding of its own
 * (the sample plan's database user) made in one commit with a Predecessor-Binding-Id trailer,
 * `expires_at` / `renew_before` from the plan's settings, and the field ignored before 2.17.
 */

const ASYNC = { accepts_incomplete: "true" };
const DAY = 24 * 3600 * 1000;

/** Plans of the sample's service beside the sample's: one that does not rotate, one that does, one whose bindings expire after a second. */
const FIXED_PLAN = "b7c43a2e-5f0d-4a57-9f65-7d3f0c1f7a01";
const SHORT_PLAN = "b7c43a2e-5f0d-4a57-9f65-7d3f0c1f7a02";
const ROTATING_PLAN = "b7c43a2e-5f0d-4a57-9f65-7d3f0c1f7a03";
function extraPlans(serviceId: string): string {
  const plan = (id: string, name: string, extra: Record<string, unknown>) =>
    stringify({
      apiVersion: "gitops-broker.io/v1alpha1",
      kind: "Plan",
      spec: {
        id,
        name,
        description: `${name} test plan`,
        serviceId,
        bindable: true,
        ...extra,
        templates: [
          {
            action: "provision",
            type: "handlebars",
            // The templates see each binding's predecessor.
            content:
              "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: users\ndata:\n{{#each bindings}}\n  {{metadata.name}}: {{quote (default \"none\" spec.predecessorBindingId)}}\n{{/each}}\n",
          },
          {
            action: "bind",
            type: "handlebars",
            content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rotation-{{binding.metadata.name}}\ndata:\n  predecessor: {{quote binding.spec.predecessorBindingId}}\n",
          },
        ],
      },
    });
  return [
    plan(FIXED_PLAN, "fixed", {}),
    plan(ROTATING_PLAN, "rotating", { binding_rotatable: true }),
    plan(SHORT_PLAN, "short", { binding_rotatable: true, manager: { settings: { binding_expires_after_seconds: 1, binding_renew_after_seconds: 1 } } }),
  ].join("---\n");
}

let h: Harness;
let plans: SamplePlans;

beforeAll(async () => {
  h = await startHarness();
  plans = await samplePlans(h.osb);
  await pushExternalCommit(h.remoteDir, { "catalog/test-plans.yaml": extraPlans(plans.serviceId) }, "catalog: test plans");
  await h.broker.writer.refresh();
});
afterAll(async () => {
  await h?.close();
});

const unchanged = <T>(fn: () => Promise<T>): Promise<T> => unchangedRemote(h.remoteDir, fn);
const record = async (instanceId: string, bindingId: string) => parse((await readRemoteFile(h.remoteDir, "main", bindingRecordPath(instanceId, bindingId))) ?? "null");
async function instanceText(instanceId: string): Promise<string> {
  const files = await remoteFiles(h.remoteDir, instanceManifestDir("local", instanceId));
  const texts = await Promise.all(files.filter((f) => !f.includes("/bindings/")).map((f) => readRemoteFile(h.remoteDir, "main", f)));
  return texts.join("\n");
}

async function provisioned(id: string, planId: string): Promise<Record<string, string>> {
  const res = await h.osb.provision(id, provisionBody(plans.serviceId, planId), { query: ASYNC });
  expect([201, 202]).toContain(res.status);
  return { service_id: plans.serviceId, plan_id: planId };
}

describe("binding rotation (OSB 2.17)", () => {
  it("makes a successor with a database user of its own in one commit, the predecessor kept until it is unbound", async () => {
    const id = "rot-1";
    const ids = await provisioned(id, plans.medium.id);
    const first = await h.osb.bind(id, "b-1", { ...ids, bind_resource: { app_guid: "app-1" }, context: { platform: "cloudfoundry" } });
    expect(first.status).toBe(201);
    const b1 = await record(id, "b-1");
    const boundAt = Date.parse(b1.status.operations[0].at as string);
    // The plan's settings: expires 90 days, renew 60 days after the bind.
    expect(b1.spec).toMatchObject({ expiresAt: new Date(boundAt + 90 * DAY).toISOString(), renewBefore: new Date(boundAt + 60 * DAY).toISOString() });
    expect(first.body.metadata).toEqual({ expires_at: b1.spec.expiresAt, renew_before: b1.spec.renewBefore });

    const before = await commitCount(h.remoteDir);
    const rotated = await h.osb.bind(id, "b-2", { ...ids, predecessor_binding_id: "b-1" });
    expect(rotated.status).toBe(201);
    expect(await commitCount(h.remoteDir)).toBe(before + 1);
    const [commit] = await gitLog(h.remoteDir);
    expect(commit?.subject).toBe(`bind postgresql/medium instance ${id} binding b-2, successor of b-1`);
    expect(commit?.message).toMatch(/^Binding-Id: b-2\nPredecessor-Binding-Id: b-1\n/m);

    const b2 = await record(id, "b-2");
    // What the rotation did not repeat came from the predecessor.
    expect(b2.spec).toMatchObject({ bindingId: "b-2", predecessorBindingId: "b-1", bindResource: { app_guid: "app-1" }, context: { platform: "cloudfoundry" } });
    expect(Date.parse(b2.spec.expiresAt as string)).toBeGreaterThanOrEqual(Date.parse(b1.spec.expiresAt as string));
    expect(rotated.body.metadata).toEqual({ expires_at: b2.spec.expiresAt, renew_before: b2.spec.renewBefore });
    // Two database users: the successor's credentials are not the predecessor's.
    expect(await instanceText(id)).toMatch(/b-1: \[\]\n\s+b-2: \[\]/);
    expect((await h.osb.getBinding(id, "b-1")).status).toBe(200);
    expect((await h.osb.getBinding(id, "b-2")).body).toMatchObject({ metadata: { expires_at: b2.spec.expiresAt, renew_before: b2.spec.renewBefore } });

    // The same rotation again: 200, nothing committed; another predecessor for the same id: 409.
    expect((await unchanged(() => h.osb.bind(id, "b-2", { ...ids, predecessor_binding_id: "b-1" }))).status).toBe(200);
    expect((await unchanged(() => h.osb.bind(id, "b-2", { ...ids, predecessor_binding_id: "b-1", bind_resource: { app_guid: "app-1" } }))).status).toBe(200);
    expectOsbError(await unchanged(() => h.osb.bind(id, "b-2", ids)), 409, /^binding b-2 already exists with different attributes$/);

    // The predecessor is unbound when the platform is done with it; the successor stays.
    expect((await h.osb.unbind(id, "b-1", ids)).status).toBe(200);
    const text = await instanceText(id);
    expect(text).not.toContain("b-1:");
    expect(text).toContain("b-2: []");
    expect((await h.osb.getBinding(id, "b-2")).status).toBe(200);
    // The chain stays in the successor's record and in the instance's history.
    expect((await record(id, "b-2")).spec.predecessorBindingId).toBe("b-1");
    const auth = `Basic ${Buffer.from(`${CREDENTIALS.username}:${CREDENTIALS.password}`).toString("base64")}`;
    const history = (await (await fetch(new URL(`/admin/instances/${id}/history`, h.broker.url), { headers: { authorization: auth } })).json()) as InstanceHistory;
    expect(history.entries.filter((e) => e.action === "bind").map((e) => [e.bindingId, e.predecessorBindingId])).toEqual([
      ["b-1", undefined],
      ["b-2", "b-1"],
    ]);
  });

  it("gives the templates the predecessor's id", async () => {
    const id = "rot-tpl";
    const ids = await provisioned(id, ROTATING_PLAN);
    expect((await h.osb.bind(id, "t-1", ids)).status).toBe(201);
    expect((await h.osb.bind(id, "t-2", { ...ids, predecessor_binding_id: "t-1" })).status).toBe(201);
    expect(await instanceText(id)).toMatch(/t-1: none\n\s+t-2: t-1/);
    const own = await readRemoteFile(h.remoteDir, "main", `${bindingManifestDir("local", id, "t-2")}/configmap-rotation-t-2.yaml`);
    expect(own).toContain("predecessor: t-1");
  });

  it("refuses a predecessor that is not a live, finished, unexpired binding of the instance, or a plan that does not rotate, committing nothing", async () => {
    const id = "rot-bad";
    const ids = await provisioned(id, plans.small.id);
    expect((await h.osb.bind(id, "p-1", ids)).status).toBe(201);
    expect((await h.osb.bind(id, "p-gone", ids)).status).toBe(201);
    expect((await h.osb.unbind(id, "p-gone", ids)).status).toBe(200);
    const other = "rot-other";
    const otherIds = await provisioned(other, plans.small.id);
    expect((await h.osb.bind(other, "o-1", otherIds)).status).toBe(201);

    const cases: [string, RegExp][] = [
      ["nobody", /^predecessor_binding_id nobody: instance rot-bad has no binding nobody$/],
      ["o-1", /^predecessor_binding_id o-1: instance rot-bad has no binding o-1$/],
      ["p-gone", /^predecessor_binding_id p-gone: binding p-gone of instance rot-bad is unbound or being unbound$/],
      ["s-1", /^predecessor_binding_id s-1 is the binding being created: a successor has a binding id of its own$/],
    ];
    for (const [predecessor, description] of cases) {
      expectOsbError(await unchanged(() => h.osb.bind(id, "s-1", { ...ids, predecessor_binding_id: predecessor })), 400, description, "BadRequest");
    }
    expectOsbError(await unchanged(() => h.osb.bind(id, "s-1", { ...ids, predecessor_binding_id: "" })), 400, /^bind: predecessor_binding_id must be a non-empty string, got string$/);

    const fixed = "rot-fixed";
    const fixedIds = await provisioned(fixed, FIXED_PLAN);
    expect((await h.osb.bind(fixed, "f-1", fixedIds)).status).toBe(201);
    expectOsbError(
      await unchanged(() => h.osb.bind(fixed, "f-2", { ...fixedIds, predecessor_binding_id: "f-1" })),
      400,
      /^predecessor_binding_id f-1: bindings of plan fixed cannot be rotated \(its binding_rotatable is not true\)$/,
    );

    const short = "rot-short";
    const shortIds = await provisioned(short, SHORT_PLAN);
    // ("e-1" would not do: YAML 1.1 reads it as a number in the plan's ConfigMap.)
    const bound = await h.osb.bind(short, "x-1", shortIds);
    expect(bound.status).toBe(201);
    const expiresAt = (bound.body.metadata as { expires_at: string }).expires_at;
    // Wait until it has expired (the plan says one second after the bind).
    await sleep(Math.max(0, Date.parse(expiresAt) - Date.now()) + 50);
    expectOsbError(
      await unchanged(() => h.osb.bind(short, "x-2", { ...shortIds, predecessor_binding_id: "x-1" })),
      400,
      new RegExp(`^predecessor_binding_id x-1: binding x-1 of instance rot-short expired at ${expiresAt.replace(/\./g, "\\.")}$`),
    );
  });

  it("ignores predecessor_binding_id before 2.17 and says expires_at from 2.16, renew_before from 2.17", async () => {
    const id = "rot-old";
    const ids = await provisioned(id, plans.medium.id);
    const old = await h.osb.bind(id, "v-1", ids, { version: "2.15" });
    expect(old.status).toBe(201);
    expect(old.body.metadata).toBeUndefined();
    const at16 = await h.osb.bind(id, "v-2", { ...ids, predecessor_binding_id: "v-1" }, { version: "2.16" });
    expect(at16.status).toBe(201);
    expect(Object.keys(at16.body.metadata as object)).toEqual(["expires_at"]);
    expect((await gitLog(h.remoteDir))[0]?.subject).toBe(`bind postgresql/medium instance ${id} binding v-2`);
    expect((await record(id, "v-2")).spec.predecessorBindingId).toBeUndefined();
    for (const [version, keys] of [["2.14", undefined], ["2.16", ["expires_at"]], ["2.17", ["expires_at", "renew_before"]]] as const) {
      const fetched = await h.osb.getBinding(id, "v-2", { version });
      expect({ version, keys: fetched.body.metadata === undefined ? undefined : Object.keys(fetched.body.metadata as object) }).toEqual({ version, keys });
    }
  });
});
