/**
 * Seeded, bounded fuzzing of the real broker (port 0, real remote over smart HTTP): malformed and
 * hostile requests built from a fixed seed (FUZZ_SEED overrides it, FUZZ_COUNT the count). Every
 * answer is below 500 and carries the OSB error body when it is an error, no error leaves a
 * commit, and the broker keeps serving. A failure prints the seed and the request to replay it.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, CREDENTIALS, type Harness } from "../support/broker-harness.js";
import { rawRequest, type RawRequest } from "../support/raw-http.js";
import { provisionBody, remoteHead, samplePlans, type SamplePlans } from "./helpers.js";
import { prng } from "../support/prng.js";

const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed_2026);
const COUNT = Number(process.env.FUZZ_COUNT ?? 120);
const SECRET = "fuzz-webhook-secret";

let h: Harness;
let plans: SamplePlans;

beforeAll(async () => {
  h = await startHarness({
    configure: (c) => {
      c.webhook.secret = SECRET;
      // Short: a lying Content-Length waits for the request timeout.
      c.http = { ...c.http, headersTimeoutSeconds: 2, requestTimeoutSeconds: 3, idleTimeoutSeconds: 2, maxConnectionsPerClient: 64 };
    },
  });
  plans = await samplePlans(h.osb);
});
afterAll(async () => {
  await h?.close();
});

/** The remote's tip, read from the ref file (no git process per request). */
async function tip(): Promise<string> {
  try {
    return (await readFile(path.join(h.remoteDir, "refs/heads/main"), "utf8")).trim();
  } catch {
    return remoteHead(h.remoteDir);
  }
}

