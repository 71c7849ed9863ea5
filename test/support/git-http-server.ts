/**
 * A real Git smart-HTTP remote for tests: `node:http` on 127.0.0.1 (port 0) serving git's own
 * upload-pack and receive-pack over the bare repositories below `root`, as git-http-backend
 * serves them (`serveGit`).
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
 * And a remote slow to answer: `hold()` keeps every request that arrives unanswered until the
 * function it returns is called (a push then waits, as it would for a busy hosted remote).
 *
 * `requests` records every request (method, path, status), e.g. to count pushes:
 * `server.requests.filter((r) => r.path.endsWith("/git-receive-pack")).length`.
 *
 * Pushing is enabled (as http-backend enables it for an authenticated user; `createBareRemote`
 * also sets `http.receivepack true`). The services run with the global and system git config
 * ignored, so tests do not depend on the machine's ~/.gitconfig.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { createGunzip } from "node:zlib";

export interface GitHttpServerOptions {
  /** Directory holding the bare repositories: `<root>/<name>` is served as `/<name>`. */
  root: string;
  /** Each request is answered this much later: a hosted remote's round trip, for benchmarks (default 0). */
  latencyMs?: number;
}

export interface RecordedRequest {
  method: string;
  /** URL path without the query, e.g. `/gitops.git/git-receive-pack`. */
  path: string;
  status: number;
  /** Content-Encoding of the request body (git gzips large fetch negotiations). */
  contentEncoding: string | undefined;
  /** performance.now() when the request arrived (before any `latencyMs`). */
  at: number;
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
  /** Requests from now on wait, unanswered, until the returned function is called; then they are served in order. */
  hold(): () => void;
  /** Every request answered so far, in order. */
  readonly requests: readonly RecordedRequest[];
  /** Shut down for good. */
  close(): Promise<void>;
}

export async function startGitHttpServer(options: GitHttpServerOptions): Promise<GitHttpServer> {
  const root = path.resolve(options.root);
  const requests: RecordedRequest[] = [];
  let available = true;
  // Requests waiting while the server is held, each to be served on release.
  let held: (() => void)[] | undefined;

  const server = http.createServer((req, res) => {
    const at = performance.now();
    if (held) held.push(() => serve(req, res, at));
    else serve(req, res, at);
  });
  const serve = (req: http.IncomingMessage, res: http.ServerResponse, at: number): void => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const record = (status: number): void => {
      const contentEncoding = req.headers["content-encoding"];
      requests.push({ method: req.method ?? "", path: url.pathname, status, contentEncoding, at });
    };
    if (!available) {
      record(503);
      res.writeHead(503, { "content-type": "text/plain" }).end("unavailable\n");
      return;
    }
    if (options.latencyMs) setTimeout(() => serveGit(root, req, res, url, record), options.latencyMs);
    else serveGit(root, req, res, url, record);
  };

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
    hold() {
      const waiting = (held ??= []);
      return () => {
        if (held === waiting) held = undefined;
        for (const go of waiting.splice(0)) go();
      };
    },
    requests,
    close: stop,
  };
}

/** What git-http-backend sets for the services it runs (http-backend.c): the rest is the environment's. */
function serviceEnv(req: http.IncomingMessage): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    // No `git gc --auto` after every push (hosted remotes do not run it either): one process
    // fewer per push, and the tests' remotes never come near gc.auto's loose-object threshold.
    GIT_CONFIG_COUNT: "1",
    GIT_CONFIG_KEY_0: "receive.autogc",
    GIT_CONFIG_VALUE_0: "false",
    // The pusher, as http-backend names it for receive-pack's reflog entries.
    GIT_COMMITTER_NAME: "test",
    GIT_COMMITTER_EMAIL: `test@http.${req.socket.remoteAddress ?? "127.0.0.1"}`,
  };
  // Protocol v2 is negotiated through this header.
  const gitProtocol = req.headers["git-protocol"];
  if (typeof gitProtocol === "string") env.GIT_PROTOCOL = gitProtocol;
  return env;
}

