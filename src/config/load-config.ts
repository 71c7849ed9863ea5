import { readFile as fsReadFile } from "node:fs/promises";
import path from "node:path";
import type { ErrorObject, ValidateFunction } from "ajv";
import { ConfigError, type Problem } from "../errors/index.js";
import { isBranchName } from "../gitwriter/index.js";
import { validators } from "./config-validator.generated.js";
import { parseAddressRange } from "./address-range.js";
import { parseSubjectPattern } from "./subject-pattern.js";
import { envSource, fileSource, flagsSource, isPlainObject, type Assignment, type Origin, type SourceResult } from "./sources.js";
import type { Config } from "./types.js";

export interface LoadConfigOptions {
  env?: Record<string, string | undefined>;
  /** The arguments after `serve`: `[--config FILE] [--data-dir DIR] [--listen HOST:PORT]`. */
  argv?: readonly string[];
  cwd?: string;
  /** Reads the config file and checks the TLS files (UTF-8). */
  readFile?: (file: string) => Promise<string>;
}

// config.schema.json, precompiled (scripts/generate-validators.mjs).
const validate = validators.config as ValidateFunction<Config>;

function defaults(cwd: string): Config {
  return {
    listen: { host: "127.0.0.1", port: 8080 },
    http: { headersTimeoutSeconds: 10, requestTimeoutSeconds: 30, idleTimeoutSeconds: 5, maxConnectionsPerClient: 256, trustedProxies: [], maxConnectionsPerProxy: 4096 },
    dataDir: path.join(cwd, ".gitops-broker"),
    git: {
      remote: null,
      branch: "main",
      author: { name: "gitops-broker", email: "gitops-broker@localhost" },
      pushTimeoutSeconds: 30,
      activityTimeoutSeconds: 5,
      pollIntervalSeconds: 30,
      minPushIntervalSeconds: 0,
    },
    auth: { mode: "basic", username: "broker", password: null, passwordFile: null },
    tls: null,
    log: { level: "info" },
    status: { mode: "commit", bindTimeoutSeconds: 10, syncTimeoutSeconds: 60 },
    scheduler: { type: "single" },
    webhook: { secret: null, secretFile: null },
    reconcile: { maxPerSecond: 10, batchSize: 4, retrySeconds: 30 },
    records: { retentionDays: 90, gcIntervalSeconds: 60, gcBatchSize: 100 },
    metrics: { listen: null },
    leaderElection: {
      enabled: false,
      leaseName: "gitops-broker",
      namespace: null,
      identity: null,
      leaseDurationSeconds: 15,
      renewDeadlineSeconds: 10,
      retryPeriodSeconds: 2,
    },
    stores: {},
  };
}

/**
 * Build the configuration: defaults < config file (YAML, may be partial) < environment < flags,
 * validated once against config.schema.json. Throws one ConfigError listing every problem, each
 * located by config key, environment variable or flag. Values never appear in messages except
 * for `listen`, so a misplaced password cannot leak into logs.
 */
export async function loadConfig(options: LoadConfigOptions = {}): Promise<Config> {
  const { env = process.env, argv = [], readFile = (f: string) => fsReadFile(f, "utf8") } = options;
  const cwd = path.resolve(options.cwd ?? process.cwd());

  const flags = flagsSource(argv, cwd);
  const sources: SourceResult[] = [];
  if (flags.configFile !== undefined) sources.push(await readConfigFile(flags.configFile, cwd, readFile));
  sources.push(envSource(env, cwd), flags);

  const merged: Record<string, unknown> = { ...defaults(cwd) };
  const origins = new Map<string, Origin>();
  for (const source of sources) for (const a of source.assignments) assign(merged, origins, a);

  const problems = sources.flatMap((s) => s.problems);
  const causes = sources.flatMap((s) => s.causes);
  if (!validate(merged)) {
    problems.push(...dedupe((validate.errors ?? []).map((e) => toProblem(e, origins))));
  } else {
    problems.push(...exclusiveSecrets(merged, origins), ...gitProblems(merged, origins), ...storeProblems(merged, origins));
    fillStoreDefaults(merged);
  }
  const tls = merged.tls;
  if (isPlainObject(tls)) {
    tls.clientCa ??= null;
    tls.clientSubjects ??= [];
    if (Array.isArray(tls.clientSubjects)) {
      tls.clientSubjects.forEach((subject: unknown, i) => {
        const pattern = typeof subject === "string" ? parseSubjectPattern(subject) : undefined;
        if (typeof pattern === "string") problems.push(locate(["tls", "clientSubjects", String(i)], origins, pattern));
      });
    }
  }
  problems.push(...clientCertificateProblems(merged, origins));
  if (isPlainObject(tls)) {
    for (const key of ["cert", "key", "clientCa"] as const) {
      const file = tls[key];
      if (typeof file !== "string" || file === "") continue;
      try {
        await readFile(file);
      } catch (e: unknown) {
        problems.push(locate(["tls", key], origins, `cannot read ${JSON.stringify(file)} (${errorCode(e)})`));
        causes.push(e);
      }
    }
  }

  if (problems.length > 0) {
    const cause = causes.length > 1 ? new AggregateError(causes, "several underlying errors") : causes[0];
    throw new ConfigError(problems, cause === undefined ? undefined : { cause });
  }
  return merged as unknown as Config;
}

