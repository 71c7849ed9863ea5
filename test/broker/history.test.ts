import fs from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import type { InstanceHistory } from "../../src/broker/index.js";
import { CREDENTIALS, startHarness, type Harness } from "../support/broker-harness.js";
import { createTempDir, FIXTURE_IDENTITY, pushExternalCommit } from "../support/git-fixtures.js";
import { PROCESS_TEST_TIMEOUT_MS, runProcess } from "../support/processes.js";
import { provisionBody, samplePlans, type SamplePlans } from "./helpers.js";

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../bin/gitops-broker.js");

let h: Harness;
let plans: SamplePlans;
let scratch: string;

function identity(user: string): Record<string, string> {
  return { "x-broker-api-originating-identity": `cloudfoundry ${Buffer.from(JSON.stringify({ user_id: user })).toString("base64")}` };
}

function by(user: string) {
  return { platform: "cloudfoundry", value: { user_id: user } };
}

/** Everything an instance goes through: OSB operations with identities and a human's override. */
beforeAll(async () => {
  h = await startHarness();
  plans = await samplePlans(h.osb);
  scratch = await createTempDir("gitops-broker-history-");
  const ids = { service_id: plans.serviceId, plan_id: plans.small.id };
  const ok = (status: number, expected: number) => expect(status).toBe(expected);
  const headers = (user: string, request: string) => ({ headers: { ...identity(user), "x-broker-api-request-identity": request } });
  ok((await h.osb.provision("hist-1", provisionBody(plans.serviceId, plans.small.id), headers("alice", "req-1"))).status, 201);
  ok((await h.osb.update("hist-1", { service_id: plans.serviceId, parameters: { storageGB: 4 } }, headers("bob", "req-2"))).status, 200);
  ok((await h.osb.bind("hist-1", "hist-app", ids, headers("carol", "req-3"))).status, 201);
  await pushExternalCommit(
    h.remoteDir,
    {
      "overrides/hist-1/replicas.yaml": stringify({
        apiVersion: "gitops-broker.io/v1alpha1",
        kind: "Override",
        target: { apiVersion: "acid.zalan.do/v1", kind: "postgresql", name: "pg-hist-1" },
        patch: { spec: { numberOfInstances: 2 } },
      }),
    },
    "hist-1: two servers for the load test",
  );
  ok((await h.osb.unbind("hist-1", "hist-app", ids, headers("carol", "req-4"))).status, 200);
  ok((await h.osb.deprovision("hist-1", ids, headers("alice", "req-5"))).status, 200);
  // Another instance's operations are not in hist-1's history.
  ok((await h.osb.provision("hist-2", provisionBody(plans.serviceId, plans.small.id))).status, 201);
});
afterAll(async () => {
  await h?.close();
  if (scratch) await fs.rm(scratch, { recursive: true, force: true });
});

/** The timeline as the tests compare it. Re-renders by reconciliation (if any ran) are not what is asserted here. */
function summary(history: InstanceHistory) {
  return history.entries
    .filter((e) => e.action !== "re-render")
    .map((e) => ({
      action: e.action,
      by: e.by,
      ...(e.bindingId ? { bindingId: e.bindingId } : {}),
      ...(e.originatingIdentity ? { who: e.originatingIdentity } : { who: e.author }),
      ...(e.requestIdentity ? { request: e.requestIdentity } : {}),
      ...(e.overrides ? { overrides: e.overrides } : {}),
      ...(e.state ? { state: e.state } : {}),
    }));
}

const EXPECTED = [
  { action: "provision", by: "broker", who: by("alice"), request: "req-1", state: "succeeded" },
  { action: "update", by: "broker", who: by("bob"), request: "req-2", state: "succeeded" },
  { action: "bind", by: "broker", bindingId: "hist-app", who: by("carol"), request: "req-3", state: "succeeded" },
  { action: "change", by: "human", who: FIXTURE_IDENTITY },
  { action: "unbind", by: "broker", bindingId: "hist-app", who: by("carol"), request: "req-4", overrides: ["overrides/hist-1/replicas.yaml"], state: "succeeded" },
  { action: "deprovision", by: "broker", who: by("alice"), request: "req-5", state: "succeeded" },
];

async function getHistory(id: string, auth = true): Promise<Response> {
  const headers: Record<string, string> = auth
    ? { authorization: `Basic ${Buffer.from(`${CREDENTIALS.username}:${CREDENTIALS.password}`).toString("base64")}` }
    : {};
  return fetch(new URL(`/admin/instances/${encodeURIComponent(id)}/history`, h.broker.url), { headers });
}

describe("GET /admin/instances/:instance_id/history", () => {
  it("requires basic authentication", async () => {
    const res = await getHistory("hist-1", false);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Basic/);
  });

  it("lists every operation with who asked, when, the commit, overrides and state, oldest first", async () => {
    const res = await getHistory("hist-1");
    expect(res.status).toBe(200);
    const history = (await res.json()) as InstanceHistory;
    expect(summary(history)).toEqual(EXPECTED);
    expect(history.current).toMatchObject({ deleted: true, clusterId: "local", lastOperation: { action: "deprovision", state: "succeeded" } });
    const human = history.entries.find((e) => e.by === "human")!;
    expect(human).toMatchObject({ subject: "hist-1: two servers for the load test", at: "2024-01-01T00:00:00.000Z" });
    for (const e of history.entries) expect(e.commit).toMatch(/^[0-9a-f]{40}$/);
  });

  it("answers 404 for an instance the repository never had", async () => {
    expect((await getHistory("never-was")).status).toBe(404);
  });
});

function cli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runProcess(process.execPath, [BIN, ...args], { env: { ...process.env, ...env } });
}

describe("gitops-broker history", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("prints the same timeline from its own clone of the remote, as JSON and as text", async () => {
    const env = { GITOPS_BROKER_GIT_REMOTE: h.remoteDir, GITOPS_BROKER_LOG_LEVEL: "error" };
    const dataDir = path.join(scratch, "cli");
    const json = await cli(["history", "hist-1", "--json", "--data-dir", dataDir], env);
    expect(json.code).toBe(0);
    expect(summary(JSON.parse(json.stdout) as InstanceHistory)).toEqual(EXPECTED);

    const text = await cli(["history", "hist-1", "--data-dir", dataDir], env);
    expect(text.code).toBe(0);
    const lines = text.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^instance hist-1 \(key hist-1\): deprovisioned on cluster local, plan \S+; last operation deprovision \S+: succeeded$/);
    expect(lines.find((l) => / provision {2}by /.test(l))).toMatch(/by cloudfoundry \{"user_id":"alice"\} {2}\[succeeded\] {2}operation \S+ {2}request req-1$/);
    expect(lines.find((l) => / change {2}by /.test(l))).toMatch(/by Fixture <fixture@example\.com> {2}"hist-1: two servers for the load test"$/);

    const missing = await cli(["history", "never-was", "--data-dir", dataDir], env);
    expect(missing).toMatchObject({ code: 1 });
    expect(missing.stderr).toMatch(/instance never-was has no history/);
  });
});