/** One pkt-line: four hex digits of length (including themselves), then the payload. */
function pktLine(payload: string): string {
  return (payload.length + 4).toString(16).padStart(4, "0") + payload;
}

/**
 * Serves one smart-HTTP request (gitprotocol-http) the way git-http-backend does, but runs
 * git's service (upload-pack, receive-pack) directly instead of through http-backend, which would
 * run it as a child of its own: one process fewer per request, about two per fetch or push.
 * Hosted Git servers are built the same way: their own HTTP front, git's services behind it.
 *
 * - `GET <repo>/info/refs?service=git-<service>`: the ref advertisement
 *   (`<service> --stateless-rpc --advertise-refs`), after a `# service=` line unless the client
 *   asked for protocol v2;
 * - `POST <repo>/git-<service>`: the body (inflated when gzip-compressed) to
 *   `<service> --stateless-rpc`, its output as the answer.
 * Anything else (a repository that does not exist, a path outside the root, dumb HTTP) is 404,
 * like http-backend's "Not Found"; pushes are enabled as http-backend enables them for an
 * authenticated user.
 */
function serveGit(root: string, req: http.IncomingMessage, res: http.ServerResponse, url: URL, record: (status: number) => void): void {
  const notFound = (): void => {
    record(404);
    res.writeHead(404, { "content-type": "text/plain", "cache-control": "no-cache" }).end("Not Found\n");
  };
  const route = /^(\/.+)\/(?:info\/refs|git-(upload-pack|receive-pack))$/.exec(decodeURIComponent(url.pathname));
  const advertise = route !== null && route[2] === undefined;
  const service = advertise ? /^git-(upload-pack|receive-pack)$/.exec(url.searchParams.get("service") ?? "")?.[1] : route?.[2];
  const repo = route === null ? undefined : path.join(root, path.normalize(route[1]!));
  const served =
    route !== null &&
    service !== undefined &&
    repo !== undefined &&
    repo.startsWith(root + path.sep) &&
    req.method === (advertise ? "GET" : "POST") &&
    existsSync(path.join(repo, "HEAD")) &&
    existsSync(path.join(repo, "objects"));
  if (!served) {
    notFound();
    return;
  }

  const env = serviceEnv(req);
  const args = advertise ? [service, "--stateless-rpc", "--advertise-refs", "."] : [service, "--stateless-rpc", "."];
  // The service's own stderr is the server's log (http-backend's too); what the client must see
  // (hook output, refusals) travels in the protocol's side band.
  const child = spawn("git", args, { cwd: repo, env, stdio: ["pipe", "pipe", "ignore"] });
  child.stdin.on("error", () => {
    // The service may exit before reading the whole request (e.g. it refused it).
  });
  res.on("close", () => {
    if (child.exitCode === null) child.kill();
  });
  // git cannot be run: the connection breaks, as when http-backend's child dies.
  child.on("error", (error) => res.destroy(error));

  // Headers first, as http-backend sends them before it runs the service.
  record(200);
  res.writeHead(200, {
    "content-type": `application/x-git-${service}-${advertise ? "advertisement" : "result"}`,
    expires: "Fri, 01 Jan 1980 00:00:00 GMT",
    pragma: "no-cache",
    "cache-control": "no-cache, max-age=0, must-revalidate",
  });
  if (advertise && !/version=2/.test(env.GIT_PROTOCOL ?? "")) res.write(`${pktLine(`# service=git-${service}\n`)}0000`);
  if (advertise) child.stdin.end();
  else {
    // git sends large request bodies gzip-compressed; http-backend inflates them.
    const body = req.headers["content-encoding"] === "gzip" ? req.pipe(createGunzip()) : req;
    body.on("error", () => child.kill());
    body.pipe(child.stdin);
  }
  child.stdout.pipe(res, { end: false });
  child.on("close", () => res.end());
}
