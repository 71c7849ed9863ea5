/**
 * HTTP/1.1 over a plain TCP socket, for requests a well-behaved client cannot send: malformed
 * paths, lying Content-Length, a body trickled byte by byte, corrupt compressed bodies.
 *
 *   const res = await rawRequest(url, { method: "PUT", path: "/v2/service_instances/%ff", headers, body });
 *   res.status, res.json, res.closedMs
 */
import net from "node:net";

export interface RawResponse {
  /** null when the server closed without a status line. */
  status: number | null;
  headers: Record<string, string>;
  text: string;
  /** The body parsed as JSON, or undefined. */
  json: Record<string, unknown> | undefined;
  /** Milliseconds from connecting to the server closing the connection (or to the response when it kept it open). */
  ms: number;
}

export interface RawRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  /** Sent at once after the headers. */
  body?: Buffer | string;
  /** Sent after `body`, one chunk every `trickleMs` until the server answers or closes. */
  trickle?: { chunk: string; everyMs: number };
  /** Add `Connection: close` (default true): the server closes after answering. */
  close?: boolean;
}

/** Sends one request and resolves once the server answered and closed (or answered with Connection: close). */
export function rawRequest(baseUrl: string, req: RawRequest): Promise<RawResponse> {
  const url = new URL(baseUrl);
  const started = performance.now();
  return new Promise<RawResponse>((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    const chunks: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    socket.on("data", (d: Buffer) => chunks.push(d));
    socket.on("error", (e: NodeJS.ErrnoException) => {
      // A reset after the answer is the server closing; anything else before it is a failure.
      if (e.code !== "ECONNRESET" && e.code !== "EPIPE") reject(e);
    });
    socket.on("close", () => {
      clearInterval(timer);
      resolve(parse(Buffer.concat(chunks), performance.now() - started));
    });
    socket.on("connect", () => {
      const headers: Record<string, string> = { host: url.host, ...req.headers };
      if (req.close !== false) headers.connection = "close";
      const head = `${req.method} ${req.path} HTTP/1.1\r\n${Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join("")}\r\n`;
      socket.write(head);
      if (req.body !== undefined) socket.write(req.body);
      if (req.trickle) {
        const { chunk, everyMs } = req.trickle;
        timer = setInterval(() => {
          if (!socket.destroyed && socket.writable) socket.write(chunk);
        }, everyMs);
      }
    });
  });
}

function parse(raw: Buffer, ms: number): RawResponse {
  const text = raw.toString("utf8");
  const end = text.indexOf("\r\n\r\n");
  const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
  if (!m || end < 0) return { status: null, headers: {}, text, json: undefined, ms };
  const headers: Record<string, string> = {};
  for (const line of text.slice(0, end).split("\r\n").slice(1)) {
    const i = line.indexOf(":");
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  let body = text.slice(end + 4);
  if (headers["transfer-encoding"] === "chunked") body = dechunk(body);
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(body) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { status: Number(m[1]), headers, text: body, json, ms };
}

function dechunk(body: string): string {
  let out = "";
  let rest = body;
  for (;;) {
    const nl = rest.indexOf("\r\n");
    if (nl < 0) return out;
    const size = parseInt(rest.slice(0, nl), 16);
    if (!size) return out;
    out += rest.slice(nl + 2, nl + 2 + size);
    rest = rest.slice(nl + 2 + size + 2);
  }
}

/** Opens a TCP connection and resolves once it is connected; `closed` resolves when the server closes it. */
export async function openSocket(baseUrl: string): Promise<{ socket: net.Socket; closed: Promise<void> }> {
  const url = new URL(baseUrl);
  const socket = net.connect(Number(url.port), url.hostname);
  socket.on("error", () => undefined);
  // Consume what the server sends: an unread socket never sees the server's close.
  socket.resume();
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  return { socket, closed };
}
