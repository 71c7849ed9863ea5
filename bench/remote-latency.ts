/**
 * A hosted Git remote's latency, for the benchmarks that serve their remote on loopback
 * (test/support/git-http-server.ts, option `latencyMs`): every smart-HTTP request is answered
 * this much later. A push is two requests or more (the ref advertisement, then the pack), so it
 * waits at least twice; a fetch too.
 *
 * `REMOTE_LATENCY_MS` in the environment sets it; the hosted value the figures use is
 * HOSTED_LATENCY_MS. 0 is loopback, where the machine's CPU, not the remote, limits the pushes.
 */
export const HOSTED_LATENCY_MS = 150;

/** `REMOTE_LATENCY_MS` of the environment, else `fallback`. */
export function remoteLatencyMs(fallback: number): number {
  const value = process.env.REMOTE_LATENCY_MS;
  if (value === undefined || value === "") return fallback;
  const ms = Number(value);
  if (!Number.isFinite(ms) || ms < 0) throw new Error(`REMOTE_LATENCY_MS=${value}: a number of milliseconds (0 or more)`);
  return ms;
}
