/**
 * Malformed and hostile requests against the real broker (port 0, real remote over smart HTTP):
 * each gets a 4xx with the OSB error body, nothing is committed, and the broker keeps serving.
 * Slow clients are cut off by the socket bounds of `http.*` (short values here).
 */
import { createHmac } from "node:crypto";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, CREDENTIALS, type Harness } from "../support/broker-harness.js";
import { openSocket, rawRequest, type RawResponse } from "../support/raw-http.js";
import { provisionBody, remoteHead, samplePlans, type SamplePlans } from "./helpers.js";

const SECRET = "hostile-webhook-secret";
const AUTH = `Basic ${Buffer.from(`${CREDENTIALS.username}:${CREDENTIALS.password}`).toString("base64")}`;
const OSB = { authorization: AUTH, "x-broker-api-version": "2.17", "content-type": "application/json" };

let h: Harness;
let plans: SamplePlans;
let head: string;

beforeAll(async () => {
  h = await startHarness({
    configure: (c) => {
      c.webhook.secret = SECRET;
      c.http = { ...c.http, headersTimeoutSeconds: 2, requestTimeoutSeconds: 3, idleTimeoutSeconds: 2, maxConnectionsPerClient: 8 };
    },
  });
  plans = await samplePlans(h.osb);
  head = await remoteHead(h.remoteDir);
});
afterAll(async () => {
  await h?.close();
});

function body(extra: Record<string, unknown> = {}): string {
  return JSON.stringify(provisionBody(plans.serviceId, plans.small.id, extra));
}

function nested(levels: number): unknown {
  let v: unknown = "leaf";
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
}

/** A provision body whose context holds `levels` nested objects, as text (JSON.stringify would overflow). */
function deepBody(levels: number): string {
  return body({ context: "CONTEXT" }).replace('"CONTEXT"', `${'{"a":'.repeat(levels)}"leaf"${"}".repeat(levels)}`);
}

/** An OSB error reply: the status, a JSON body with a description matching `description`. */
function expectOsb(res: RawResponse, status: number, description: RegExp): void {
  expect({ status: res.status, description: res.json?.description }).toEqual({ status, description: expect.stringMatching(description) });
}

