import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { osbClient } from "../support/osb-client.js";
import { PROCESS_TEST_TIMEOUT_MS, runProcess, startProcess, trackedTempDir, type TrackedProcess } from "../support/processes.js";

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../bin/gitops-broker.js");

interface Started {
  process: TrackedProcess;
  url: string;
}

/** Start `gitops-broker serve` as a real process and wait for its "listening" log line. */
async function startCli(cwd: string, args: string[], env: Record<string, string> = {}): Promise<Started> {
  const started = startProcess(process.execPath, [BIN, "serve", ...args], { cwd, env: { ...process.env, ...env } });
  const line = await started.waitForLine((l) => listeningUrl(l) !== undefined, "the listening log line");
  return { process: started, url: listeningUrl(line)! };
}

function listeningUrl(line: string): string | undefined {
  try {
    const entry = JSON.parse(line) as { msg?: string; url?: string };
    return entry.msg === "gitops-broker listening" ? entry.url : undefined;
  } catch {
    return undefined; // not a log line
  }
}

/** SIGTERM, then the exit code (0 after a graceful stop). */
async function stop(started: Started): Promise<number | null> {
  started.process.signal("SIGTERM");
  return (await started.process.exited).code;
}

type LogLine = { level: number; msg: string; [k: string]: unknown };

/** The log lines (pino JSON on stdout) the process printed so far. */
function logs(started: Started): LogLine[] {
  return started.process
    .stdout()
    .split("\n")
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as LogLine];
      } catch {
        return []; // not a log line
      }
    });
}

let cwd: string;
beforeAll(async () => {
  cwd = await trackedTempDir("gitops-broker-cli-");
});

describe("gitops-broker serve (embedded default)", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
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

    expect(await stop(first)).toBe(0);
    const generated = /no broker password configured: generated one/;
    expect(logs(first).filter((l) => generated.test(l.msg)).map((l) => [l.level, l.file])).toEqual([[40, passwordFile]]);

    const second = await startCli(cwd, ["--listen", "127.0.0.1:0"]);
    // The file of the first start is reused: no warning, one info line saying where the password is.
    expect(logs(second).filter((l) => generated.test(l.msg))).toEqual([]);
    expect(logs(second).filter((l) => /password generated at the first start/.test(l.msg)).map((l) => [l.level, l.file])).toEqual([[30, passwordFile]]);
    const again = osbClient(second.url, { username: "broker", password });
    expect((await again.provision("cli-1", body)).status).toBe(200);
    expect(await stop(second)).toBe(0);
  });

  it("exits 2 with path-precise messages on a bad configuration", async () => {
    const { code, stderr } = await runProcess(process.execPath, [BIN, "serve", "--listen", "nonsense"], {
      cwd,
      env: { ...process.env, GITOPS_BROKER_LOG_LEVEL: "loud" },
    });
    expect(code).toBe(2);
    expect(stderr).toMatch(/--listen/);
    expect(stderr).toMatch(/GITOPS_BROKER_LOG_LEVEL/);
  });

  it("reports every unreadable secret file in one run, exit 2", async () => {
    const missing = (name: string) => path.join(cwd, "nowhere", name);
    const { code, stderr } = await runProcess(process.execPath, [BIN, "serve", "--listen", "127.0.0.1:0", "--data-dir", path.join(cwd, "secrets-data")], {
      cwd,
      env: {
        ...process.env,
        GITOPS_BROKER_PASSWORD_FILE: missing("password"),
        GITOPS_BROKER_WEBHOOK_SECRET_FILE: missing("webhook"),
        GITOPS_BROKER_GIT_TOKEN_FILE: missing("token"),
      },
    });
    expect(code).toBe(2);
    expect(stderr).toContain(`${missing("password")}: password file does not exist`);
    expect(stderr).toContain(`${missing("webhook")}: webhook secret file does not exist`);
    expect(stderr).toContain(`${missing("token")}: git token file cannot be read (ENOENT)`);
  });
});
