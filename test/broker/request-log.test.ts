import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/index.js";
import { startHarness, type Harness } from "../support/broker-harness.js";

/** The request log: one line per request, the full path, 4xx without a stack, the client on 401. */

let h: Harness;
const lines: Record<string, unknown>[] = [];

beforeAll(async () => {
  const sink = new PassThrough();
  sink.on("data", (chunk: Buffer) => {
    for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
  });
  h = await startHarness({ logger: createLogger({ level: "info", destination: sink }) });
});
afterAll(async () => {
  await h?.close();
});

/** The log lines of requests to `path` (waits for the line: the answer can arrive before it is written). */
async function linesFor(path: string, count: number): Promise<Record<string, unknown>[]> {
  for (let i = 0; i < 500; i++) {
    const found = lines.filter((l) => l.path === path);
    if (found.length >= count) return found;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no ${count} log line(s) for ${path}: ${JSON.stringify(lines.filter((l) => l.path === path))}`);
}

describe("request log", () => {
  it("logs a success and an expected 4xx as one info line each, with the full /v2 path, no stack", async () => {
    expect((await h.osb.catalog()).status).toBe(200);
    const [ok] = await linesFor("/v2/catalog", 1);
    expect(ok).toMatchObject({ level: 30, method: "GET", path: "/v2/catalog", status: 200, msg: "request" });

    expect((await h.osb.call("GET", "/v2/service_instances/ghost?x=1")).status).toBe(404);
    const found = await linesFor("/v2/service_instances/ghost", 1);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ level: 30, method: "GET", status: 404, code: "NotFoundError", msg: "instance ghost does not exist" });
    expect(found[0]).not.toHaveProperty("err");
    expect(JSON.stringify(found[0])).not.toMatch(/\n\s+at /);
    expect(found[0]).not.toHaveProperty("client");
  });

  it("names the client's address on 401", async () => {
    expect((await h.osb.call("GET", "/v2/service_instances/x/last_operation", undefined, { auth: false })).status).toBe(401);
    const [denied] = await linesFor("/v2/service_instances/x/last_operation", 1);
    expect(denied).toMatchObject({ level: 30, status: 401, client: "127.0.0.1", msg: "missing basic authentication" });
    expect(denied).not.toHaveProperty("err");
  });
});
