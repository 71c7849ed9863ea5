/**
 * The load generator: `clients` concurrent OSB clients, each sending provision after provision
 * (a new instance id each) over keep-alive HTTP, for a fixed time or a fixed number of operations.
 * Only acknowledged (2xx) provisions count; their latency is measured from send to full reply.
 */
import http from "node:http";

export interface LoadOptions {
  url: string;
  credentials: { username: string; password: string };
  /** Provision request body (service, plan, org, space). */
  body: Record<string, unknown>;
  clients: number;
  /** Stop sending after this many operations... */
  maxOps: number;
  /** ...or after this long, whichever comes first (in-flight requests are still awaited). */
  maxMs: number;
  /** Instance ids are `<idPrefix>-<n>`. */
  idPrefix: string;
}

export interface LoadResult {
  clients: number;
  acked: number;
  /** Non-2xx answers by status. */
  failed: Record<number, number>;
  elapsedMs: number;
  /** Latencies of acknowledged operations, ms, ascending. */
  latencies: number[];
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.clients });
  const target = new URL(options.url);
  const auth = `Basic ${Buffer.from(`${options.credentials.username}:${options.credentials.password}`).toString("base64")}`;
  const payload = JSON.stringify(options.body);
  const latencies: number[] = [];
  const failed: Record<number, number> = {};
  let next = 0;
  const started = performance.now();
  const deadline = started + options.maxMs;

  const provision = (id: string): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = http.request(
        {
          agent,
          host: target.hostname,
          port: target.port,
          method: "PUT",
          path: `/v2/service_instances/${encodeURIComponent(id)}?accepts_incomplete=true`,
          headers: {
            authorization: auth,
            "x-broker-api-version": "2.17",
            "content-type": "application/json",
            "content-length": Buffer.byteLength(payload),
          },
        },
        (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode ?? 0));
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(payload);
    });

  const client = async (): Promise<void> => {
    while (next < options.maxOps && performance.now() < deadline) {
      const n = next++;
      const sent = performance.now();
      const status = await provision(`${options.idPrefix}-${n}`);
      if (status >= 200 && status < 300) latencies.push(performance.now() - sent);
      else failed[status] = (failed[status] ?? 0) + 1;
    }
  };
  try {
    await Promise.all(Array.from({ length: options.clients }, client));
  } finally {
    agent.destroy();
  }
  return {
    clients: options.clients,
    acked: latencies.length,
    failed,
    elapsedMs: performance.now() - started,
    latencies: latencies.sort((a, b) => a - b),
  };
}

/** The q-quantile (0..1) of ascending values (nearest rank); NaN for none. */
/** The middle value; of an even count, the mean of the two middle ones. */
export function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