async function readConfigFile(label: string, cwd: string, readFile: (file: string) => Promise<string>): Promise<SourceResult> {
  const absPath = path.resolve(cwd, label);
  let text: string;
  try {
    text = await readFile(absPath);
  } catch (e: unknown) {
    return { assignments: [], problems: [{ file: label, path: "", message: `cannot read config file (${errorCode(e)})` }], causes: [e] };
  }
  return fileSource(label, absPath, text);
}

/**
 * Set one leaf, creating missing (or null) parents. A non-object in the way came from an earlier
 * source and is invalid: it stays, so that its error is reported instead of being papered over.
 */
function assign(root: Record<string, unknown>, origins: Map<string, Origin>, { path: key, value, origin }: Assignment): void {
  let node = root;
  for (let i = 0; i < key.length - 1; i++) {
    const k = key[i]!;
    let next = node[k];
    if (next === undefined || next === null) {
      next = node[k] = {};
      origins.set(key.slice(0, i + 1).join("."), origin);
    }
    if (!isPlainObject(next)) return;
    node = next;
  }
  const last = key[key.length - 1]!;
  // An empty mapping (`git: {}`) keeps what is there; it only stands for an object where there was none.
  if (isPlainObject(value) && Object.keys(value).length === 0 && isPlainObject(node[last])) return;
  node[last] = value;
  origins.set(key.join("."), origin);
}

/** The problem for a config key, located at the source that set it (or its nearest parent). */
function locate(key: string[], origins: Map<string, Origin>, message: string): Problem {
  for (let i = key.length; i > 0; i--) {
    const origin = origins.get(key.slice(0, i).join("."));
    if (origin) return { file: origin.file, path: origin.name ?? key.join("."), message };
  }
  return { file: "config", path: key.join("."), message };
}

function toProblem(e: ErrorObject, origins: Map<string, Origin>): Problem {
  const key = e.instancePath === "" ? [] : e.instancePath.slice(1).split("/").map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
  switch (e.keyword) {
    case "additionalProperties":
      return locate([...key, String(e.params.additionalProperty)], origins, "unknown key");
    case "required":
      return locate([...key, String(e.params.missingProperty)], origins, "is required");
    case "enum":
      return locate(key, origins, `must be one of ${(e.params.allowedValues as unknown[]).join(", ")}`);
    case "type":
      return locate(key, origins, `must be ${String(e.params.type).split(",").join(" or ")}`);
    default:
      return locate(key, origins, e.message ?? e.keyword);
  }
}

function exclusiveSecrets(config: Config, origins: Map<string, Origin>): Problem[] {
  const problems: Problem[] = [];
  if (config.auth.password !== null && config.auth.passwordFile !== null) {
    problems.push(locate(["auth", "passwordFile"], origins, "auth.password and auth.passwordFile exclude each other: set one"));
  }
  if (config.http.headersTimeoutSeconds > config.http.requestTimeoutSeconds) {
    problems.push(locate(["http", "headersTimeoutSeconds"], origins, "must not be larger than http.requestTimeoutSeconds (the headers are part of the request)"));
  }
  config.http.trustedProxies.forEach((text, i) => {
    const range = parseAddressRange(text);
    if (typeof range === "string") problems.push(locate(["http", "trustedProxies", String(i)], origins, range));
  });
  const election = config.leaderElection;
  if (election.renewDeadlineSeconds >= election.leaseDurationSeconds) {
    problems.push(locate(["leaderElection", "renewDeadlineSeconds"], origins, "must be smaller than leaderElection.leaseDurationSeconds (a leader stops before the others may take over)"));
  }
  if (election.retryPeriodSeconds >= election.renewDeadlineSeconds) {
    problems.push(locate(["leaderElection", "retryPeriodSeconds"], origins, "must be smaller than leaderElection.renewDeadlineSeconds (a leader renews several times before its deadline)"));
  }
  if (config.webhook.secret !== null && config.webhook.secretFile !== null) {
    problems.push(locate(["webhook", "secretFile"], origins, "webhook.secret and webhook.secretFile exclude each other: set one"));
  }
  return problems;
}

