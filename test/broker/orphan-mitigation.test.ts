import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { parse } from "yaml";
import { startBroker, type RunningBroker } from "../../src/cli/serve.js";
import { createLogger } from "../../src/log/index.js";
import { bindingRecordPath, instanceManifestDir, instanceRecordPath, keyOf } from "../../src/repo/index.js";
import { CREDENTIALS, startHarness, testConfig, type Harness } from "../support/broker-harness.js";
import { gitLog, readRemoteFile } from "../support/git-fixtures.js";
import { startHangProxy, type HangProxy } from "../support/hang-proxy.js";
import { osbClient, type OsbClient } from "../support/osb-client.js";
import { EVENT_CEILING_MS } from "../support/processes.js";
import { expectOsbError, provisionBody, remoteFiles, samplePlans, type SamplePlans } from "./helpers.js";

/**
 * OSB orphan mitigation (ADR 0034), through the real app and a real remote: a provision or bind
 * the platform abandons (its connection closes: its timeout) and then deletes leaves nothing in
 * Git. The broker's remote sits behind a proxy that can hold every connection, which keeps an
 * operation in the write queue (behind a fetch) or its commit in a push, as a slow remote does.
 */

let h: Harness;
let proxy: HangProxy;
let broker: RunningBroker;
let osb: OsbClient;
let plans: SamplePlans;
const logs: Record<string, unknown>[] = [];

beforeAll(async () => {
  h = await startHarness();
  proxy = await startHangProxy(h.git.port);
  const config = testConfig(h.root, "proxied", `http://127.0.0.1:${proxy.port}/${path.basename(h.remoteDir)}`, {
    // Only the test ends a hang.
    activityTimeoutSeconds: 600,
    pushTimeoutSeconds: 600,
  });
  config.metrics = { listen: { host: "127.0.0.1", port: 0 } };
  broker = await startBroker(config, {
    version: "test",
    logger: createLogger({ level: "debug", destination: { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) } }),
  });
  osb = osbClient(broker.url, CREDENTIALS);
  plans = await samplePlans(osb);
});
afterAll(async () => {
  proxy?.setHanging(false);
  await broker?.close();
  await proxy?.close();
  await h?.close();
});

const eventually = <T>(assertion: () => Promise<T> | T): Promise<T> => vi.waitFor(assertion, { timeout: EVENT_CEILING_MS, interval: 50 });

async function queued(): Promise<number> {
  const text = await (await fetch(broker.metricsUrl!)).text();
  const line = text.split("\n").find((l) => l.startsWith('gitops_broker_git_queued_operations{store="control"}'));
  return Number(line?.slice(line.lastIndexOf(" ") + 1) ?? 0);
}

/** A platform's request that it gives up on (closes the connection) once `gaveUp` resolves. */
function abandoned(method: string, urlPath: string, body: unknown, gaveUp: Promise<void>): Promise<void> {
  const controller = new AbortController();
  void gaveUp.then(() => controller.abort());
  return osb.call(method, urlPath, body, { signal: controller.signal }).then(
    (res) => expect.unreachable(`answered ${res.status} before the platform gave up`),
    (error: unknown) => expect((error as Error).name).toBe("AbortError"),
  );
}

/**
 * Holds the write queue: a fetch hangs (a GET of a missing instance confirms with one), so a
 * request queued now waits; `request` is sent and abandoned once it is queued, then the remote
 * answers again. Resolves once the queue is empty.
 */
async function abandonWhileQueued(method: string, urlPath: string, body: unknown): Promise<void> {
  proxy.setHanging(true);
  const confirming = osb.getInstance("never-was");
  await eventually(() => expect(proxy.hungConnections).toBeGreaterThan(0));
  let giveUp!: () => void;
  const request = abandoned(method, urlPath, body, new Promise<void>((resolve) => (giveUp = resolve)));
  await eventually(async () => expect(await queued()).toBe(1));
  giveUp();
  await request;
  await eventually(() => expect(logs.some((l) => l.msg === "the client closed the connection before the answer" && l.path === urlPath)).toBe(true));
  proxy.setHanging(false);
  expect((await confirming).status).toBe(503); // the fetch it waited for was cut off
  await eventually(async () => expect(await queued()).toBe(0));
}

