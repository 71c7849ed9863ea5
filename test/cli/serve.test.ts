import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { osbClient } from "../support/osb-client.js";

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../bin/gitops-broker.js");

interface Started {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
  /** The log lines (pino JSON on stdout) so far. */
  logs: { level: number; msg: string; [k: string]: unknown }[];
}

/** Start `gitops-broker serve` as a real process and wait for its "listening" log line. */
async function startCli(cwd: string, args: string[], env: Record<string, string> = {}): Promise<Started> {
  const child = spawn(process.execPath, [BIN, "serve", ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const stderr: string[] = [];
  child.stderr?.on("data", (d: Buffer) => stderr.push(d.toString()));
  const lines = createInterface({ input: child.stdout! });
  const logs: Started["logs"] = [];
  const url = await new Promise<string>((resolve, reject) => {
    lines.on("line", (line) => {
      try {
        const entry = JSON.parse(line) as Started["logs"][number] & { url?: string };
        logs.push(entry);
        if (entry.msg === "gitops-broker listening" && entry.url) resolve(entry.url);
      } catch {
        // not a log line
      }
    });
    void exited.then((code) => reject(new Error(`broker exited with ${code}: ${stderr.join("")}`)));
  });
  return { child, url, exited, logs };
}

let cwd: string;
beforeAll(async () => {
  cwd = await mkdtemp(path.join(tmpdir(), "gitops-broker-cli-"));
});
afterAll(async () => {
  await rm(cwd, { recursive: true, force: true });
});

describe("gitops-broker serve (embedded default)", () => {
  it("seeds a local remote, generates a 0600 password, serves OSB, stops on SIGTERM and keeps state", async () => {
    const first = await startCli(cwd, ["--listen", "127.0.0.1:0"]);
    const dataDir = path.join(cwd, ".gitops-broker");
    const passwordFile = path.join(dataDir, "password");
    expect((await stat(passwordFile)).mode & 0o777).toBe(0o600);
    const password = (await readFile(passwordFile, "utf8")).trim();
    expect(password.length).toBeGreaterThanOrEqual(32);

    const osb = osbClient(first.url, { username: "broker", password });
    const catalog = await osb.catalog();
    expect(catalog.status).toBe(200);
    const [service] = catalog.body.services as { id: string; plans: { id: string; name: string }[] }[];
    const small = service!.plans.find((p) => p.name === "small")!;
    const body = { service_id: service!.id, plan_id: small.id, organization_guid: "o", space_guid: "s" };
    expect((await osb.provision("cli-1", body)).status).toBe(201);

    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    const generated = /no broker password configured: generated one/;
    expect(first.logs.filter((l) => generated.test(l.msg)).map((l) => [l.level, l.file])).toEqual([[40, passwordFile]]);

    const second = await startCli(cwd, ["--listen", "127.0.0.1:0"]);
    // The file of the first start is reused: no warning, one info line saying where the password is.
    expect(second.logs.filter((l) => generated.test(l.msg))).toEqual([]);
    expect(second.logs.filter((l) => /password generated at the first start/.test(l.msg)).map((l) => [l.level, l.file])).toEqual([[30, passwordFile]]);
    const again = osbClient(second.url, { username: "broker", password });
    expect((await again.provision("cli-1", body)).status).toBe(200);
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  }, 240_000); // two broker processes starting from the TypeScript sources on a busy machine

  it("exits 2 with path-precise messages on a bad configuration", async () => {
    const child = spawn(process.execPath, [BIN, "serve", "--listen", "nonsense"], {
      cwd,
      env: { ...process.env, GITOPS_BROKER_LOG_LEVEL: "loud" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(2);
    expect(stderr).toMatch(/--listen/);
    expect(stderr).toMatch(/GITOPS_BROKER_LOG_LEVEL/);
  });

  it("reports every unreadable secret file in one run, exit 2", async () => {
    const missing = (name: string) => path.join(cwd, "nowhere", name);
    const child = spawn(process.execPath, [BIN, "serve", "--listen", "127.0.0.1:0", "--data-dir", path.join(cwd, "secrets-data")], {
      cwd,
      env: {
        ...process.env,
        GITOPS_BROKER_PASSWORD_FILE: missing("password"),
        GITOPS_BROKER_WEBHOOK_SECRET_FILE: missing("webhook"),
        GITOPS_BROKER_GIT_TOKEN_FILE: missing("token"),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(2);
    expect(stderr).toContain(`${missing("password")}: password file does not exist`);
    expect(stderr).toContain(`${missing("webhook")}: webhook secret file does not exist`);
    expect(stderr).toContain(`${missing("token")}: git token file cannot be read (ENOENT)`);
  });
});
