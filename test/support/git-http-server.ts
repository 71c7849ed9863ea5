/**
 * A real Git smart-HTTP remote for tests: `node:http` on 127.0.0.1 (port 0) running
 * `git http-backend` as a CGI program over the bare repositories below `root`.
 *
 *   const server = await startGitHttpServer({ root });
 *   const bare = await createBareRemote(root, "gitops.git", { "README.md": "hi\n" });
 *   const url = server.url("gitops.git");          // http://127.0.0.1:<port>/gitops.git
 *   ...
 *   await server.close();
 *
 * Two kinds of outage, both as a real client sees them:
 * - `stop()` closes the listener and drops open connections: git fails with
 *   "Failed to connect ... Connection refused". `start()` listens again on the same port.
 * - `setAvailable(false)` keeps the server up but answers every request 503: git fails with
 *   "The requested URL returned error: 503".
 *
 * `requests` records every request (method, path, status), e.g. to count pushes:
 * `server.requests.filter((r) => r.path.endsWith("/git-receive-pack")).length`.
 *
 * Pushing is enabled by REMOTE_USER (and `createBareRemote` also sets `http.receivepack true`).
 * The backend runs with the global and system git config ignored, so tests do not depend on
 * the machine's ~/.gitconfig.
 */
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { promisify } from "node:util";

export interface GitHttpServerOptions {
  /** Directory holding the bare repositories (GIT_PROJECT_ROOT). */
  root: string;
}

export interface RecordedRequest {
  method: string;
  /** URL path without the query, e.g. `/gitops.git/git-receive-pack`. */
  path: string;
  status: number;
  /** Content-Encoding of the request body (git gzips large fetch negotiations). */
  contentEncoding: string | undefined;
}

export interface GitHttpServer {
  readonly port: number;
  /** Clone URL of `<root>/<repoName>`. */
  url(repoName: string): string;
  /** Outage: stop listening and drop open connections (clients get "connection refused"). */
  stop(): Promise<void>;
  /** End an outage started by `stop()`: listen again on the same port. */
  start(): Promise<void>;
  /** false: answer every request with 503 until set back to true. */
  setAvailable(available: boolean): void;
  /** Every request answered so far, in order. */
  readonly requests: readonly RecordedRequest[];
  /** Shut down for good. */
  close(): Promise<void>;
}

const execFileAsync = promisify(execFile);

/** Where git keeps git-http-backend: asked once per process (servers start in most test files). */
let httpBackend: Promise<string> | undefined;

function findHttpBackend(): Promise<string> {
  httpBackend ??= execFileAsync("git", ["--exec-path"]).then(({ stdout }) => path.join(stdout.trim(), "git-http-backend"));
  return httpBackend;
}

export async function startGitHttpServer(options: GitHttpServerOptions): Promise<GitHttpServer> {
  const root = path.resolve(options.root);
  const backend = await findHttpBackend();
  const requests: RecordedRequest[] = [];
  let available = true;

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const record = (status: number): void => {
      const contentEncoding = req.headers["content-encoding"];
      requests.push({ method: req.method ?? "", path: url.pathname, status, contentEncoding });
    };
    if (!available) {
      record(503);
      res.writeHead(503, { "content-type": "text/plain" }).end("unavailable\n");
      return;
    }
    runBackend(backend, root, req, res, url, record);
  });

  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as AddressInfo).port;
  let listening = true;

  const stop = async (): Promise<void> => {
    if (!listening) return;
    listening = false;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  };

  return {
    port,
    url: (repoName) => `http://127.0.0.1:${port}/${repoName}`,
    stop,
    async start() {
      if (listening) return;
      server.listen(port, "127.0.0.1");
      await once(server, "listening");
      listening = true;
    },
    setAvailable(value) {
      available = value;
    },
    requests,
    close: stop,
  };
}

