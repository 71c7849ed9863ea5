import path from "node:path";
import { LineCounter, parseDocument } from "yaml";
import type { Problem } from "../errors/index.js";

/**
 * The three sources on top of the defaults: config file, environment, flags. Each becomes a list
 * of leaf assignments that remember where they came from, so that a validation error of the merged
 * configuration can name the file key, the variable or the flag that caused it.
 */

/** Where a value came from: a config file (the error names the key), or a variable or flag (`name`). */
export interface Origin {
  file: string;
  name?: string;
}

export interface Assignment {
  path: string[];
  value: unknown;
  origin: Origin;
}

export interface SourceResult {
  assignments: Assignment[];
  problems: Problem[];
  /** Errors behind the problems, kept as causes. */
  causes: unknown[];
}

/** Keys holding file paths: made absolute against the config file's directory or the cwd. */
const PATH_KEYS = new Set(["dataDir", "git.tokenFile", "auth.passwordFile", "tls.cert", "tls.key", "tls.clientCa", "webhook.secretFile"]);

function resolvePathKey(key: string[], value: unknown, base: string): unknown {
  const isPath = PATH_KEYS.has(key.join(".")) || (key.length === 3 && key[0] === "stores" && key[2] === "tokenFile");
  return isPath && typeof value === "string" && value !== "" ? path.resolve(base, value) : value;
}

/** `HOST:PORT` or `[IPv6]:PORT`; the port range is left to the schema. */
export function parseListen(s: string): { host: string; port: number } | null {
  const m = /^\[([^\]]+)\]:(\d{1,5})$/.exec(s) ?? /^([^:\s]+):(\d{1,5})$/.exec(s);
  return m?.[1] !== undefined && m[2] !== undefined ? { host: m[1], port: Number(m[2]) } : null;
}

function listenProblem(value: string): string {
  return `${JSON.stringify(value)} is not HOST:PORT`;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

// ---------------------------------------------------------------------------
// Config file
// ---------------------------------------------------------------------------

/**
 * Parse the YAML config file into assignments. `label` is the path as the user wrote it (used in
 * messages), `absPath` the resolved one. Parse errors carry line and column but never the source
 * line: it could hold a password.
 */
export function fileSource(label: string, absPath: string, text: string): SourceResult {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: false, lineCounter });
  if (doc.errors.length > 0) {
    return {
      assignments: [],
      problems: doc.errors.map((e) => {
        const { line, col } = lineCounter.linePos(e.pos[0]);
        return { file: label, path: "", message: `line ${line}, column ${col}: ${e.message}` };
      }),
      causes: [doc.errors[0]],
    };
  }
  const data: unknown = doc.toJS();
  if (data === null || data === undefined) return { assignments: [], problems: [], causes: [] };
  if (!isPlainObject(data)) {
    return { assignments: [], problems: [{ file: label, path: "", message: "must be a mapping of config keys" }], causes: [] };
  }

  const origin: Origin = { file: label };
  const problems: Problem[] = [];
  if (typeof data.listen === "string") {
    const listen = parseListen(data.listen);
    if (listen === null) problems.push({ file: label, path: "listen", message: listenProblem(data.listen) });
    data.listen = listen ?? undefined;
  }

  if (isPlainObject(data.metrics) && typeof data.metrics.listen === "string") {
    const listen = parseListen(data.metrics.listen);
    if (listen === null) problems.push({ file: label, path: "metrics.listen", message: listenProblem(data.metrics.listen) });
    data.metrics.listen = listen ?? undefined;
  }

  const assignments: Assignment[] = [];
  const base = path.dirname(absPath);
  const flatten = (value: unknown, key: string[]): void => {
    if (isPlainObject(value) && Object.keys(value).length > 0) {
      for (const [k, v] of Object.entries(value)) flatten(v, [...key, k]);
    } else if (value !== undefined && key.length > 0) {
      assignments.push({ path: key, value: resolvePathKey(key, value, base), origin });
    }
  };
  flatten(data, []);
  return { assignments, problems, causes: [] };
}

// ---------------------------------------------------------------------------
// Environment
// ---------------------------------------------------------------------------

type EnvKind = "string" | "number" | "path" | "boolean" | "list";

