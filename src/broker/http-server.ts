import http, { STATUS_CODES } from "node:http";
import https from "node:https";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { RequestListener } from "node:http";

/** Socket bounds of the OSB server (config `http.*`, ADR 0013). */
export interface HttpServerLimits {
  headersTimeoutSeconds: number;
  requestTimeoutSeconds: number;
  idleTimeoutSeconds: number;
  /** 0: no bound. */
  maxConnectionsPerClient: number;
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
 * client address holds at most `maxConnectionsPerClient` connections. Answering is not bounded
 * here: a request waits for its push as long as `git.pushTimeoutSeconds` says.
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
  const tls = options.tls;
  // With a client CA, every client is asked for a certificate; the handshake completes without
  // one or with one that fails verification, so that the app answers 401 with the OSB error
  // body (brokerAuth) instead of a closed connection.
  const server = tls
    ? https.createServer(
        { ...serverOptions, cert: tls.cert, key: tls.key, ...(tls.clientCa ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: false } : {}) },
        app,
      )
    : http.createServer(serverOptions, app);
  if (limits.maxConnectionsPerClient > 0) boundConnectionsPerClient(server, limits.maxConnectionsPerClient, options.logger);
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

function boundConnectionsPerClient(server: http.Server, max: number, logger: HttpServerLogger): void {
  const open = new Map<string, number>();
  let warned = new Set<string>();
  // Log each refused address once per minute at most, not once per connection.
  const forget = setInterval(() => (warned = new Set()), 60_000).unref();
  server.once("close", () => clearInterval(forget));
  server.on("connection", (socket: Socket) => {
    const address = socket.remoteAddress ?? "unknown";
    const count = open.get(address) ?? 0;
    if (count >= max) {
      if (!warned.has(address)) {
        warned.add(address);
        logger.warn({ client: address, max }, "too many connections from one client address: closing the new ones");
      }
      socket.destroy();
      return;
    }
    open.set(address, count + 1);
    socket.once("close", () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}