describe("malformed requests: 4xx with the OSB error body, no commit", () => {
  it("an instance id that is not valid percent-encoded UTF-8 (%ff%fe), on every route", async () => {
    const bad = "/v2/service_instances/%ff%fe";
    const q = `?service_id=${plans.serviceId}&plan_id=${plans.small.id}`;
    const cases: [string, string, string | undefined][] = [
      ["PUT", `${bad}?accepts_incomplete=true`, body()],
      ["PATCH", bad, body()],
      ["GET", bad, undefined],
      ["GET", `${bad}/last_operation`, undefined],
      ["PUT", `${bad}/service_bindings/b-1`, body()],
      ["PUT", `/v2/service_instances/ok-1/service_bindings/%c3%28`, body()],
      ["DELETE", `${bad}${q}`, undefined],
      ["GET", `/admin/instances/%ff/history`, undefined],
    ];
    for (const [method, path, payload] of cases) {
      const res = await rawRequest(h.broker.url, { method, path, headers: OSB, ...(payload !== undefined ? { body: payload } : {}), ...lengthOf(payload) });
      expectOsb(res, 400, /not valid percent-encoded UTF-8/);
    }
    expect(await remoteHead(h.remoteDir)).toBe(head);
  });

  it("ids outside the id grammar: spaces, non-ASCII, control characters, over 255 characters", async () => {
    for (const id of ["a b", "caf\u00e9", "tab\there", "x".repeat(256), "line\nbreak"]) {
      const res = await h.osb.provision(id, JSON.parse(body()));
      expect({ id, status: res.status, description: res.body.description }).toMatchObject({
        status: 400,
        description: expect.stringMatching(/instance_id (must consist of visible ASCII|is longer than 255)/),
      });
    }
    const binding = await h.osb.bind("ok-1", "b\u00e9", { service_id: plans.serviceId, plan_id: plans.small.id });
    expect(binding.status).toBe(400);
    expect(binding.body.description).toMatch(/binding_id must consist of visible ASCII/);
    expect(await remoteHead(h.remoteDir)).toBe(head);
  });

  it("Content-Encoding: a corrupt gzip body is 400, an unknown encoding 415, a real gzip body is read", async () => {
    const path = "/v2/service_instances/enc-1?accepts_incomplete=true";
    const corrupt = Buffer.from(body());
    const res = await rawRequest(h.broker.url, { method: "PUT", path, headers: { ...OSB, "content-encoding": "gzip", "content-length": String(corrupt.length) }, body: corrupt });
    expectOsb(res, 400, /does not decode with its Content-Encoding/);
    const truncated = gzipSync(body()).subarray(0, 20);
    const cut = await rawRequest(h.broker.url, { method: "PUT", path, headers: { ...OSB, "content-encoding": "gzip", "content-length": String(truncated.length) }, body: truncated });
    expect(cut.status).toBe(400);
    expect(cut.json?.description).toEqual(expect.any(String));
    const unknown = await rawRequest(h.broker.url, { method: "PUT", path, headers: { ...OSB, "content-encoding": "compress", "content-length": String(corrupt.length) }, body: corrupt });
    expectOsb(unknown, 415, /Content-Encoding "compress" is not supported/);
    expect(await remoteHead(h.remoteDir)).toBe(head);

    const gz = gzipSync(body());
    const ok = await rawRequest(h.broker.url, { method: "PUT", path, headers: { ...OSB, "content-encoding": "gzip", "content-length": String(gz.length) }, body: gz });
    expect(ok.status).toBe(201);
    head = await remoteHead(h.remoteDir);
  });

  it("bodies nested deeper than 32 levels are refused before parsing; 32 levels are accepted", async () => {
    // The body is level 1; `deepBody(n)` nests n objects from context down: n + 1 levels.
    for (const levels of [1_000, 100_000, 32]) {
      const res = await h.osb.provision(`deep-${levels}`, {}, { raw: deepBody(levels) });
      expect({ levels, status: res.status, description: res.body.description }).toEqual({
        levels,
        status: 400,
        description: "the request body is nested deeper than 32 levels of objects and arrays",
      });
    }
    const arrays = `{"parameters":{"x":${"[".repeat(50_000)}${"]".repeat(50_000)}}}`;
    expect((await h.osb.provision("deep-arrays", {}, { raw: arrays })).status).toBe(400);
    // Brackets inside strings do not count.
    const inString = await h.osb.provision("deep-string", {}, { raw: body({ context: { platform: "cloudfoundry", note: "[{".repeat(500) } }) });
    expect(inString.status).toBe(201);
    const identity = `cloudfoundry ${Buffer.from(JSON.stringify(nested(200))).toString("base64")}`;
    const deepIdentity = await h.osb.provision("deep-identity", JSON.parse(body()), { headers: { "x-broker-api-originating-identity": identity } });
    expect(deepIdentity.status).toBe(400);
    expect(deepIdentity.body.description).toMatch(/Originating-Identity value is nested deeper than 32 levels/);
    head = await remoteHead(h.remoteDir);
    const fits = await h.osb.provision("deep-31", {}, { raw: deepBody(31) });
    expect(fits.status).toBe(201);
    expect(await remoteHead(h.remoteDir)).not.toBe(head);
    head = await remoteHead(h.remoteDir);
  });

  it("what the HTTP parser refuses (bad header name, bad method, huge headers) gets the OSB body too", async () => {
    const badHeader = await rawRequest(h.broker.url, { method: "GET", path: "/v2/catalog", headers: { "bad header": "x" } });
    expectOsb(badHeader, 400, /malformed HTTP request/);
    const badMethod = await rawRequest(h.broker.url, { method: "G{}T", path: "/v2/catalog" });
    expectOsb(badMethod, 400, /malformed HTTP request/);
    const huge = await rawRequest(h.broker.url, { method: "GET", path: "/v2/catalog", headers: { "x-big": "y".repeat(64 * 1024) } });
    expectOsb(huge, 431, /headers are too large/);
  });

  it("the broker keeps serving after all of it", async () => {
    expect((await h.osb.provision("after-hostile", JSON.parse(body()))).status).toBe(201);
    head = await remoteHead(h.remoteDir);
  });
});

function lengthOf(payload: string | undefined): { headers?: Record<string, string> } {
  return payload === undefined ? {} : { headers: { ...OSB, "content-length": String(Buffer.byteLength(payload)) } };
}

