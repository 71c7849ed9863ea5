/**
 * The broker process of bench/stores.ts: `startBroker` (src/cli/serve.ts) on the configuration in
 * the JSON file named by argv[2], in a process of its own, so that its CPU (`/proc/<pid>/stat`,
 * what `process.cpuUsage()` reports inside it) is its own and the git processes it runs are
 * counted apart (their exit adds them to the process's cutime/cstime).
 *
 * Logs (pino, JSON lines) go to stdout. Over the IPC channel it sends, once listening:
 *   { type: "started", url, startedAt, listeningMs, catalogMs }
 * `startedAt`: when startBroker was called (epoch ms); `listeningMs`: from then until it resolved
 * (the server listening); `catalogMs`: until a first GET /v2/catalog was answered 200. On SIGTERM it
 * closes the broker (pushing what is queued) and exits.
 */
import http from "node:http";
import { readFile } from "node:fs/promises";
import { startBroker } from "../src/cli/serve.js";
import type { Config } from "../src/config/index.js";
import { createLogger } from "../src/log/index.js";

export interface StartedMessage {
  type: "started";
  url: string;
  startedAt: number;
  listeningMs: number;
  catalogMs: number;
}

/** GET /v2/catalog with the broker's credentials; resolves with the status. */
function getCatalog(url: string, auth: { username: string; password: string }): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      `${url}/v2/catalog`,
      {
        headers: {
          authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString("base64")}`,
          "x-broker-api-version": "2.17",
        },
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
  });
}

async function main(): Promise<void> {
  const file = process.argv[2];
  if (file === undefined || process.send === undefined) throw new Error("usage: node --import tsx bench/stores-broker.ts <config.json> (with an IPC channel)");
  const config = JSON.parse(await readFile(file, "utf8")) as Config;
  const logger = createLogger({ level: config.log.level });
  const startedAt = performance.timeOrigin + performance.now();
  const t0 = performance.now();
  const broker = await startBroker(config, { version: "bench", logger });
  const listeningMs = performance.now() - t0;
  const status = await getCatalog(broker.url, { username: config.auth.username, password: config.auth.password ?? "" });
  if (status !== 200) throw new Error(`GET /v2/catalog answered ${status}`);
  const catalogMs = performance.now() - t0;
  const started: StartedMessage = { type: "started", url: broker.url, startedAt, listeningMs, catalogMs };
  process.send(started);
  process.once("SIGTERM", () => {
    broker
      .close()
      .then(() => process.exit(0))
      .catch((error: unknown) => {
        logger.error({ err: error }, "closing the broker failed");
        process.exit(1);
      });
  });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
