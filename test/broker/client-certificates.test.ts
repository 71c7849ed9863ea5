import { execFile } from "node:child_process";
import { readFile, rm, writeFile } from "node:fs/promises";
import https from "node:https";
import path from "node:path";
import { PassThrough } from "node:stream";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuthMode } from "../../src/config/index.js";
import { createLogger } from "../../src/log/index.js";
import { CREDENTIALS, startHarness, type Harness } from "../support/broker-harness.js";
import { createTempDir } from "../support/git-fixtures.js";

/**
 * Client-certificate authentication over real TLS: a CA, a server certificate and client
 * certificates made here with the openssl CLI (Debian's `openssl`), brokers with `tls.clientCa`
 * and `tls.clientSubjects` in each auth.mode, and a node:https client presenting the certificates.
 */

const run = promisify(execFile);

/** The subject SAP Service Manager publishes (service_manager_certificate_subject), in the form SF configured it. */
const SM_SUBJECT = "/C=DE/O=SAP SE/OU=SAP Cloud Platform Clients/OU=Staging/L=service-manager/CN=service-manager";

interface KeyPair {
  cert: Buffer;
  key: Buffer;
}

let dir: string;
let ca: KeyPair & { file: string };
/** Issued by the trusted CA with the allowed subject; with another subject; by another CA with the allowed subject. */
let allowed: KeyPair;
let otherSubject: KeyPair;
let otherCa: KeyPair;

async function openssl(...args: string[]): Promise<void> {
  await run("openssl", args, { cwd: dir });
}

async function makeCa(name: string): Promise<void> {
  await openssl(
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
    "-keyout", `${name}.key`, "-out", `${name}.pem`, "-subj", `/CN=${name}`,
    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
  );
}

/** A certificate for `subject` issued by the CA `issuer`, with the extensions `ext` (openssl x509 -extfile). */
async function issue(name: string, subject: string, issuer: string, ext: string): Promise<KeyPair> {
  await openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", subject);
  await writeFile(path.join(dir, `${name}.ext`), ext);
  await openssl(
    "x509", "-req", "-in", `${name}.csr`, "-CA", `${issuer}.pem`, "-CAkey", `${issuer}.key`, "-set_serial", String(Date.now()),
    "-days", "2", "-out", `${name}.pem`, "-extfile", `${name}.ext`,
  );
  return { cert: await readFile(path.join(dir, `${name}.pem`)), key: await readFile(path.join(dir, `${name}.key`)) };
}

const CLIENT_EXT = "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n";

interface Reply {
  status: number;
  body: Record<string, unknown>;
  authenticate: string | undefined;
}

/** GET over TLS, trusting the test CA, with an optional client certificate and basic auth. */
function get(url: string, urlPath: string, options: { client?: KeyPair; basic?: boolean }): Promise<Reply> {
  const { hostname, port } = new URL(url);
  const headers: Record<string, string> = { "x-broker-api-version": "2.17" };
  if (options.basic) headers.authorization = `Basic ${Buffer.from(`${CREDENTIALS.username}:${CREDENTIALS.password}`).toString("base64")}`;
  return new Promise((resolve, reject) => {
    const req = https.request(
      { hostname, port: Number(port), path: urlPath, method: "GET", headers, ca: ca.cert, ...(options.client ?? {}), agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", reject);
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          const header = res.headers["www-authenticate"];
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown>, authenticate: Array.isArray(header) ? header[0] : header });
        });
      },
    );
    req.on("error", reject);
    req.end();
  });
}

let h: Harness | undefined;
let mode: AuthMode = "certificate";
/** The broker's URL per auth.mode. */
const urls = new Map<AuthMode, string>();
const lines: Record<string, unknown>[] = [];