/** Runs one request through git-http-backend (CGI/1.1: env in, body on stdin, headers + body out). */
function runBackend(
  backend: string,
  root: string,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  url: URL,
  record: (status: number) => void,
): void {
  const header = (name: string): string | undefined => {
    const value = req.headers[name];
    return Array.isArray(value) ? value.join(", ") : value;
  };
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    // No `git gc --auto` after every push (hosted remotes do not run it either): one process
    // fewer per push, and the tests' remotes never come near gc.auto's loose-object threshold.
    GIT_CONFIG_COUNT: "1",
    GIT_CONFIG_KEY_0: "receive.autogc",
    GIT_CONFIG_VALUE_0: "false",
    GIT_PROJECT_ROOT: root,
    GIT_HTTP_EXPORT_ALL: "1",
    REMOTE_USER: "test",
    REMOTE_ADDR: req.socket.remoteAddress ?? "127.0.0.1",
    REQUEST_METHOD: req.method ?? "GET",
    PATH_INFO: decodeURIComponent(url.pathname),
    QUERY_STRING: url.search.slice(1),
    CONTENT_TYPE: header("content-type") ?? "",
  };
  // Without CONTENT_LENGTH (chunked uploads of large pushes) the backend reads to EOF.
  const contentLength = header("content-length");
  if (contentLength !== undefined) env.CONTENT_LENGTH = contentLength;
  // git sends large request bodies gzip-compressed; the backend inflates them itself.
  const contentEncoding = header("content-encoding");
  if (contentEncoding !== undefined) env.HTTP_CONTENT_ENCODING = contentEncoding;
  // Protocol v2 is negotiated through this header.
  const gitProtocol = header("git-protocol");
  if (gitProtocol !== undefined) env.GIT_PROTOCOL = gitProtocol;

  const child = spawn(backend, [], { env, stdio: ["pipe", "pipe", "pipe"] });
  const stderr: Buffer[] = [];
  child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));
  req.pipe(child.stdin);
  child.stdin.on("error", () => {
    // The backend may exit before reading the whole body (e.g. it refused the request).
  });
  res.on("close", () => {
    if (child.exitCode === null) child.kill();
  });
  child.on("error", (error) => {
    record(500);
    if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
    res.end(`cannot run git-http-backend: ${error.message}\n`);
  });

  let head = Buffer.alloc(0);
  let headersDone = false;
  child.stdout.on("data", (chunk: Buffer) => {
    if (headersDone) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const parsed = parseCgiHead(head);
    if (parsed === null) return;
    headersDone = true;
    record(parsed.status);
    res.writeHead(parsed.status, parsed.headers);
    if (parsed.rest.length > 0) res.write(parsed.rest);
  });
  child.on("close", (code) => {
    if (!headersDone) {
      record(500);
      res.writeHead(500, { "content-type": "text/plain" });
      res.end(`git-http-backend exited with ${String(code)}: ${Buffer.concat(stderr).toString()}`);
      return;
    }
    res.end();
  });
}

interface CgiHead {
  status: number;
  headers: Record<string, string>;
  rest: Buffer;
}

/** Splits CGI output into status, headers and the start of the body; null until the blank line arrived. */
function parseCgiHead(buffer: Buffer): CgiHead | null {
  const crlf = buffer.indexOf("\r\n\r\n");
  const lf = buffer.indexOf("\n\n");
  let end: number;
  let separator: number;
  if (crlf !== -1 && (lf === -1 || crlf < lf)) {
    end = crlf;
    separator = 4;
  } else if (lf !== -1) {
    end = lf;
    separator = 2;
  } else {
    return null;
  }
  const headers: Record<string, string> = {};
  let status = 200;
  for (const line of buffer.subarray(0, end).toString("latin1").split(/\r?\n/)) {
    const colon = line.indexOf(":");
    if (colon === -1) continue;
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (name.toLowerCase() === "status") status = Number.parseInt(value, 10);
    else headers[name] = value;
  }
  return { status, headers, rest: buffer.subarray(end + separator) };
}
