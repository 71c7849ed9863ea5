import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { provisionBody, samplePlans, type SamplePlans } from "./helpers.js";

/** One sample of the Prometheus text format: name, labels, value. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parse the text exposition format (the lines prom-client writes: comments, `name{k="v",...} value`). */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

let h: Harness;
let plans: SamplePlans;
let samples: Sample[];

/** The value of the one sample of `name` whose labels include `labels` (undefined: none). */
function value(name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

async function scrape(): Promise<Sample[]> {
  const url = h.broker.metricsUrl;
  if (!url) throw new Error("no metrics server");
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/plain");
  return parseExposition(await res.text());
}

beforeAll(async () => {
  h = await startHarness({ configure: (c) => void (c.metrics.listen = { host: "127.0.0.1", port: 0 }) });
  plans = await samplePlans(h.osb);
  const ids = { service_id: plans.serviceId, plan_id: plans.small.id };
  const expectStatus = async (reply: Promise<{ status: number }>, status: number) => expect((await reply).status).toBe(status);
  await expectStatus(h.osb.provision("m-1", provisionBody(plans.serviceId, plans.small.id)), 201);
  await expectStatus(h.osb.provision("m-1", provisionBody(plans.serviceId, plans.small.id)), 200); // identical: acknowledged again
  await expectStatus(h.osb.provision("m-bad", provisionBody(plans.serviceId, "no-such-plan")), 400);
  await expectStatus(h.osb.bind("m-1", "app-1", ids), 201);
  await expectStatus(h.osb.lastOperation("m-1"), 200);
  await expectStatus(h.osb.bindingLastOperation("m-1", "app-1"), 200);
  await expectStatus(h.osb.lastOperation("m-unknown"), 404); // never existed: 404 from OSB 2.16 on
  await expectStatus(h.osb.provision("m-2", provisionBody(plans.serviceId, plans.small.id)), 201);
  await expectStatus(h.osb.bind("m-2", "app-2", ids), 201);
  await expectStatus(h.osb.bind("m-2", "app-3", ids), 201);
  await expectStatus(h.osb.unbind("m-1", "app-1", ids), 200);
  await expectStatus(h.osb.deprovision("m-1", ids), 200);
  await expectStatus(h.osb.deprovision("m-1", ids), 410);
  samples = await scrape();
});
afterAll(async () => {
  await h?.close();
});

describe("GET /metrics", () => {
  it("is served on its own port, not on the OSB port", async () => {
    const metricsUrl = new URL(h.broker.metricsUrl!);
    expect(metricsUrl.port).not.toBe(new URL(h.broker.url).port);
    expect((await fetch(`${h.broker.url}/metrics`)).status).toBe(404);
    expect((await fetch(h.broker.metricsUrl!, { method: "POST" })).status).toBe(405);
    expect((await fetch(new URL("/v2/catalog", metricsUrl))).status).toBe(404);
  });

  it("counts OSB writes by kind and outcome, and the acknowledgement latency of the acknowledged ones", () => {
    expect(value("gitops_broker_operations_total", { kind: "provision", outcome: "acknowledged" })).toBe(3);
    expect(value("gitops_broker_operations_total", { kind: "provision", outcome: "rejected" })).toBe(1);
    expect(value("gitops_broker_operations_total", { kind: "bind", outcome: "acknowledged" })).toBe(3);
    expect(value("gitops_broker_operations_total", { kind: "unbind", outcome: "acknowledged" })).toBe(1);
    expect(value("gitops_broker_operations_total", { kind: "deprovision", outcome: "acknowledged" })).toBe(1);
    expect(value("gitops_broker_operations_total", { kind: "deprovision", outcome: "rejected" })).toBe(1);
    expect(value("gitops_broker_operations_total", { kind: "update" })).toBeUndefined();
    expect(value("gitops_broker_operation_ack_duration_seconds_count", { kind: "provision" })).toBe(3);
    expect(value("gitops_broker_operation_ack_duration_seconds_count", { kind: "deprovision" })).toBe(1);
    const sum = value("gitops_broker_operation_ack_duration_seconds_sum", { kind: "provision" })!;
    expect(sum).toBeGreaterThan(0);
    expect(value("gitops_broker_operation_ack_duration_seconds_bucket", { kind: "provision", le: "+Inf" })).toBe(3);
  });

  it("counts last_operation answers by resource and state", () => {
    expect(value("gitops_broker_last_operation_answers_total", { resource: "instance", state: "succeeded" })).toBe(1);
    expect(value("gitops_broker_last_operation_answers_total", { resource: "binding", state: "succeeded" })).toBe(1);
    expect(value("gitops_broker_last_operation_answers_total", { resource: "instance", state: "missing" })).toBe(1);
  });

  it("shows pushes, their duration and size, the write queue and the age of the last contact with the remote, by store", () => {
    // Seven commits (provision m-1, bind, provision m-2, two binds, unbind, deprovision), sent one after the other.
    const control = { store: "control" };
    const pushes = value("gitops_broker_git_pushes_total", { ...control, result: "accepted" })!;
    expect(pushes).toBeGreaterThanOrEqual(7);
    expect(value("gitops_broker_git_push_duration_seconds_count", control)).toBe(pushes);
    expect(value("gitops_broker_git_batch_operations_count", control)).toBe(pushes);
    expect(value("gitops_broker_git_batch_operations_sum", control)).toBeGreaterThanOrEqual(7);
    expect(value("gitops_broker_git_queued_operations", control)).toBe(0);
    const age = value("gitops_broker_git_last_fetch_age_seconds", control)!;
    expect(Number.isFinite(age)).toBe(true);
    expect(age).toBeGreaterThanOrEqual(0);
    // No push window configured (git.minPushIntervalSeconds 0): nothing waited for one.
    expect(samples.some((s) => s.name.startsWith("gitops_broker_git_push_window_wait_seconds"))).toBe(false);
  });

  it("shows instances and bindings per cluster and plan, the clusters and the catalog's state, as the repository holds them", async () => {
    expect(value("gitops_broker_service_instances", { cluster: "local", plan: plans.small.id })).toBe(1);
    // m-1's binding was unbound and m-1 deprovisioned: m-2's two bindings are left.
    expect(value("gitops_broker_service_bindings", { cluster: "local", plan: plans.small.id })).toBe(2);
    expect(value("gitops_broker_clusters", { cluster: "local", schedulable: "true" })).toBe(1);
    expect(value("gitops_broker_catalog_loaded")).toBe(1);
    expect(value("gitops_broker_catalog_problems")).toBe(0);
    const catalog = (await h.osb.catalog()).body as { services: { plans: unknown[] }[] };
    expect(value("gitops_broker_catalog_plans")).toBe(catalog.services.reduce((n, s) => n + s.plans.length, 0));
    expect(value("gitops_broker_rerenders_queued")).toBe(0);
  });

  it("follows the repository at each scrape", async () => {
    const ids = { service_id: plans.serviceId, plan_id: plans.small.id };
    expect((await h.osb.unbind("m-2", "app-2", ids)).status).toBe(200);
    const oneUnbound = await scrape();
    expect(oneUnbound.filter((s) => s.name === "gitops_broker_service_bindings").map((s) => s.value)).toEqual([1]);
    expect((await h.osb.unbind("m-2", "app-3", ids)).status).toBe(200);
    expect((await h.osb.deprovision("m-2", ids)).status).toBe(200);
    const after = await scrape();
    expect(after.filter((s) => s.name === "gitops_broker_service_bindings")).toEqual([]);
    // No live instance left: the series is gone, not stuck at its last value.
    expect(after.filter((s) => s.name === "gitops_broker_service_instances")).toEqual([]);
    expect(after.find((s) => s.name === "gitops_broker_operations_total" && s.labels.kind === "deprovision" && s.labels.outcome === "acknowledged")?.value).toBe(2);
  });

  it("includes Node's process metrics", () => {
    expect(value("process_cpu_user_seconds_total")).toBeGreaterThan(0);
    expect(value("nodejs_heap_size_total_bytes")).toBeGreaterThan(0);
    expect(value("process_start_time_seconds")).toBeGreaterThan(0);
  });
});
