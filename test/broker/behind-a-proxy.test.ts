/**
 * The per-address connection bound (`http.maxConnectionsPerClient`, ADR 0013) against the clients
 * that meet it: Node's own fetch sending many requests at once from one process, straight at the
 * real broker (port 0, real remote over smart HTTP), and through nginx configured as the
 * ingress-nginx controller proxies (test/support/nginx-proxy.ts), whose upstream connections all
 * come from one address as an ingress controller pod's do.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, CREDENTIALS, type Harness } from "../support/broker-harness.js";
import { startNginxProxy } from "../support/nginx-proxy.js";
import { provisionBody, samplePlans, type SamplePlans } from "./helpers.js";

const BOUND = 128;
const AUTH = `Basic ${Buffer.from(`${CREDENTIALS.username}:${CREDENTIALS.password}`).toString("base64")}`;
const OSB = { authorization: AUTH, "x-broker-api-version": "2.17", "content-type": "application/json" };

let h: Harness;
let plans: SamplePlans;

beforeAll(async () => {
  h = await startHarness({ configure: (c) => void (c.http = { ...c.http, maxConnectionsPerClient: BOUND }) });
  plans = await samplePlans(h.osb);
});
afterAll(async () => {
  await h?.close();
});

/** What one fetch came to: its status, or the error code under fetch's TypeError. */
type Outcome = { status: number; retryAfter: string | null } | { error: string };

/** `count` provisions sent at once with Node's global fetch (undici: one new socket per request in flight). */
function provisionAtOnce(baseUrl: string, prefix: string, count: number): Promise<Outcome[]> {
  const body = JSON.stringify(provisionBody(plans.serviceId, plans.small.id));
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      fetch(new URL(`/v2/service_instances/${prefix}-${i}`, baseUrl), { method: "PUT", headers: OSB, body }).then(
        async (res): Promise<Outcome> => {
          await res.arrayBuffer();
          return { status: res.status, retryAfter: res.headers.get("retry-after") };
        },
        (error: unknown): Outcome => {
          const cause = (error as { cause?: { code?: string } }).cause;
          return { error: `${(error as Error).message} (${cause?.code ?? "no code"})` };
        },
      ),
    ),
  );
}

describe(`Node's fetch straight at the broker, 200 provisions at once, maxConnectionsPerClient ${BOUND}`, () => {
  it("opens a socket per request; past the bound the broker resets them and the requests fail instead of waiting", async () => {
    const outcomes = await provisionAtOnce(h.broker.url, "direct", 200);
    const created = outcomes.filter((o) => "status" in o && o.status === 201);
    const failed = outcomes.filter((o): o is { error: string } => "error" in o);
    // At most BOUND sockets are served; the others are reset before a byte is read.
    expect(created.length).toBeLessThanOrEqual(BOUND);
    expect(failed.length).toBeGreaterThanOrEqual(200 - BOUND);
    expect(new Set(failed.map((f) => f.error))).toEqual(new Set(["fetch failed (ECONNRESET)"]));
  });
});

describe(`through an ingress-like nginx (upstream connections from 127.0.0.3), 300 provisions at once, maxConnectionsPerClient ${BOUND}`, () => {
  it("the proxy opens an upstream connection per request in flight; past the bound the broker resets them and the platform sees 502", async () => {
    const proxy = await startNginxProxy({ upstream: h.broker.url, sourceAddress: "127.0.0.3" });
    try {
      const outcomes = await provisionAtOnce(proxy.url, "proxied", 300);
      const statuses = outcomes.map((o) => ("status" in o ? o.status : o.error));
      expect(statuses.filter((s) => s === 201).length).toBeLessThanOrEqual(BOUND);
      expect(statuses.filter((s) => s === 502).length).toBeGreaterThanOrEqual(300 - BOUND);
      expect(new Set(statuses)).toEqual(new Set([201, 502]));
      expect(proxy.errorLog()).toMatch(/Connection reset by peer\) while reading response header from upstream/);
    } finally {
      await proxy.close();
    }
  });
});
