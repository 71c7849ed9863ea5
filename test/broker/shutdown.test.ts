/**
 * How a broker stops (src/cli/serve.ts STOP_PHASES, defined once for a full stop and a failed
 * start): new requests refused, background work stopped, the write queue pushed (a request
 * waiting on it gets its answer), the nudges, the HTTP server, the watchers, the view, and the
 * data directory's lock released last. The real broker in process on a smart-HTTP remote whose
 * pushes a pre-receive hook holds until the test lets them go.
 */
import { access, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STOP_PHASES } from "../../src/cli/serve.js";
import { lockDataDir } from "../../src/config/index.js";
import { createLogger } from "../../src/log/index.js";
import { installPreReceiveHook } from "../support/git-fixtures.js";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { EVENT_CEILING_MS, waitUntil } from "../support/processes.js";
import { provisionBody, samplePlans } from "./helpers.js";

const lines: Record<string, unknown>[] = [];
let h: Harness;

beforeAll(async () => {
  const logger = createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) } });
  h = await startHarness({ logger });
});
afterAll(async () => {
  await h?.close();
});

/** A connection attempt to the broker's port: "refused" once its listener is closed. */
function connects(url: string): Promise<"accepted" | "refused"> {
  return new Promise((resolve) => {
    const req = http.get(`${url}/healthz`, { agent: false }, (res) => {
      res.resume();
      resolve("accepted");
    });
    req.on("error", () => resolve("refused"));
  });
}

describe("stopping the broker", () => {
  it("refuses new requests, answers the one waiting on the queue once pushed, stops the rest in order, then releases the lock", async () => {
    const plans = await samplePlans(h.osb);
    // Pushes wait until the test removes the gate file.
    const gate = path.join(h.root, "push-gate");
    const reached = path.join(h.root, "push-reached");
    await writeFile(gate, "");
    await installPreReceiveHook(h.remoteDir, `touch ${JSON.stringify(reached)}\nwhile [ -e ${JSON.stringify(gate)} ]; do sleep 0.05; done\n`);

    const waiting = h.osb.provision("db-stop", provisionBody(plans.serviceId, plans.small.id));
    await waitUntil(() => access(reached).then(() => true, () => false), "the provision's push reaching the remote's hook", { ceilingMs: EVENT_CEILING_MS, intervalMs: 20 });

    const closing = h.broker.close();
    // New connections are refused while the queued operation is still being pushed.
    await waitUntil(async () => (await connects(h.broker.url)) === "refused", "new connections refused", { ceilingMs: EVENT_CEILING_MS });
    const phases = () => lines.filter((l) => l.msg === "stopping").map((l) => l.phase);
    expect(phases()).toEqual(["refuse requests", "stop background work", "push the queue"]);

    // The push goes through: the waiting request is answered, then the rest stops.
    await rm(gate);
    const answer = await waiting;
    expect(answer.status).toBe(201);
    await closing;
    expect(phases()).toEqual([...STOP_PHASES]);
    expect(lines.findLast((l) => typeof l.msg === "string" && l.msg !== "stopping")?.msg).toBe("gitops-broker stopped");

    // The lock is free: another process could take the data directory now.
    const dataDir = path.join(h.root, "broker-1");
    await access(dataDir);
    await (await lockDataDir(dataDir, "serve")).release();
  });
});