/** Variables that set one key each. An empty variable counts as unset. */
const ENV_KEYS: Record<string, { key: string[]; kind: EnvKind }> = {
  GITOPS_BROKER_DATA_DIR: { key: ["dataDir"], kind: "path" },
  GITOPS_BROKER_HTTP_HEADERS_TIMEOUT_SECONDS: { key: ["http", "headersTimeoutSeconds"], kind: "number" },
  GITOPS_BROKER_HTTP_REQUEST_TIMEOUT_SECONDS: { key: ["http", "requestTimeoutSeconds"], kind: "number" },
  GITOPS_BROKER_HTTP_IDLE_TIMEOUT_SECONDS: { key: ["http", "idleTimeoutSeconds"], kind: "number" },
  GITOPS_BROKER_HTTP_MAX_CONNECTIONS_PER_CLIENT: { key: ["http", "maxConnectionsPerClient"], kind: "number" },
  GITOPS_BROKER_HTTP_TRUSTED_PROXIES: { key: ["http", "trustedProxies"], kind: "list" },
  GITOPS_BROKER_HTTP_MAX_CONNECTIONS_PER_PROXY: { key: ["http", "maxConnectionsPerProxy"], kind: "number" },
  GITOPS_BROKER_GIT_REMOTE: { key: ["git", "remote"], kind: "string" },
  GITOPS_BROKER_GIT_BRANCH: { key: ["git", "branch"], kind: "string" },
  GITOPS_BROKER_GIT_AUTHOR_NAME: { key: ["git", "author", "name"], kind: "string" },
  GITOPS_BROKER_GIT_AUTHOR_EMAIL: { key: ["git", "author", "email"], kind: "string" },
  GITOPS_BROKER_GIT_PUSH_TIMEOUT_SECONDS: { key: ["git", "pushTimeoutSeconds"], kind: "number" },
  GITOPS_BROKER_GIT_ACTIVITY_TIMEOUT_SECONDS: { key: ["git", "activityTimeoutSeconds"], kind: "number" },
  GITOPS_BROKER_GIT_POLL_INTERVAL_SECONDS: { key: ["git", "pollIntervalSeconds"], kind: "number" },
  GITOPS_BROKER_GIT_MIN_PUSH_INTERVAL_SECONDS: { key: ["git", "minPushIntervalSeconds"], kind: "number" },
  GITOPS_BROKER_GIT_SSH_COMMAND: { key: ["git", "sshCommand"], kind: "string" },
  GITOPS_BROKER_GIT_TOKEN_FILE: { key: ["git", "tokenFile"], kind: "path" },
  GITOPS_BROKER_USERNAME: { key: ["auth", "username"], kind: "string" },
  GITOPS_BROKER_AUTH_MODE: { key: ["auth", "mode"], kind: "string" },
  GITOPS_BROKER_TLS_CLIENT_CA: { key: ["tls", "clientCa"], kind: "path" },
  GITOPS_BROKER_LOG_LEVEL: { key: ["log", "level"], kind: "string" },
  GITOPS_BROKER_STATUS_MODE: { key: ["status", "mode"], kind: "string" },
  GITOPS_BROKER_SCHEDULER: { key: ["scheduler", "type"], kind: "string" },
  GITOPS_BROKER_RECONCILE_MAX_PER_SECOND: { key: ["reconcile", "maxPerSecond"], kind: "number" },
  GITOPS_BROKER_RECONCILE_BATCH_SIZE: { key: ["reconcile", "batchSize"], kind: "number" },
  GITOPS_BROKER_RECORDS_RETENTION_DAYS: { key: ["records", "retentionDays"], kind: "number" },
  GITOPS_BROKER_LEADER_ELECTION: { key: ["leaderElection", "enabled"], kind: "boolean" },
  GITOPS_BROKER_LEADER_ELECTION_LEASE_NAME: { key: ["leaderElection", "leaseName"], kind: "string" },
  GITOPS_BROKER_LEADER_ELECTION_NAMESPACE: { key: ["leaderElection", "namespace"], kind: "string" },
  GITOPS_BROKER_LEADER_ELECTION_IDENTITY: { key: ["leaderElection", "identity"], kind: "string" },
};

/** Numbers are converted when they look like one; anything else goes through as a string so the schema reports it. */
function envValue(raw: string, kind: EnvKind, cwd: string): unknown {
  if (kind === "number") return /^\s*\d+(\.\d+)?\s*$/.test(raw) ? Number(raw) : raw;
  if (kind === "boolean") return raw === "true" ? true : raw === "false" ? false : raw;
  // Comma-separated; blanks around an item are dropped, an empty item is kept for the checks to name.
  if (kind === "list") return raw.split(",").map((item) => item.trim());
  if (kind === "path") return path.resolve(cwd, raw);
  return raw;
}

