import { readFile } from "node:fs/promises";
import http from "node:http";
import https from "node:https";
import { rootCertificates } from "node:tls";
import { loadConfig, readPassword, type Config } from "../config/index.js";
import { ConfigError } from "../errors/index.js";
import { Command, Option } from "commander";
import { addConfigOptions, CONFIG_HELP, configArgv, runCommand, type CliIo, type ConfigOptions, type Done } from "./args.js";

/**
 * `gitops-broker update --plan <id> | --instance <id> [--url URL] [--config FILE] [--data-dir DIR]`:
 * asks the running broker (POST /admin/rerender) to re-render one instance, or every instance of
 * a plan, with the current catalog and overrides. The broker does the work through its queue, so
 * this never races with OSB requests; it answers once the re-renders are queued.
 * URL and credentials come from the same configuration the broker runs with.
 */

export interface UpdateIo {
  stdout: (line: string) => void;
  stderr: (line: string) => void;
  env?: Record<string, string | undefined>;
  cwd?: string;
}

/** Where the broker of this configuration listens, as a client reaches it. */
export function brokerUrl(config: Pick<Config, "listen" | "tls">): string {
  const wildcard: Record<string, string> = { "0.0.0.0": "127.0.0.1", "::": "::1" };
  const host = wildcard[config.listen.host] ?? config.listen.host;
  return `${config.tls ? "https" : "http"}://${host.includes(":") ? `[${host}]` : host}:${config.listen.port}`;
}

function post(url: URL, body: string, headers: Record<string, string>, ca: Buffer[] | undefined): Promise<{ status: number; text: string }> {
  const transport = url.protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    const req = transport.request(
      url,
      { method: "POST", headers: { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) }, ...(ca ? { ca } : {}) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

interface UpdateOptions extends ConfigOptions {
  plan?: string;
  instance?: string;
  url?: string;
}

export function updateCommand(io: UpdateIo, done: Done): Command {
  return addConfigOptions(new Command("update"))
    .description("ask the running broker to re-render one instance, or every instance of a plan")
    .addOption(new Option("--plan <plan-id>", "re-render every instance of this plan").conflicts("instance"))
    .addOption(new Option("--instance <instance-id>", "re-render this instance"))
    .option("--url <url>", "the broker's address (default: from the configuration's listen address)")
    .addHelpText(
      "after",
      "\nThe broker queues the re-renders (POST /admin/rerender) and commits one re-render per instance whose\n" +
        "result changed. Credentials come from the configuration the broker runs with.\n" +
        CONFIG_HELP,
    )
    .action(async (options: UpdateOptions, cmd: Command) => {
      if (options.plan === undefined && options.instance === undefined) {
        cmd.error("error: give one of --plan <plan-id> and --instance <instance-id>", { exitCode: 2, code: "gitops-broker.usage" });
      }
      done(await rerender(options, io));
    });
}

/** Runs the command; resolves with the exit code (2: usage or configuration, 1: the broker refused or is unreachable). */
export function update(argv: readonly string[], io: UpdateIo): Promise<number> {
  const lines = (write: (line: string) => void) => ({ write: (text: string) => write(text.replace(/\n$/, "")) });
  const cli: CliIo = { stdout: lines(io.stdout), stderr: lines(io.stderr) };
  return runCommand((done) => updateCommand(io, done), argv, cli);
}

async function rerender(options: UpdateOptions, io: UpdateIo): Promise<number> {
  const plan = options.plan;
  const instance = options.instance;
  let config: Config;
  let credentials: { username: string; password: string };
  try {
    config = await loadConfig({ argv: configArgv(options), ...(io.env ? { env: io.env } : {}), ...(io.cwd ? { cwd: io.cwd } : {}) });
    credentials = await readPassword({ dataDir: config.dataDir, config });
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    io.stderr(e.message);
    return 2;
  }
  const url = new URL("/admin/rerender", options.url ?? brokerUrl(config));
  // A self-signed broker certificate is trusted as configured, next to the usual roots.
  const ca = config.tls && url.protocol === "https:" ? [...rootCertificates.map((c) => Buffer.from(c)), await readFile(config.tls.cert)] : undefined;
  const authorization = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString("base64")}`;
  const body = JSON.stringify(plan !== undefined ? { plan_id: plan } : { instance_id: instance });
  let reply: { status: number; text: string };
  try {
    reply = await post(url, body, { authorization }, ca);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? (e instanceof Error ? e.message : String(e));
    io.stderr(`gitops-broker update: cannot reach the broker at ${url.origin} (${code}); is it running? (--url to give its address)`);
    return 1;
  }
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(reply.text) as Record<string, unknown>;
  } catch {
    // Not our broker, or a proxy's error page: reported by status below.
  }
  if (reply.status !== 202) {
    const description = typeof parsed.description === "string" ? parsed.description : reply.text.slice(0, 200);
    io.stderr(`gitops-broker update: the broker answered ${reply.status}: ${description}`);
    return 1;
  }
  io.stdout(
    plan !== undefined
      ? `queued the re-render of ${String(parsed.instances)} instance(s) of plan ${plan}`
      : `queued the re-render of instance ${instance}`,
  );
  return 0;
}