describe("bounded sockets (http.requestTimeoutSeconds 3, headersTimeoutSeconds 2, maxConnectionsPerClient 8)", () => {
  it("a body shorter than its Content-Length is answered 408 and closed within the request timeout", async () => {
    const res = await rawRequest(h.broker.url, {
      method: "PUT",
      path: "/v2/service_instances/short-1",
      headers: { ...OSB, "content-length": "1000" },
      body: '{"service_id":',
    });
    expectOsb(res, 408, /not received within the timeout/);
    // Generous ceiling: 3 s timeout, checked every second.
    expect(res.ms).toBeLessThan(15_000);
    expect(await remoteHead(h.remoteDir)).toBe(head);
  });

  it("a body trickled one byte at a time is cut off within the request timeout", async () => {
    const res = await rawRequest(h.broker.url, {
      method: "PUT",
      path: "/v2/service_instances/trickle-1",
      headers: { ...OSB, "content-length": "100000" },
      trickle: { chunk: " ", everyMs: 200 },
    });
    expectOsb(res, 408, /not received within the timeout/);
    expect(res.ms).toBeLessThan(15_000);
  });

  it("headers trickled in are cut off within the headers timeout", async () => {
    const { socket, closed } = await openSocket(h.broker.url);
    const started = performance.now();
    socket.write("GET /v2/catalog HTTP/1.1\r\n");
    const timer = setInterval(() => socket.writable && socket.write("x-slow: y\r\n"), 200);
    try {
      await closed;
    } finally {
      clearInterval(timer);
    }
    expect(performance.now() - started).toBeLessThan(15_000);
  });

  it("an idle keep-alive connection is closed after the idle timeout", async () => {
    const { socket, closed } = await openSocket(h.broker.url);
    socket.write(`GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n`);
    const started = performance.now();
    await closed;
    expect(performance.now() - started).toBeLessThan(15_000);
  });

  it("one client address is served at most maxConnectionsPerClient connections; as many more are answered 503, further ones closed unanswered", async () => {
    const held = await Promise.all(Array.from({ length: 8 }, () => openSocket(h.broker.url)));
    const waiting: Awaited<ReturnType<typeof openSocket>>[] = [];
    try {
      // Keep them busy so that the idle timeout does not free them during the test.
      for (const { socket } of held) socket.write("PUT /v2/service_instances/x HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\n");
      const over = await rawRequest(h.broker.url, { method: "GET", path: "/healthz" });
      expectOsb(over, 503, /^too many connections from one address: 8 at most \(http\.maxConnectionsPerClient\)/);
      expect(over.headers["retry-after"]).toBe("1");
      // Eight more past the bound, waiting for their request: the next one is closed without an answer.
      for (let i = 0; i < 8; i++) waiting.push(await openSocket(h.broker.url));
      const refused = await rawRequest(h.broker.url, { method: "GET", path: "/healthz" });
      expect(refused.status).toBeNull();
    } finally {
      for (const { socket } of [...held, ...waiting]) socket.destroy();
      await Promise.all([...held, ...waiting].map((s) => s.closed));
    }
    // Freed: served again.
    expect((await rawRequest(h.broker.url, { method: "GET", path: "/healthz" })).status).toBe(200);
  });
});

describe("POST /admin/webhook: unauthenticated bodies are bounded", () => {
  it("without a signature or token the answer is 401 before any body byte is read", async () => {
    const res = await rawRequest(h.broker.url, {
      method: "POST",
      path: "/admin/webhook",
      headers: { "content-type": "application/json", "content-length": String(25 * 1024 * 1024), "x-github-event": "push" },
      body: "{",
    });
    expectOsb(res, 401, /X-Hub-Signature-256/);
    expect(res.ms).toBeLessThan(2_000 + 10_000);
  });

  it("a wrong GitLab token is refused before the body; an announced body over 1 MiB is 413", async () => {
    const wrong = await rawRequest(h.broker.url, {
      method: "POST",
      path: "/admin/webhook",
      headers: { "x-gitlab-token": "nope", "x-gitlab-event": "Push Hook", "content-length": String(10 * 1024 * 1024) },
    });
    expect(wrong.status).toBe(401);
    const big = await rawRequest(h.broker.url, {
      method: "POST",
      path: "/admin/webhook",
      headers: { "x-hub-signature-256": "sha256=00", "x-github-event": "push", "content-length": String(2 * 1024 * 1024) },
    });
    expectOsb(big, 413, /at most 1048576 bytes/);
  });

  it("a chunked body over 1 MiB is 413 even with a signature header", async () => {
    const payload = Buffer.alloc(1024 * 1024 + 10, 0x20);
    const chunked = Buffer.concat([Buffer.from(`${payload.length.toString(16)}\r\n`), payload, Buffer.from("\r\n0\r\n\r\n")]);
    const signature = `sha256=${createHmac("sha256", SECRET).update(payload).digest("hex")}`;
    const res = await rawRequest(h.broker.url, {
      method: "POST",
      path: "/admin/webhook",
      headers: { "x-hub-signature-256": signature, "x-github-event": "push", "transfer-encoding": "chunked" },
      body: chunked,
    });
    expect(res.status).toBe(413);
    expect(res.json?.description).toEqual(expect.any(String));
  });

  it("a signed push event still works", async () => {
    const payload = JSON.stringify({ ref: "refs/heads/main" });
    const signature = `sha256=${createHmac("sha256", SECRET).update(payload).digest("hex")}`;
    const res = await rawRequest(h.broker.url, {
      method: "POST",
      path: "/admin/webhook",
      headers: { "content-type": "application/json", "x-hub-signature-256": signature, "x-github-event": "push", "content-length": String(payload.length) },
      body: payload,
    });
    expect(res.status).toBe(202);
  });
});