async function commitsNaming(trailer: string): Promise<string[]> {
  return (await gitLog(h.remoteDir)).filter((c) => c.message.split("\n").includes(trailer)).map((c) => c.subject);
}

describe("orphan mitigation", () => {
  it("a provision abandoned before its commit commits nothing; the platform's DELETE then finds nothing", async () => {
    const id = "orphan-1";
    await abandonWhileQueued("PUT", `/v2/service_instances/${id}`, provisionBody(plans.serviceId, plans.small.id));
    expect(await commitsNaming(`Instance-Id: ${id}`)).toEqual([]);

    // The platform's orphan mitigation: gone, nothing to delete.
    const ids = { service_id: plans.serviceId, plan_id: plans.small.id };
    expectOsbError(await osb.deprovision(id, ids), 410, /^instance orphan-1 does not exist$/);
    expect(await commitsNaming(`Instance-Id: ${id}`)).toEqual([]);
    expect(await readRemoteFile(h.remoteDir, "main", instanceRecordPath(id))).toBeNull();
    expect(await remoteFiles(h.remoteDir, instanceManifestDir("local", id))).toEqual([]);
    expect(logs.some((l) => l.msg === `provision of instance ${id}: the platform closed the connection before it was committed; nothing committed`)).toBe(true);
  });

  it("a bind abandoned before its commit commits nothing; the platform's unbind then finds nothing", async () => {
    const id = "orphan-b";
    const ids = { service_id: plans.serviceId, plan_id: plans.small.id };
    expect((await osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    await abandonWhileQueued("PUT", `/v2/service_instances/${id}/service_bindings/b-orphan`, ids);

    expectOsbError(await osb.unbind(id, "b-orphan", ids), 410, /^binding b-orphan of instance orphan-b does not exist$/);
    expect(await commitsNaming("Binding-Id: b-orphan")).toEqual([]);
    expect(await readRemoteFile(h.remoteDir, "main", bindingRecordPath(id, "b-orphan"))).toBeNull();
    const files = await remoteFiles(h.remoteDir, instanceManifestDir("local", id));
    const texts = await Promise.all(files.map((f) => readRemoteFile(h.remoteDir, "main", f)));
    expect(texts.join("\n")).not.toContain(keyOf("b-orphan"));
  });

  it("a provision abandoned while its push hangs is committed; the DELETE sent meanwhile queues behind it and removes it", async () => {
    const id = "orphan-pushed";
    const ids = { service_id: plans.serviceId, plan_id: plans.small.id };
    proxy.setHanging(true);
    let giveUp!: () => void;
    const request = abandoned("PUT", `/v2/service_instances/${id}`, provisionBody(plans.serviceId, plans.small.id), new Promise<void>((resolve) => (giveUp = resolve)));
    // Its commit is built and its push hangs: the queue holds it until the push is answered.
    await eventually(() => expect(proxy.hungConnections).toBeGreaterThan(0));
    await eventually(async () => expect(await queued()).toBe(1));
    giveUp();
    await request;
    const deleting = osb.deprovision(id, ids);
    await eventually(async () => expect(await queued()).toBe(2));
    proxy.setHanging(false);

    const deleted = await deleting;
    expect({ status: deleted.status, body: deleted.body }).toEqual({ status: 200, body: {} });
    expect(await commitsNaming(`Instance-Id: ${id}`)).toEqual([`deprovision postgresql/small instance ${id}`, `provision postgresql/small instance ${id}`]);
    expect(await remoteFiles(h.remoteDir, instanceManifestDir("local", id))).toEqual([]);
    expect(parse((await readRemoteFile(h.remoteDir, "main", instanceRecordPath(id))) ?? "").status).toMatchObject({ deleted: true });
  });
});