beforeAll(async () => {
  dir = await createTempDir("gitops-broker-mtls-");
  await makeCa("ca");
  await makeCa("other-ca");
  ca = { file: path.join(dir, "ca.pem"), cert: await readFile(path.join(dir, "ca.pem")), key: await readFile(path.join(dir, "ca.key")) };
  await issue("server", "/CN=gitops-broker", "ca", "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n");
  allowed = await issue("allowed", SM_SUBJECT, "ca", CLIENT_EXT);
  otherSubject = await issue("intruder", "/C=DE/O=Other/CN=intruder", "ca", CLIENT_EXT);
  otherCa = await issue("forged", SM_SUBJECT, "other-ca", CLIENT_EXT);

  const sink = new PassThrough();
  sink.on("data", (chunk: Buffer) => {
    for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
  });
  h = await startHarness({
    logger: createLogger({ level: "info", destination: sink }),
    configure: (c) => {
      c.tls = { cert: path.join(dir, "server.pem"), key: path.join(dir, "server.key"), clientCa: ca.file, clientSubjects: [SM_SUBJECT] };
      c.auth.mode = mode;
    },
  });
  urls.set("certificate", h.broker.url);
  mode = "both";
  urls.set("both", (await h.startReplica("broker-both")).broker.url);
  mode = "either";
  urls.set("either", (await h.startReplica("broker-either")).broker.url);
}, 120_000);
afterAll(async () => {
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The request log lines of 401 answers (waits for them: the answer can arrive before its line). */
async function deniedLines(count: number): Promise<Record<string, unknown>[]> {
  for (let i = 0; i < 500; i++) {
    const found = lines.filter((l) => l.status === 401);
    if (found.length >= count) return found;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`fewer than ${count} 401 log lines: ${JSON.stringify(lines.filter((l) => l.status === 401))}`);
}

describe("auth.mode certificate (Service Fabrik's secureIncomingConnections)", () => {
  it("serves HTTPS and lets a client with an allowed certificate of the CA in without basic auth", async () => {
    expect(urls.get("certificate")).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const reply = await get(urls.get("certificate")!, "/v2/catalog", { client: allowed });
    expect(reply.status).toBe(200);
    expect(Array.isArray(reply.body.services)).toBe(true);
  });

  it("answers 401 with the OSB error body to a wrong subject, a wrong CA and no certificate; the log names client and subject", async () => {
    const url = urls.get("certificate")!;
    const wrongSubject = await get(url, "/v2/catalog", { client: otherSubject, basic: true });
    expect(wrongSubject).toMatchObject({ status: 401, body: { description: "the client certificate's subject is not allowed" } });
    const wrongCa = await get(url, "/v2/catalog", { client: otherCa, basic: true });
    expect(wrongCa.status).toBe(401);
    expect(wrongCa.body.description).toMatch(/^the client certificate is not issued by a trusted CA \(.+\)$/);
    const none = await get(url, "/v2/catalog", { basic: true });
    expect(none).toMatchObject({ status: 401, body: { description: "no client certificate" } });
    // Basic credentials do not stand in for the certificate in this mode; nothing asks for them.
    expect(none.authenticate).toBeUndefined();

    const [a, b, c] = await deniedLines(3);
    expect(a).toMatchObject({ status: 401, path: "/v2/catalog", client: "127.0.0.1", subject: "/C=DE/O=Other/CN=intruder", msg: "the client certificate's subject is not allowed" });
    expect(b).toMatchObject({ status: 401, client: "127.0.0.1", subject: SM_SUBJECT });
    expect(c).toMatchObject({ status: 401, client: "127.0.0.1", msg: "no client certificate" });
    expect(c).not.toHaveProperty("subject");
  });
});

describe("auth.mode both", () => {
  it("needs an allowed certificate and basic auth", async () => {
    const url = urls.get("both")!;
    expect((await get(url, "/v2/catalog", { client: allowed, basic: true })).status).toBe(200);
    const noBasic = await get(url, "/v2/catalog", { client: allowed });
    expect(noBasic).toMatchObject({ status: 401, body: { description: "missing basic authentication" } });
    expect(noBasic.authenticate).toMatch(/^Basic /);
    expect(await get(url, "/v2/catalog", { client: otherCa, basic: true })).toMatchObject({ status: 401 });
    expect(await get(url, "/v2/catalog", { basic: true })).toMatchObject({ status: 401, body: { description: "no client certificate" } });
  });
});

describe("auth.mode either", () => {
  it("lets in an allowed certificate, or basic auth without one, and refuses what has neither", async () => {
    const url = urls.get("either")!;
    expect((await get(url, "/v2/catalog", { client: allowed })).status).toBe(200);
    expect((await get(url, "/v2/catalog", { basic: true })).status).toBe(200);
    expect((await get(url, "/v2/catalog", { client: otherSubject, basic: true })).status).toBe(200);
    const neither = await get(url, "/v2/catalog", { client: otherSubject });
    expect(neither.status).toBe(401);
    expect(neither.body.description).toBe(
      "neither a valid client certificate (the client certificate's subject is not allowed) nor valid basic credentials (missing basic authentication)",
    );
    expect((await get(url, "/v2/catalog", {})).status).toBe(401);
  });

  it("guards the admin endpoints the same way", async () => {
    const url = urls.get("either")!;
    expect((await get(url, "/admin/instances/nothing-here/history", {})).status).toBe(401);
    expect((await get(url, "/admin/instances/nothing-here/history", { client: allowed })).status).not.toBe(401);
  });
});
