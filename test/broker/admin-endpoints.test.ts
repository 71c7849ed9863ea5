import { execFile } from "node:child_process";
import { createHmac } from "node:crypto";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it, vi } from "vitest";
import { stringify } from "yaml";
import { update } from "../../src/cli/update.js";
import { CREDENTIALS, startHarness, type Harness } from "../support/broker-harness.js";
import { pushExternalCommit } from "../support/git-fixtures.js";
import { expectOsbError, provisionBody, remoteHead, samplePlans } from "./helpers.js";
import { commitsIn, editedPlan, MEDIUM } from "./reconcile-support.js";
import { EVENT_CEILING_MS } from "../support/processes.js";

const SECRET = "webhook-secret-for-tests";
const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../bin/gitops-broker.js");
const run = promisify(execFile);

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function start(webhookSecret: string | null = null): Promise<Harness> {
  h = await startHarness({ configure: (c) => (c.webhook.secret = webhookSecret) });
  return h;
}

function hook(harness: Harness, body: string, headers: Record<string, string>): Promise<Response> {
  return fetch(new URL("/admin/webhook", harness.broker.url), { method: "POST", body, headers: { "content-type": "application/json", ...headers } });
}

const sign = (body: string, secret = SECRET) => `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;

describe("POST /admin/webhook", () => {
  it("does not exist without a configured secret", async () => {
    const harness = await start();
    const res = await hook(harness, "{}", { "x-gitlab-token": "anything" });
    expect(res.status).toBe(404);
  });

  it("authenticates GitHub signatures and GitLab tokens, and fetches the remote at once on a push to the branch", async () => {
    const harness = await start(SECRET);
    const push = JSON.stringify({ ref: "refs/heads/main" });
    const sha = await pushExternalCommit(harness.remoteDir, { "docs/NOTES.md": "hello\n" }, "docs: notes");
    // Polling is hourly in the harness: only the webhook can make the broker see this commit.
    expect(harness.broker.writer.snapshot().commit).not.toBe(sha);

    expect((await hook(harness, push, { "x-github-event": "push" })).status).toBe(401);
    expect((await hook(harness, push, { "x-github-event": "push", "x-hub-signature-256": sign(push, "wrong") })).status).toBe(401);
    expect((await hook(harness, push, { "x-github-event": "push", "x-hub-signature-256": sign(`${push} `) })).status).toBe(401);
    expect((await hook(harness, push, { "x-gitlab-event": "Push Hook", "x-gitlab-token": "wrong" })).status).toBe(401);
    expect(harness.broker.writer.snapshot().commit).not.toBe(sha);

    const ok = await hook(harness, push, { "x-github-event": "push", "x-hub-signature-256": sign(push) });
    expect(ok.status).toBe(202);
    expect(await ok.json()).toEqual({ refresh: true });
    await vi.waitFor(() => expect(harness.broker.writer.snapshot().commit).toBe(sha), { timeout: EVENT_CEILING_MS, interval: 20 });

    const gitlab = await pushExternalCommit(harness.remoteDir, { "docs/NOTES.md": "again\n" }, "docs: more notes");
    expect((await hook(harness, push, { "x-gitlab-event": "Push Hook", "x-gitlab-token": SECRET })).status).toBe(202);
    await vi.waitFor(() => expect(harness.broker.writer.snapshot().commit).toBe(gitlab), { timeout: EVENT_CEILING_MS, interval: 20 });

    const other = JSON.stringify({ ref: "refs/heads/feature" });
    const ignored = await hook(harness, other, { "x-github-event": "push", "x-hub-signature-256": sign(other) });
    expect(ignored.status).toBe(200);
    expect(await ignored.json()).toEqual({ refresh: false, reason: "not a push to refs/heads/main" });
  });
});

describe("manual re-render: POST /admin/rerender and gitops-broker update", () => {
  it("re-renders a plan's instances or one instance on request, committing only what changed", async () => {
    const harness = await start();
    const plans = await samplePlans(harness.osb);
    const osb = harness.osb;
    expect((await osb.provision("m-1", provisionBody(plans.serviceId, plans.medium.id), { query: { accepts_incomplete: "true" } })).status).toBe(202);
    expect((await osb.provision("s-1", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);

    expectOsbError(await osb.call("POST", "/admin/rerender", { plan_id: plans.medium.id }, { auth: false }), 401, /missing basic authentication/);
    expectOsbError(await osb.call("POST", "/admin/rerender", { plan_id: "x", instance_id: "y" }), 400, /exactly one of plan_id and instance_id/);
    expectOsbError(await osb.call("POST", "/admin/rerender", { instance_id: "nope" }), 404, /instance nope does not exist/);
    expectOsbError(await osb.call("POST", "/admin/rerender", { plan_id: "nope" }), 404, /plan nope is not in the catalog/);

    // Medium (no autoUpdateInstances) changes: nothing happens until someone asks.
    const sha = await pushExternalCommit(harness.remoteDir, { [MEDIUM]: await editedPlan(harness.remoteDir, MEDIUM, (p) => (p.spec.context.numberOfInstances = 4)) }, "medium: four");
    await harness.broker.writer.refresh();
    await harness.broker.reconciler.idle();
    expect(await remoteHead(harness.remoteDir)).toBe(sha);

    const res = await osb.call("POST", "/admin/rerender", { plan_id: plans.medium.id });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ plan_id: plans.medium.id, instances: 1 });
    await harness.broker.reconciler.idle();
    expect(await commitsIn(harness.remoteDir, `${sha}..main`)).toEqual([
      {
        sha: expect.any(String),
        subject: "re-render postgresql/medium instance m-1",
        trailers: { Reason: "manual", "Instance-Id": "m-1", "Broker-Version": "gitops-broker/test" },
      },
    ]);
    // Nothing changed since: a re-render commits nothing.
    const head = await remoteHead(harness.remoteDir);
    expect((await osb.call("POST", "/admin/rerender", { instance_id: "s-1" })).status).toBe(202);
    await harness.broker.reconciler.idle();
    expect(await remoteHead(harness.remoteDir)).toBe(head);

    // The CLI finds the broker and its credentials from the same configuration file.
    const { port } = new URL(harness.broker.url);
    const configFile = path.join(harness.root, "update.yaml");
    await writeFile(
      configFile,
      stringify({ listen: `127.0.0.1:${port}`, dataDir: path.join(harness.root, "broker-1"), auth: { password: CREDENTIALS.password } }),
    );
    const out: string[] = [];
    const err: string[] = [];
    const io = { stdout: (l: string) => out.push(l), stderr: (l: string) => err.push(l), env: {}, cwd: harness.root };
    const edited = await pushExternalCommit(harness.remoteDir, { [MEDIUM]: await editedPlan(harness.remoteDir, MEDIUM, (p) => (p.spec.context.numberOfInstances = 3)) }, "medium: three");
    await harness.broker.writer.refresh();
    expect(await update(["--plan", plans.medium.id, "--config", configFile], io)).toBe(0);
    expect(out).toEqual([`queued the re-render of 1 instance(s) of plan ${plans.medium.id}`]);
    await harness.broker.reconciler.idle();
    expect((await commitsIn(harness.remoteDir, `${edited}..main`)).map((c) => c.subject)).toEqual(["re-render postgresql/medium instance m-1"]);

    expect(await update(["--instance", "nope", "--config", configFile], io)).toBe(1);
    expect(await update(["--instance", "s-1", "--plan", "p", "--config", configFile], io)).toBe(2);
    expect(await update(["--instance", "s-1", "--config", configFile, "--url", "http://127.0.0.1:1"], io)).toBe(1);
    expect(err).toEqual([
      "gitops-broker update: the broker answered 404: instance nope does not exist",
      "error: option '--plan <plan-id>' cannot be used with option '--instance <instance-id>'",
      "(add --help for usage)",
      expect.stringMatching(/^gitops-broker update: cannot reach the broker at http:\/\/127\.0\.0\.1:1 \(ECONNREFUSED\); is it running\?/),
    ]);

    // The same through the installed command.
    const { stdout } = await run(process.execPath, [BIN, "update", "--instance", "s-1", "--config", configFile], { cwd: harness.root });
    expect(stdout).toBe("queued the re-render of instance s-1\n");
  });
});
