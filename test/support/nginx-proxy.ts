/**
 * nginx (Debian's package, which `npm test` installs as root: scripts/test-prerequisites.mjs) in front of a test server, configured as the
 * Kubernetes ingress-nginx controller proxies to a Service's endpoints: HTTP/1.1 to the upstream
 * with a pool of keep-alive connections (320 idle at most, 10,000 requests each), one
 * upstream connection per request in flight, no response buffering, `proxy_next_upstream error
 * timeout`. One difference: ingress-nginx gives up on an upstream's answer after 60 s
 * (`proxy-read-timeout`); here it waits as long as a test waits for an event (EVENT_CEILING_MS), since
 * a machine loaded ten times over takes longer than 60 s to acknowledge 300 provisions at once, and
 * the tests are about the broker's answers, not a platform's patience. Its upstream connections leave from `sourceAddress` (a loopback address of its own), so
 * that the broker tells them from direct clients as it tells an ingress controller's pod apart.
 * A second difference: pooled connections are kept 4 s, not ingress-nginx's 60 s, below the
 * broker's idle timeout (http.idleTimeoutSeconds, 5 s), as ADR 0028 asks of a proxy in front:
 * otherwise nginx may reuse a connection as the broker closes it (a reset, seen under load).
 *
 *   const proxy = await startNginxProxy({ upstream: broker.url, sourceAddress: "127.0.0.2" });
 *   fetch(`${proxy.url}/v2/catalog`) ... await proxy.close();
 */
import { access, writeFile } from "node:fs/promises";
import path from "node:path";
import { EVENT_CEILING_MS, freePort, startProcess, trackedTempDir, waitUntil, type TrackedProcess } from "./processes.js";

export interface NginxProxy {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  /** Everything nginx wrote to its error log (stderr) so far. */
  errorLog(): string;
  close(): Promise<void>;
}

export interface NginxProxyOptions {
  /** The server behind the proxy, http://127.0.0.1:<port>. */
  upstream: string;
  /** The local address nginx connects to the upstream from (`proxy_bind`), e.g. 127.0.0.2. */
  sourceAddress: string;
}

/** nginx from PATH or Debian's /usr/sbin; a test that needs it fails without it, it is never skipped. */
async function nginxBinary(): Promise<string> {
  for (const dir of [...(process.env.PATH ?? "").split(path.delimiter), "/usr/sbin"]) {
    const file = path.join(dir, "nginx");
    try {
      await access(file);
      return file;
    } catch {
      // not there
    }
  }
  throw new Error("nginx is not installed: `npm test` installs Debian's package when it runs as root (else: sudo apt-get install nginx)");
}

function config(dir: string, port: number, upstream: URL, sourceAddress: string): string {
  // As root, nginx would run its worker as nobody, which cannot enter the test's private directory.
  const user = process.getuid?.() === 0 ? "user root;\n" : "";
  return `${user}daemon off;
master_process on;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log stderr warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream broker {
    server ${upstream.host};
    keepalive 320;
    keepalive_requests 10000;
    keepalive_timeout 4s;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://broker;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_bind ${sourceAddress};
      proxy_connect_timeout 5s;
      proxy_send_timeout ${EVENT_CEILING_MS / 1000}s;
      proxy_read_timeout ${EVENT_CEILING_MS / 1000}s;
      proxy_buffering off;
      proxy_request_buffering on;
      proxy_next_upstream error timeout;
      proxy_next_upstream_tries 3;
    }
  }
}
`;
}

export async function startNginxProxy({ upstream, sourceAddress }: NginxProxyOptions): Promise<NginxProxy> {
  const binary = await nginxBinary();
  const dir = await trackedTempDir("nginx-");
  const file = path.join(dir, "nginx.conf");
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    await writeFile(file, config(dir, port, new URL(upstream), sourceAddress));
    const nginx: TrackedProcess = startProcess(binary, ["-p", dir, "-c", file, "-e", "stderr"], { keepOutput: false });
    const url = `http://127.0.0.1:${port}`;
    const answers = async () => {
      try {
        return (await fetch(`${url}/healthz`)).status === 200;
      } catch {
        return false;
      }
    };
    const outcome = await Promise.race([
      waitUntil(answers, "nginx in front of the broker answers /healthz", { intervalMs: 50 }).then(() => "ready" as const),
      nginx.exited.then(() => "exited" as const),
    ]);
    if (outcome === "ready") {
      return {
        url,
        errorLog: () => nginx.stderr(),
        async close() {
          await nginx.killGroup();
        },
      };
    }
    if (attempt >= 3 || !/Address already in use/i.test(nginx.stderr())) throw new Error(`nginx exited before it answered: ${nginx.stderr().slice(-2000)}`);
  }
}