/**
 * What the git writer would refuse at start (its own check stays, for other callers): found here,
 * with the key, so that it is a configuration problem (exit 2) and not a failure at start-up.
 */
function gitProblems(config: Config, origins: Map<string, Origin>): Problem[] {
  const problems: Problem[] = [];
  if (!isBranchName(config.git.branch)) {
    problems.push(locate(["git", "branch"], origins, `${JSON.stringify(config.git.branch)} is not a valid branch name (git check-ref-format --branch)`));
  }
  if (config.git.remote?.startsWith("-")) problems.push(locate(["git", "remote"], origins, "must not start with '-' (git would read it as an option)"));
  for (const field of ["name", "email"] as const) {
    if (config.git.author[field].trim() === "" || /[<>\n]/.test(config.git.author[field])) {
      problems.push(locate(["git", "author", field], origins, "must not be blank nor hold '<', '>' or a line break (a commit's author line)"));
    }
  }
  return problems;
}

/** What the store writers would refuse, and stores that would write where another writer does. */
function storeProblems(config: Config, origins: Map<string, Origin>): Problem[] {
  const problems: Problem[] = [];
  const writes = new Map<string, string>([[`${config.git.remote ?? "(embedded)"} ${config.git.branch}`, "git.remote"]]);
  for (const [name, store] of Object.entries(config.stores)) {
    if (name === "control") problems.push(locate(["stores", name], origins, "\"control\" names the control repository (git.remote): choose another store name"));
    const branch = store.branch ?? config.git.branch;
    if (!isBranchName(branch)) problems.push(locate(["stores", name, "branch"], origins, `${JSON.stringify(branch)} is not a valid branch name (git check-ref-format --branch)`));
    if (store.remote.startsWith("-")) problems.push(locate(["stores", name, "remote"], origins, "must not start with '-' (git would read it as an option)"));
    const where = `${store.remote} ${branch}`;
    const other = writes.get(where);
    if (other) problems.push(locate(["stores", name, "remote"], origins, `the same repository and branch as ${other}: one branch has one writer`));
    else writes.set(where, `stores.${name}`);
  }
  return problems;
}

/** Branch, credentials and poll interval default to the control repository's. */
function fillStoreDefaults(config: Config): void {
  for (const store of Object.values(config.stores)) {
    store.branch ??= config.git.branch;
    store.minPushIntervalSeconds ??= 0;
    store.pollIntervalSeconds ??= config.git.pollIntervalSeconds;
    if (store.sshCommand === undefined && config.git.sshCommand !== undefined) store.sshCommand = config.git.sshCommand;
    if (store.tokenFile === undefined && config.git.tokenFile !== undefined) store.tokenFile = config.git.tokenFile;
  }
}

/** Client certificates need TLS and a CA, and an auth.mode that uses them. */
function clientCertificateProblems(merged: Record<string, unknown>, origins: Map<string, Origin>): Problem[] {
  const auth = merged.auth;
  const tls = merged.tls;
  const mode = isPlainObject(auth) ? auth.mode : undefined;
  const clientCa = isPlainObject(tls) ? tls.clientCa : null;
  if (mode !== "basic" && mode !== "certificate" && mode !== "both" && mode !== "either") return []; // the schema reports it
  if (mode !== "basic" && (clientCa === null || clientCa === undefined)) {
    return [locate(["auth", "mode"], origins, `${mode} needs client certificates: set tls.cert, tls.key and tls.clientCa`)];
  }
  if (mode === "basic" && typeof clientCa === "string") {
    return [locate(["tls", "clientCa"], origins, "client certificates are asked for but auth.mode is basic: set auth.mode to certificate, both or either")];
  }
  return [];
}

function dedupe(problems: Problem[]): Problem[] {
  const seen = new Set<string>();
  return problems.filter((p) => {
    const id = `${p.file}\0${p.path}\0${p.message}`;
    return seen.has(id) ? false : (seen.add(id), true);
  });
}

function errorCode(e: unknown): string {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : e instanceof Error ? e.message : String(e);
}
