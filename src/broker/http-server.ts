import http, { STATUS_CODES } from "node:http";
import https from "node:https";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { RequestListener, ServerResponse } from "node:http";
import { addressMatcher } from "../config/index.js";
import { ServiceUnavailableError, toOsbBody } from "../errors/index.js";

/** Socket bounds of the OSB server (config `http.*`, ADR 0013, ADR 0028). */
export interface HttpServerLimits {
  headersTimeoutSeconds: number;
  requestTimeoutSeconds: number;
  idleTimeoutSeconds: number;
  /** 0: no bound. */
  maxConnectionsPerClient: number;
  /** Addresses and CIDR blocks of the proxies in front: bounded by `maxConnectionsPerProxy` instead. */
  trustedProxies: readonly string[];
  /** 0: no bound. */
  maxConnectionsPerProxy: number;
}

export interface HttpServerLogger {
  warn(obj: object, msg: string): void;
}

/** How often Node checks the headers and request timeouts (its default, 30 s, would add up to 30 s to both). */
const CHECK_INTERVAL_MS = 1_000;

/**
 * The OSB server with bounded sockets: a client that sends its headers or its body too slowly
 * (or announces more body than it sends) is answered 408 and disconnected once the headers or
 * request timeout passes; an idle keep-alive connection is closed after the idle timeout; one
 * client address is served at most `maxConnectionsPerClient` connections at once (the address of
 * a trusted proxy `maxConnectionsPerProxy`). Answering is not bounded here: a request waits for
 * its push as long as `git.pushTimeoutSeconds` says.
 */
export function createHttpServer(
  app: RequestListener,
  limits: HttpServerLimits,
  options: { tls?: { cert: Buffer; key: Buffer; clientCa?: Buffer }; logger: HttpServerLogger },
): http.Server {
  const serverOptions: http.ServerOptions = {
    headersTimeout: limits.headersTimeoutSeconds * 1000,
    requestTimeout: limits.requestTimeoutSeconds * 1000,
    keepAliveTimeout: limits.idleTimeoutSeconds * 1000,
    connectionsCheckingInterval: CHECK_INTERVAL_MS,
  };
  // Connections past their address's bound, by connectionKey: their request is answered 503.
  const overBound = new Map<string, Bound>();
  const listener: RequestListener = (req, res) => {
    const bound = overBound.size > 0 ? overBound.get(connectionKey(req.socket)) : undefined;
    if (bound) answerOverBound(res, bound);
    else app(req, res);
  };
  const tls = options.tls;
  // With a client CA, every client is asked for a certificate; the handshake completes without
  // one or with one that fails verification, so that the app answers 401 with the OSB error
  // body (brokerAuth) instead of a closed connection.
  const server = tls
    ? https.createServer(
        { ...serverOptions, cert: tls.cert, key: tls.key, ...(tls.clientCa ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: false } : {}) },
        listener,
      )
    : http.createServer(serverOptions, listener);
  boundConnectionsPerAddress(server, limits, overBound, options.logger);
  server.on("clientError", answerClientError);
  return server;
}

/**
 * What Node's HTTP parser refuses before the app sees a request (a malformed request line or
 * header, headers too large, a request not received within its timeout) gets the OSB error body
 * too, then the connection is closed.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code === "ECONNRESET" || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, description] =
    error.code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? [408, "the request was not received within the timeout (http.headersTimeoutSeconds, http.requestTimeoutSeconds)"]
      : error.code === "HPE_HEADER_OVERFLOW"
        ? [431, "the request headers are too large"]
        : [400, `malformed HTTP request (${error.code ?? "parse error"})`];
  const body = JSON.stringify({ description });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Connection: close\r\n\r\n${body}`,
  );
}

/** The bound an address's connections meet: its config key, for the log and the answer, and its value. */
interface Bound {
  key: "http.maxConnectionsPerClient" | "http.maxConnectionsPerProxy";
  max: number;
}

/** One open connection: its peer's address and port (the same on a TLS socket as on the TCP socket below it). */
function connectionKey(socket: Socket): string {
  return `${socket.remoteAddress ?? "unknown"} ${socket.remotePort ?? ""}`;
}

/**
 * Counts the open connections of every address (ADR 0028). Up to `max` of them are served. The
 * next `max` are marked in `overBound`: their first request is answered 503 with Retry-After
 * and the connection closed, an answer a client and a proxy in front can act on, where a reset
 * is a failed request. Any further ones are destroyed on arrival, so that one address never holds
 * more than twice its bound. A trusted proxy's address has its own, larger bound: every client
 * behind the proxy shares it, and the proxy opens one connection per request in flight.
 */
function boundConnectionsPerAddress(server: http.Server, limits: HttpServerLimits, overBound: Map<string, Bound>, logger: HttpServerLogger): void {
  const client: Bound = { key: "http.maxConnectionsPerClient", max: limits.maxConnectionsPerClient };
  const proxy: Bound = { key: "http.maxConnectionsPerProxy", max: limits.maxConnectionsPerProxy };
  if (client.max === 0 && (proxy.max === 0 || limits.trustedProxies.length === 0)) return;
  const isProxy = addressMatcher(limits.trustedProxies);
  const open = new Map<string, { served: number; overBound: number }>();
  let warned = new Set<string>();
  // Log each address past its bound once per minute at most, not once per connection.
  const forget = setInterval(() => (warned = new Set()), 60_000).unref();
  server.once("close", () => clearInterval(forget));
  server.on("connection", (socket: Socket) => {
    const address = socket.remoteAddress ?? "unknown";
    const bound = isProxy(socket.remoteAddress) ? proxy : client;
    if (bound.max === 0) return;
    let count = open.get(address);
    if (count === undefined) open.set(address, (count = { served: 0, overBound: 0 }));
    const counted = count;
    const release = (field: "served" | "overBound") => {
      counted[field]--;
      if (counted.served === 0 && counted.overBound === 0) open.delete(address);
    };
    if (counted.served < bound.max) {
      counted.served++;
      socket.once("close", () => release("served"));
      return;
    }
    if (!warned.has(address)) {
      warned.add(address);
      logger.warn({ client: address, max: bound.max, key: bound.key }, "too many connections from one address: answering 503, then closing the new ones at once");
    }
    if (counted.overBound >= bound.max) {
      socket.destroy();
      return;
    }
    counted.overBound++;
    const key = connectionKey(socket);
    overBound.set(key, bound);
    socket.once("close", () => {
      overBound.delete(key);
      release("overBound");
    });
  });
}

/** 503 with Retry-After and the OSB error body; the connection is closed after it. */
function answerOverBound(res: ServerResponse, { key, max }: Bound): void {
  const error = new ServiceUnavailableError(`too many connections from one address: ${max} at most (${key}); retry, with fewer requests at once`, { retryAfter: 1 });
  const body = JSON.stringify(toOsbBody(error));
  res.writeHead(error.status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    "retry-after": String(error.retryAfter),
    connection: "close",
  });
  res.end(body);
}
