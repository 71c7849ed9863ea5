import { execFile } from "node:child_process";
import { readFile, rm } from "node:fs/promises";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeAll, afterAll, describe, expect, it } from "vitest";
import { createTempDir } from "../../test/support/git-fixtures.js";
import { createHttpServer, type HttpServerLimits } from "./http-server.js";

/**
 * The per-address connection bounds of the OSB server (ADR 0013, ADR 0028), on a real server on
 * 127.0.0.1:0 whose app holds every request until the test lets it go, so that a served
 * connection stays busy as long as the test needs. Clients connect from chosen loopback
 * addresses: 127.0.0.1 a direct client, 127.0.0.2 a trusted proxy.
 */

const LIMITS: HttpServerLimits = {
  headersTimeoutSeconds: 10,
  requestTimeoutSeconds: 30,
  idleTimeoutSeconds: 5,
  maxConnectionsPerClient: 2,
  trustedProxies: ["127.0.0.2/32"],
  maxConnectionsPerProxy: 4,
};

interface Reply {
  status: number | null;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The error when the connection closed without an answer. */
  error?: string;
}

interface Running {
  url: URL;
  /** Requests the app holds, in arrival order. */
  held: http.ServerResponse[];
  /** Resolves once the app holds `count` requests. */
  holding(count: number): Promise<void>;
  warnings: { obj: Record<string, unknown>; msg: string }[];
  close(): Promise<void>;
}

const servers: Running[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function start(limits: HttpServerLimits, tls?: { cert: Buffer; key: Buffer }): Promise<Running> {
  const held: http.ServerResponse[] = [];
  const waiters: (() => void)[] = [];
  const warnings: Running["warnings"] = [];
  const server = createHttpServer(
    (_req, res) => {
      held.push(res);
      for (const w of waiters.splice(0)) w();
    },
    limits,
    { ...(tls ? { tls } : {}), logger: { warn: (obj, msg) => warnings.push({ obj: obj as Record<string, unknown>, msg }) } },
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  const running: Running = {
    url: new URL(`${tls ? "https" : "http"}://127.0.0.1:${port}`),
    held,
    async holding(count) {
      while (held.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
    },
    warnings,
    async close() {
      for (const res of held) if (!res.writableEnded) res.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  servers.push(running);
  return running;
}

/** One GET on a connection of its own from `from`; resolves with the answer, or the error of a connection closed unanswered. */
function get(s: Running, from: string, options: { ca?: Buffer } = {}): Promise<Reply> {
  const client = s.url.protocol === "https:" ? https : http;
  return new Promise((resolve) => {
    const req = client.request(s.url, { localAddress: from, agent: false, ...(options.ca ? { ca: options.ca } : {}) }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? null, headers: res.headers, body }));
    });
    req.on("error", (error: NodeJS.ErrnoException) => resolve({ status: null, headers: {}, body: "", error: error.code ?? error.message }));
    req.end();
  });
}

/** A connection from `from` that sends nothing yet. */
async function idleSocket(s: Running, from: string): Promise<net.Socket> {
  const socket = net.connect({ host: "127.0.0.1", port: Number(s.url.port), localAddress: from });
  socket.on("error", () => undefined);
  await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  return socket;
}

/** Sends a GET on an open connection and resolves with what the server wrote before closing it. */
function requestOn(socket: net.Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (text += chunk));
    socket.once("close", () => resolve(text));
    socket.write("GET / HTTP/1.1\r\nhost: x\r\n\r\n");
  });
}

function expectOverBound(reply: Reply, description: RegExp): void {
  expect({ status: reply.status, retryAfter: reply.headers["retry-after"], connection: reply.headers.connection }).toEqual({ status: 503, retryAfter: "1", connection: "close" });
  expect(JSON.parse(reply.body)).toEqual({ description: expect.stringMatching(description) });
}