export function envSource(env: Record<string, string | undefined>, cwd: string): SourceResult {
  const get = (name: string): string | undefined => (env[name] === "" ? undefined : env[name]);
  const assignments: Assignment[] = [];
  const problems: Problem[] = [];
  const set = (name: string, key: string[], value: unknown): void => {
    assignments.push({ path: key, value, origin: { file: "env", name } });
  };

  for (const [name, { key, kind }] of Object.entries(ENV_KEYS)) {
    const raw = get(name);
    if (raw !== undefined) set(name, key, envValue(raw, kind, cwd));
  }

  const clientSubject = get("GITOPS_BROKER_TLS_CLIENT_SUBJECT");
  if (clientSubject !== undefined) set("GITOPS_BROKER_TLS_CLIENT_SUBJECT", ["tls", "clientSubjects"], [clientSubject]);

  const metricsListenRaw = get("GITOPS_BROKER_METRICS_LISTEN");
  if (metricsListenRaw !== undefined) {
    const listen = parseListen(metricsListenRaw);
    if (listen === null) problems.push({ file: "env", path: "GITOPS_BROKER_METRICS_LISTEN", message: listenProblem(metricsListenRaw) });
    else set("GITOPS_BROKER_METRICS_LISTEN", ["metrics", "listen"], listen);
  }

  const listenRaw = get("GITOPS_BROKER_LISTEN");
  if (listenRaw !== undefined) {
    const listen = parseListen(listenRaw);
    if (listen === null) problems.push({ file: "env", path: "GITOPS_BROKER_LISTEN", message: listenProblem(listenRaw) });
    else {
      set("GITOPS_BROKER_LISTEN", ["listen", "host"], listen.host);
      set("GITOPS_BROKER_LISTEN", ["listen", "port"], listen.port);
    }
  }

  // A secret and its file are two forms of one setting: either one replaces the other.
  const secretPair = (name: string, section: string, key: string): void => {
    const value = get(name);
    const file = get(`${name}_FILE`);
    if (value !== undefined && file !== undefined) {
      problems.push({ file: "env", path: `${name}_FILE`, message: `conflicts with ${name}: set only one` });
    } else if (value !== undefined) {
      set(name, [section, key], value);
      set(name, [section, `${key}File`], null);
    } else if (file !== undefined) {
      set(`${name}_FILE`, [section, `${key}File`], path.resolve(cwd, file));
      set(`${name}_FILE`, [section, key], null);
    }
  };
  secretPair("GITOPS_BROKER_PASSWORD", "auth", "password");
  secretPair("GITOPS_BROKER_WEBHOOK_SECRET", "webhook", "secret");

  const cert = get("GITOPS_BROKER_TLS_CERT");
  const key = get("GITOPS_BROKER_TLS_KEY");
  if (cert !== undefined && key !== undefined) {
    set("GITOPS_BROKER_TLS_CERT", ["tls", "cert"], path.resolve(cwd, cert));
    set("GITOPS_BROKER_TLS_KEY", ["tls", "key"], path.resolve(cwd, key));
  } else if (cert !== undefined || key !== undefined) {
    const [given, missing] = cert !== undefined ? ["GITOPS_BROKER_TLS_CERT", "GITOPS_BROKER_TLS_KEY"] : ["GITOPS_BROKER_TLS_KEY", "GITOPS_BROKER_TLS_CERT"];
    problems.push({ file: "env", path: given, message: `needs ${missing} as well (set both or neither)` });
  }

  return { assignments, problems, causes: [] };
}

// ---------------------------------------------------------------------------
// Flags (the arguments after `serve`)
// ---------------------------------------------------------------------------

const FLAGS = ["--config", "--data-dir", "--listen"] as const;
type Flag = (typeof FLAGS)[number];

export interface FlagsResult extends SourceResult {
  /** `--config` as given, if any. */
  configFile: string | undefined;
}

/** `--flag value` or `--flag=value`; a repeated flag: the last one wins. */
export function flagsSource(argv: readonly string[], cwd: string): FlagsResult {
  const values = new Map<Flag, string>();
  const problems: Problem[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf("=");
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (!(FLAGS as readonly string[]).includes(name)) {
      problems.push({ file: "flags", path: arg, message: name.startsWith("-") ? "unknown flag" : "unexpected argument" });
      continue;
    }
    let value: string | undefined;
    if (eq > 0) value = arg.slice(eq + 1);
    else if (argv[i + 1]?.startsWith("--") === false) value = argv[++i];
    if (value) values.set(name as Flag, value);
    else problems.push({ file: "flags", path: name, message: "needs a value" });
  }

  const assignments: Assignment[] = [];
  const dataDir = values.get("--data-dir");
  if (dataDir !== undefined) {
    assignments.push({ path: ["dataDir"], value: path.resolve(cwd, dataDir), origin: { file: "flags", name: "--data-dir" } });
  }
  const listenRaw = values.get("--listen");
  if (listenRaw !== undefined) {
    const listen = parseListen(listenRaw);
    if (listen === null) problems.push({ file: "flags", path: "--listen", message: listenProblem(listenRaw) });
    else {
      const origin = { file: "flags", name: "--listen" };
      assignments.push({ path: ["listen", "host"], value: listen.host, origin }, { path: ["listen", "port"], value: listen.port, origin });
    }
  }
  return { assignments, problems, causes: [], configFile: values.get("--config") };
}