function hostileRequest(rand: () => number): RawRequest {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
  const junkBytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rand() * 256)));
  const deep = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
  const ids = [
    "%ff%fe",
    "%c0%af",
    "%",
    "%zz",
    "%00",
    "%2e%2e",
    "..%2F..%2Fetc",
    "a%20b",
    "%e2%80%ae",
    "x".repeat(300),
    encodeURIComponent("\u00e9t\u00e9"),
    "%0d%0aSet-Cookie:%20x",
    "ok-fuzz",
    "",
  ];
  const id = pick(ids);
  const path = pick([
    `/v2/service_instances/${id}`,
    `/v2/service_instances/${id}/last_operation`,
    `/v2/service_instances/${id}/service_bindings/${pick(ids)}`,
    `/v2/service_instances/${id}/service_bindings/${pick(ids)}/last_operation`,
    `/v2/catalog`,
    `/admin/instances/${id}/history`,
    `/admin/webhook`,
    `/admin/rerender`,
    `/${id}`,
    `/v2/${"a/".repeat(200)}`,
  ]);
  const query = pick([
    "",
    "?accepts_incomplete=true",
    `?service_id=${plans.serviceId}&plan_id=${plans.small.id}`,
    `?service_id=${plans.serviceId}&service_id=x&plan_id[]=y`,
    "?%ff=%fe",
    "?accepts_incomplete=%ff",
    `?operation=${"o".repeat(5000)}`,
  ]);
  const method = pick(["GET", "PUT", "PATCH", "DELETE", "POST", "OPTIONS", "HEAD", "PROPFIND"]);
  // A well-formed body with an unknown plan, or something hostile: never a valid request.
  const good = provisionBody(plans.serviceId, "no-such-plan");
  const body: Buffer = pick([
    () => Buffer.from(JSON.stringify(good)),
    () => Buffer.from(JSON.stringify({ ...good, context: JSON.parse(`{"a":${deep(40)}}`) as unknown })),
    () => Buffer.from(`{"parameters":${deep(5000)}}`),
    () => Buffer.from(`{"service_id":${pick(["1", "null", "[]", "{}", '"x"', "true"])},"plan_id":${pick(["1", "null", "[]"])}}`),
    () => Buffer.from(JSON.stringify(good).slice(0, Math.floor(rand() * 60))),
    () => Buffer.from(`{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}`),
    () => junkBytes(1 + Math.floor(rand() * 2000)),
    () => Buffer.from(`"${"\\u0000".repeat(100)}"`),
    () => Buffer.from(JSON.stringify({ ...good, plan_id: plans.small.id, service_id: "no-such-service", parameters: { s: "x".repeat(200_000) } })),
    () => Buffer.alloc(0),
  ])();
  const headers: Record<string, string> = {};
  const auth = pick(["valid", "valid", "wrong", "garbage", "none"]);
  if (auth === "valid") headers.authorization = `Basic ${Buffer.from(`${CREDENTIALS.username}:${CREDENTIALS.password}`).toString("base64")}`;
  if (auth === "wrong") headers.authorization = `Basic ${Buffer.from("broker:nope").toString("base64")}`;
  if (auth === "garbage") headers.authorization = pick(["Basic", "Basic %%%", "Bearer x", `Basic ${"A".repeat(4000)}`]);
  const version = pick(["2.17", "2.17", "2.13", "2.12", "3.0", "x", "2.17.1", null]);
  if (version !== null) headers["x-broker-api-version"] = version;
  const contentType = pick(["application/json", "application/json; charset=latin1", "text/plain", "application/x-www-form-urlencoded", null]);
  if (contentType !== null) headers["content-type"] = contentType;
  if (rand() < 0.3) headers["x-broker-api-originating-identity"] = pick(["cloudfoundry", "cloudfoundry !!!", `kubernetes ${Buffer.from(deep(300)).toString("base64")}`]);
  if (path === "/admin/webhook") {
    headers["x-github-event"] = "push";
    if (rand() < 0.5) headers["x-hub-signature-256"] = pick(["sha256=00", "md5=1", ""]);
  }
  let payload = body;
  const encoding = pick([null, null, "gzip", "gzip-corrupt", "deflate", "br", "compress", "gzip, gzip"]);
  if (encoding === "gzip") payload = gzipSync(body);
  if (encoding !== null) headers["content-encoding"] = encoding === "gzip-corrupt" ? "gzip" : encoding;
  const lengthMode = pick(["exact", "exact", "exact", "exact", "exact", "exact", "none", "short"]);
  if (lengthMode === "exact" || lengthMode === "short") headers["content-length"] = String(payload.length + (lengthMode === "short" ? 1 + Math.floor(rand() * 100) : 0));
  return { method, path: `${path}${query}`, headers, ...(lengthMode === "none" && payload.length > 0 ? {} : { body: payload }) };
}

describe(`fuzz (seed ${SEED}, ${COUNT} requests)`, () => {
  it("never a 5xx, an OSB error body on every error, never a commit, and the broker keeps serving", async () => {
    const rand = prng(SEED);
    const before = await tip();
    const statuses = new Map<number, number>();
    for (let i = 0; i < COUNT; i++) {
      const req = hostileRequest(rand);
      const res = await rawRequest(h.broker.url, req);
      const replay = `seed ${SEED} request #${i}: ${req.method} ${req.path.slice(0, 200)} ${JSON.stringify(req.headers).slice(0, 400)}`;
      statuses.set(res.status ?? 0, (statuses.get(res.status ?? 0) ?? 0) + 1);
      expect(res.status, replay).not.toBeNull();
      expect(res.status!, replay).toBeLessThan(500);
      if (res.status! >= 400 && req.method !== "HEAD") {
        expect(typeof res.json?.description, `${replay}\n${res.text.slice(0, 300)}`).toBe("string");
      }
      if (res.status! >= 300) expect(await tip(), replay).toBe(before);
    }
    // Every request was refused somewhere; none was valid, so none committed.
    expect(await tip()).toBe(before);
    expect([...statuses.keys()].every((s) => s < 500)).toBe(true);
    expect((await h.osb.catalog()).status).toBe(200);
    expect((await h.osb.provision("after-fuzz", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
  }, 600_000);
});