describe("connections per address", () => {
  it("a client address is served maxConnectionsPerClient connections; as many more are answered 503 with Retry-After; further ones are closed unanswered", async () => {
    const s = await start(LIMITS);
    const served = [get(s, "127.0.0.1"), get(s, "127.0.0.1")];
    await s.holding(2);

    expectOverBound(await get(s, "127.0.0.1"), /^too many connections from one address: 2 at most \(http\.maxConnectionsPerClient\)/);
    // Two connections past the bound, waiting for their request: the next one is closed at once.
    const waiting = [await idleSocket(s, "127.0.0.1"), await idleSocket(s, "127.0.0.1")];
    const closed = await get(s, "127.0.0.1");
    expect(closed.status).toBeNull();
    expect(closed.error).toMatch(/ECONNRESET|socket hang up/);
    // The waiting ones still get their answer.
    for (const socket of waiting) expect(await requestOn(socket)).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\n[^]*\r\nRetry-After: 1\r\n/i);
    expect(s.held).toHaveLength(2);

    // Once the client lets go it is served again.
    for (const res of s.held) res.end("done");
    expect((await Promise.all(served)).map((r) => [r.status, r.body])).toEqual([[200, "done"], [200, "done"]]);
    const again = get(s, "127.0.0.1");
    await s.holding(3);
    s.held[2]!.end("again");
    expect((await again).body).toBe("again");
    // Logged once for the address, not once per connection.
    expect(s.warnings).toEqual([{ obj: { client: "127.0.0.1", max: 2, key: "http.maxConnectionsPerClient" }, msg: expect.stringContaining("too many connections") }]);
  });

  it("a trusted proxy's address is bounded by maxConnectionsPerProxy instead, apart from the direct clients", async () => {
    const s = await start(LIMITS);
    const proxied = Array.from({ length: 4 }, () => get(s, "127.0.0.2"));
    await s.holding(4);
    expectOverBound(await get(s, "127.0.0.2"), /^too many connections from one address: 4 at most \(http\.maxConnectionsPerProxy\)/);
    // A direct client's bound is its own: the proxy's connections do not count against it.
    const direct = [get(s, "127.0.0.1"), get(s, "127.0.0.1")];
    await s.holding(6);
    expectOverBound(await get(s, "127.0.0.1"), /\(http\.maxConnectionsPerClient\)/);
    for (const res of s.held) res.end();
    expect((await Promise.all([...proxied, ...direct])).map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(s.warnings.map((w) => w.obj)).toEqual([
      { client: "127.0.0.2", max: 4, key: "http.maxConnectionsPerProxy" },
      { client: "127.0.0.1", max: 2, key: "http.maxConnectionsPerClient" },
    ]);
  });

  it("0 lifts a bound: a trusted proxy with maxConnectionsPerProxy 0 is not bounded, the direct clients still are", async () => {
    const s = await start({ ...LIMITS, maxConnectionsPerProxy: 0 });
    const proxied = Array.from({ length: 12 }, () => get(s, "127.0.0.2"));
    await s.holding(12);
    const direct = [get(s, "127.0.0.1"), get(s, "127.0.0.1")];
    await s.holding(14);
    expectOverBound(await get(s, "127.0.0.1"), /maxConnectionsPerClient/);
    for (const res of s.held) res.end();
    expect(new Set((await Promise.all([...proxied, ...direct])).map((r) => r.status))).toEqual(new Set([200]));
  });

  describe("over TLS", () => {
    let dir: string;
    let tls: { cert: Buffer; key: Buffer };
    beforeAll(async () => {
      dir = await createTempDir("gitops-broker-http-tls-");
      await promisify(execFile)(
        "openssl",
        ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", "key.pem", "-out", "cert.pem"],
        { cwd: dir },
      );
      tls = { cert: await readFile(path.join(dir, "cert.pem")), key: await readFile(path.join(dir, "key.pem")) };
    });
    afterAll(async () => {
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it("the connection past the bound is answered 503 after its handshake, as over plain HTTP", async () => {
      const s = await start({ ...LIMITS, maxConnectionsPerClient: 1 }, tls);
      const served = get(s, "127.0.0.1", { ca: tls.cert });
      await s.holding(1);
      expectOverBound(await get(s, "127.0.0.1", { ca: tls.cert }), /\(http\.maxConnectionsPerClient\)/);
      s.held[0]!.end("tls");
      expect((await served).body).toBe("tls");
    });
  });
});
