import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTempDir } from "../../test/support/git-fixtures.js";
import { ConfigError, type Problem } from "../errors/index.js";
import { loadConfig, type Config } from "./index.js";

let tmp: string;
beforeEach(async () => {
  tmp = await createTempDir("gitops-broker-config-");
});
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

async function write(rel: string, content: string): Promise<string> {
  const file = path.join(tmp, rel);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, content);
  return file;
}

async function problemsOf(promise: Promise<unknown>): Promise<Problem[]> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConfigError);
  return (error as ConfigError).problems;
}

describe("loadConfig", () => {
  it("fills every key with its default", async () => {
    const config = await loadConfig({ env: {}, argv: [], cwd: tmp });
    expect(config).toEqual<Config>({
      listen: { host: "127.0.0.1", port: 8080 },
      http: { headersTimeoutSeconds: 10, requestTimeoutSeconds: 30, idleTimeoutSeconds: 5, maxConnectionsPerClient: 256, trustedProxies: [], maxConnectionsPerProxy: 4096 },
      dataDir: path.join(tmp, ".gitops-broker"),
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
      leaderElection: { enabled: false, leaseName: "gitops-broker", namespace: null, identity: null, leaseDurationSeconds: 15, renewDeadlineSeconds: 10, retryPeriodSeconds: 2 },
      stores: {},
    });
  });

  it("takes leader election from file and env, and refuses durations that do not nest", async () => {
    await write("leader.yaml", "leaderElection:\n  leaseDurationSeconds: 30\n  renewDeadlineSeconds: 20\n  retryPeriodSeconds: 5\n");
    const env = {
      GITOPS_BROKER_LEADER_ELECTION: "true",
      GITOPS_BROKER_LEADER_ELECTION_LEASE_NAME: "prod-gitops-broker",
      GITOPS_BROKER_LEADER_ELECTION_NAMESPACE: "brokers",
      GITOPS_BROKER_LEADER_ELECTION_IDENTITY: "prod-gitops-broker-7d9f-x2",
    };
    const config = await loadConfig({ cwd: tmp, env, argv: ["--config", "leader.yaml"] });
    expect(config.leaderElection).toEqual({
      enabled: true,
      leaseName: "prod-gitops-broker",
      namespace: "brokers",
      identity: "prod-gitops-broker-7d9f-x2",
      leaseDurationSeconds: 30,
      renewDeadlineSeconds: 20,
      retryPeriodSeconds: 5,
    });
    await write("bad-leader.yaml", "leaderElection:\n  leaseDurationSeconds: 10\n  renewDeadlineSeconds: 10\n  retryPeriodSeconds: 10\n");
    expect(await problemsOf(loadConfig({ cwd: tmp, env: { GITOPS_BROKER_LEADER_ELECTION: "yes" }, argv: ["--config", "bad-leader.yaml"] }))).toEqual<Problem[]>([
      { file: "env", path: "GITOPS_BROKER_LEADER_ELECTION", message: "must be boolean" },
    ]);
    expect(await problemsOf(loadConfig({ cwd: tmp, env: {}, argv: ["--config", "bad-leader.yaml"] }))).toEqual<Problem[]>([
      { file: "bad-leader.yaml", path: "leaderElection.renewDeadlineSeconds", message: "must be smaller than leaderElection.leaseDurationSeconds (a leader stops before the others may take over)" },
      { file: "bad-leader.yaml", path: "leaderElection.retryPeriodSeconds", message: "must be smaller than leaderElection.renewDeadlineSeconds (a leader renews several times before its deadline)" },
    ]);
  });

  it("reads the metrics address from the config file and the environment", async () => {
    const file = await write("metrics.yaml", "metrics:\n  listen: 0.0.0.0:9090\n");
    const fromFile = await loadConfig({ env: {}, argv: ["--config", file], cwd: tmp });
    expect(fromFile.metrics.listen).toEqual({ host: "0.0.0.0", port: 9090 });
    const fromEnv = await loadConfig({ env: { GITOPS_BROKER_METRICS_LISTEN: "127.0.0.1:0" }, argv: ["--config", file], cwd: tmp });
    expect(fromEnv.metrics.listen).toEqual({ host: "127.0.0.1", port: 0 });
    const problems = await problemsOf(loadConfig({ env: { GITOPS_BROKER_METRICS_LISTEN: "nowhere" }, argv: [], cwd: tmp }));
    expect(problems.map((p) => p.path)).toEqual(["GITOPS_BROKER_METRICS_LISTEN"]);
  });

  it("applies defaults < config file < environment < flags", async () => {
    await write(
      "etc/broker.yaml",
      [
        "listen: 0.0.0.0:9000",
        "dataDir: data",
        "git:",
        "  remote: https://git.example.com/ops.git",
        "  branch: from-file",
        "  pollIntervalSeconds: 5",
        "  tokenFile: token",
        "log:",
        "  level: debug",
        "auth:",
        "  passwordFile: secrets/password",
      ].join("\n"),
    );
    const config = await loadConfig({
      cwd: tmp,
      env: {
        GITOPS_BROKER_LISTEN: "127.0.0.2:9001",
        GITOPS_BROKER_GIT_BRANCH: "from-env",
        GITOPS_BROKER_GIT_PUSH_TIMEOUT_SECONDS: "2.5",
        GITOPS_BROKER_GIT_MIN_PUSH_INTERVAL_SECONDS: "10",
        GITOPS_BROKER_USERNAME: "osb",
        GITOPS_BROKER_LOG_LEVEL: "",
      },
      argv: ["--config", "etc/broker.yaml", "--listen=[::1]:9002"],
    });
    expect(config.listen).toEqual({ host: "::1", port: 9002 });
    // Paths in the config file are relative to the file.
    expect(config.dataDir).toBe(path.join(tmp, "etc", "data"));
    expect(config.git).toEqual({
      remote: "https://git.example.com/ops.git",
      branch: "from-env",
      author: { name: "gitops-broker", email: "gitops-broker@localhost" },
      pushTimeoutSeconds: 2.5,
      activityTimeoutSeconds: 5,
      pollIntervalSeconds: 5,
      minPushIntervalSeconds: 10,
      tokenFile: path.join(tmp, "etc", "token"),
    });
    expect(config.auth).toEqual({ mode: "basic", username: "osb", password: null, passwordFile: path.join(tmp, "etc", "secrets", "password") });
    // An empty variable counts as unset.
    expect(config.log.level).toBe("debug");
  });

  it("lets the data dir flag beat the variable, and resolves both against the cwd", async () => {
    await write("broker.yaml", "dataDir: /from/file\n");
    const env = { GITOPS_BROKER_DATA_DIR: "env-data" };
    const fromEnv = await loadConfig({ cwd: tmp, env, argv: ["--config", "broker.yaml"] });
    expect(fromEnv.dataDir).toBe(path.join(tmp, "env-data"));
    const fromFlag = await loadConfig({ cwd: tmp, env, argv: ["--config", "broker.yaml", "--data-dir", "flag-data"] });
    expect(fromFlag.dataDir).toBe(path.join(tmp, "flag-data"));
  });

  it("lets a password variable replace a passwordFile from the file, and the reverse", async () => {
    await write("a.yaml", "auth:\n  passwordFile: /run/secrets/pw\n");
    await write("b.yaml", "auth:\n  password: from-file\n");
    const a = await loadConfig({ cwd: tmp, env: { GITOPS_BROKER_PASSWORD: "from-env" }, argv: ["--config", "a.yaml"] });
    expect(a.auth).toEqual({ mode: "basic", username: "broker", password: "from-env", passwordFile: null });
    const b = await loadConfig({ cwd: tmp, env: { GITOPS_BROKER_PASSWORD_FILE: "pw" }, argv: ["--config", "b.yaml"] });
    expect(b.auth).toEqual({ mode: "basic", username: "broker", password: null, passwordFile: path.join(tmp, "pw") });
  });

  it("takes the trusted proxies and their bound from file and env (a comma-separated list), and names an entry that is no address or CIDR block", async () => {
    await write("proxies.yaml", "http:\n  trustedProxies: [10.0.0.0/8, 'fd00::/8']\n  maxConnectionsPerProxy: 0\n");
    const fromFile = await loadConfig({ cwd: tmp, env: {}, argv: ["--config", "proxies.yaml"] });
    expect(fromFile.http).toMatchObject({ maxConnectionsPerClient: 256, trustedProxies: ["10.0.0.0/8", "fd00::/8"], maxConnectionsPerProxy: 0 });
    const fromEnv = await loadConfig({
      cwd: tmp,
      env: { GITOPS_BROKER_HTTP_TRUSTED_PROXIES: "192.168.0.0/16, 10.1.2.3", GITOPS_BROKER_HTTP_MAX_CONNECTIONS_PER_PROXY: "1000" },
      argv: ["--config", "proxies.yaml"],
    });
    expect(fromEnv.http).toMatchObject({ trustedProxies: ["192.168.0.0/16", "10.1.2.3"], maxConnectionsPerProxy: 1000 });

    await write("bad-proxies.yaml", "http:\n  trustedProxies: [10.0.0.0/8, 10.0.0.0/33, ingress-nginx]\n  maxConnectionsPerProxy: -1\n");
    expect(await problemsOf(loadConfig({ cwd: tmp, env: {}, argv: ["--config", "bad-proxies.yaml"] }))).toEqual<Problem[]>([
      { file: "bad-proxies.yaml", path: "http.maxConnectionsPerProxy", message: "must be >= 0" },
    ]);
    await write("bad-ranges.yaml", "http:\n  trustedProxies: [10.0.0.0/8, 10.0.0.0/33, ingress-nginx]\n");
    expect(await problemsOf(loadConfig({ cwd: tmp, env: {}, argv: ["--config", "bad-ranges.yaml"] }))).toEqual<Problem[]>([
      { file: "bad-ranges.yaml", path: "http.trustedProxies.1", message: '"10.0.0.0/33": the prefix length of an IPv4 block is at most 32' },
      { file: "bad-ranges.yaml", path: "http.trustedProxies.2", message: '"ingress-nginx" is not an IP address or CIDR block (e.g. 10.0.0.0/8, 192.168.1.7, fd00::/8)' },
    ]);
    expect(await problemsOf(loadConfig({ cwd: tmp, env: { GITOPS_BROKER_HTTP_TRUSTED_PROXIES: "10.0.0.0/8,,fd00::/129" } }))).toEqual<Problem[]>([
      { file: "env", path: "GITOPS_BROKER_HTTP_TRUSTED_PROXIES", message: "must NOT have fewer than 1 characters" },
    ]);
    expect(await problemsOf(loadConfig({ cwd: tmp, env: { GITOPS_BROKER_HTTP_TRUSTED_PROXIES: "10.0.0.0/8,fd00::/129" } }))).toEqual<Problem[]>([
      { file: "env", path: "GITOPS_BROKER_HTTP_TRUSTED_PROXIES", message: '"fd00::/129": the prefix length of an IPv6 block is at most 128' },
    ]);
  });

  it("takes the records retention from file and env, and refuses a negative one", async () => {
    await write("records.yaml", "records:\n  gcIntervalSeconds: 5\n  gcBatchSize: 10\n");
    const fromFile = await loadConfig({ cwd: tmp, env: { GITOPS_BROKER_RECORDS_RETENTION_DAYS: "0" }, argv: ["--config", "records.yaml"] });
    expect(fromFile.records).toEqual({ retentionDays: 0, gcIntervalSeconds: 5, gcBatchSize: 10 });
    await write("negative.yaml", "records:\n  retentionDays: -1\n");
    expect(await problemsOf(loadConfig({ cwd: tmp, env: {}, argv: ["--config", "negative.yaml"] }))).toEqual<Problem[]>([
      { file: "negative.yaml", path: "records.retentionDays", message: "must be >= 0" },
    ]);
    expect(await problemsOf(loadConfig({ cwd: tmp, env: { GITOPS_BROKER_RECORDS_RETENTION_DAYS: "1.5" } }))).toEqual<Problem[]>([
      { file: "env", path: "GITOPS_BROKER_RECORDS_RETENTION_DAYS", message: "must be integer" },
    ]);
  });

  it("takes the push window from file and env, and refuses one below 0 or above an hour", async () => {
    await write("paced.yaml", "git:\n  minPushIntervalSeconds: 10\n");
    expect((await loadConfig({ cwd: tmp, env: {}, argv: ["--config", "paced.yaml"] })).git.minPushIntervalSeconds).toBe(10);
    expect((await loadConfig({ cwd: tmp, env: { GITOPS_BROKER_GIT_MIN_PUSH_INTERVAL_SECONDS: "2.5" }, argv: ["--config", "paced.yaml"] })).git.minPushIntervalSeconds).toBe(2.5);
    await write("negative-window.yaml", "git:\n  minPushIntervalSeconds: -1\n");
    expect(await problemsOf(loadConfig({ cwd: tmp, env: {}, argv: ["--config", "negative-window.yaml"] }))).toEqual<Problem[]>([
      { file: "negative-window.yaml", path: "git.minPushIntervalSeconds", message: "must be >= 0" },
    ]);
    expect(await problemsOf(loadConfig({ cwd: tmp, env: { GITOPS_BROKER_GIT_MIN_PUSH_INTERVAL_SECONDS: "3601" } }))).toEqual<Problem[]>([
      { file: "env", path: "GITOPS_BROKER_GIT_MIN_PUSH_INTERVAL_SECONDS", message: "must be <= 3600" },
    ]);
  });

  it("takes the webhook secret and reconcile limits from file and env, secretFile resolved against the file", async () => {
    await write("etc/w.yaml", "webhook:\n  secretFile: hook-secret\nreconcile:\n  batchSize: 2\n  retrySeconds: 5\n");
    const fromFile = await loadConfig({ cwd: tmp, env: { GITOPS_BROKER_RECONCILE_MAX_PER_SECOND: "3" }, argv: ["--config", "etc/w.yaml"] });
    expect(fromFile.webhook).toEqual({ secret: null, secretFile: path.join(tmp, "etc/hook-secret") });
    expect(fromFile.reconcile).toEqual({ maxPerSecond: 3, batchSize: 2, retrySeconds: 5 });
    const fromEnv = await loadConfig({ cwd: tmp, env: { GITOPS_BROKER_WEBHOOK_SECRET: "s" }, argv: ["--config", "etc/w.yaml"] });
    expect(fromEnv.webhook).toEqual({ secret: "s", secretFile: null });
    const both = await problemsOf(
      loadConfig({ cwd: tmp, env: { GITOPS_BROKER_WEBHOOK_SECRET: "s", GITOPS_BROKER_WEBHOOK_SECRET_FILE: "f" } }),
    );
    expect(both).toEqual<Problem[]>([
      { file: "env", path: "GITOPS_BROKER_WEBHOOK_SECRET_FILE", message: "conflicts with GITOPS_BROKER_WEBHOOK_SECRET: set only one" },
    ]);
    await write("both.yaml", "webhook:\n  secret: x\n  secretFile: /f\nreconcile:\n  batchSize: 0\n");
    expect(await problemsOf(loadConfig({ cwd: tmp, env: {}, argv: ["--config", "both.yaml"] }))).toEqual<Problem[]>([
      { file: "both.yaml", path: "reconcile.batchSize", message: "must be >= 1" },
    ]);
    await write("pair.yaml", "webhook:\n  secret: x\n  secretFile: /f\n");
    expect(await problemsOf(loadConfig({ cwd: tmp, env: {}, argv: ["--config", "pair.yaml"] }))).toEqual<Problem[]>([
      { file: "pair.yaml", path: "webhook.secretFile", message: "webhook.secret and webhook.secretFile exclude each other: set one" },
    ]);
  });

  it("accepts TLS files that exist, from the file or from both variables", async () => {
    const cert = await write("tls/cert.pem", "CERT");
    const key = await write("tls/key.pem", "KEY");
    await write("broker.yaml", "tls:\n  cert: tls/cert.pem\n  key: tls/key.pem\n");
    expect((await loadConfig({ cwd: tmp, env: {}, argv: ["--config", "broker.yaml"] })).tls).toEqual({ cert, key, clientCa: null, clientSubjects: [] });
    const env = { GITOPS_BROKER_TLS_CERT: "tls/cert.pem", GITOPS_BROKER_TLS_KEY: "tls/key.pem" };
    expect((await loadConfig({ cwd: tmp, env })).tls).toEqual({ cert, key, clientCa: null, clientSubjects: [] });
  });

  it("reads client certificates: the CA file, the allowed subjects and auth.mode, from the file or the variables", async () => {
    const cert = await write("tls/cert.pem", "CERT");
    const key = await write("tls/key.pem", "KEY");
    const clientCa = await write("tls/client-ca.pem", "CA");
    const subject = "/C=DE/O=SAP SE/OU=SAP Cloud Platform Clients/CN=service-manager";
    await write(
      "mtls.yaml",
      `auth:\n  mode: both\ntls:\n  cert: tls/cert.pem\n  key: tls/key.pem\n  clientCa: tls/client-ca.pem\n  clientSubjects:\n    - ${subject}\n    - CN=other,O=Acme\n`,
    );
    const config = await loadConfig({ cwd: tmp, env: {}, argv: ["--config", "mtls.yaml"] });
    expect(config.auth.mode).toBe("both");
    expect(config.tls).toEqual({ cert, key, clientCa, clientSubjects: [subject, "CN=other,O=Acme"] });
    const env = {
      GITOPS_BROKER_TLS_CERT: "tls/cert.pem",
      GITOPS_BROKER_TLS_KEY: "tls/key.pem",
      GITOPS_BROKER_TLS_CLIENT_CA: "tls/client-ca.pem",
      GITOPS_BROKER_TLS_CLIENT_SUBJECT: subject,
      GITOPS_BROKER_AUTH_MODE: "certificate",
    };
    const fromEnv = await loadConfig({ cwd: tmp, env });
    expect(fromEnv.auth.mode).toBe("certificate");
    expect(fromEnv.tls).toEqual({ cert, key, clientCa, clientSubjects: [subject] });
  });

  it("reports client-certificate settings that do not fit together, and subjects it cannot read", async () => {
    await write("cert.pem", "CERT");
    await write("key.pem", "KEY");
    await write("no-ca.yaml", "auth:\n  mode: either\ntls:\n  cert: cert.pem\n  key: key.pem\n");
    await write("basic.yaml", "tls:\n  cert: cert.pem\n  key: key.pem\n  clientCa: ca.pem\n  clientSubjects: [\"/C=DE/CN\", \"CN=a,=b\"]\n");
    expect(await problemsOf(loadConfig({ cwd: tmp, env: {}, argv: ["--config", "no-ca.yaml"] }))).toEqual<Problem[]>([
      { file: "no-ca.yaml", path: "auth.mode", message: "either needs client certificates: set tls.cert, tls.key and tls.clientCa" },
    ]);
    expect(await problemsOf(loadConfig({ cwd: tmp, env: {}, argv: ["--config", "basic.yaml"] }))).toEqual<Problem[]>([
      { file: "basic.yaml", path: "tls.clientSubjects.0", message: '"CN" is not TYPE=value (expected /C=DE/O=Org/CN=name)' },
      { file: "basic.yaml", path: "tls.clientSubjects.1", message: '"=b" is not TYPE=value (expected CN=name,O=Org,C=DE)' },
      { file: "basic.yaml", path: "tls.clientCa", message: "client certificates are asked for but auth.mode is basic: set auth.mode to certificate, both or either" },
      { file: "basic.yaml", path: "tls.clientCa", message: `cannot read ${JSON.stringify(path.join(tmp, "ca.pem"))} (ENOENT)` },
    ]);
    expect(await problemsOf(loadConfig({ cwd: tmp, env: { GITOPS_BROKER_AUTH_MODE: "mtls" } }))).toEqual<Problem[]>([
      { file: "env", path: "GITOPS_BROKER_AUTH_MODE", message: "must be one of basic, certificate, both, either" },
    ]);
  });

  it("keeps defaults for an empty mapping and an empty file", async () => {
    await write("empty.yaml", "");
    await write("git.yaml", "git: {}\n");
    const defaults = await loadConfig({ cwd: tmp, env: {} });
    expect(await loadConfig({ cwd: tmp, env: {}, argv: ["--config", "empty.yaml"] })).toEqual(defaults);
    expect(await loadConfig({ cwd: tmp, env: {}, argv: ["--config", "git.yaml"] })).toEqual(defaults);
  });
});

describe("loadConfig errors", () => {
  it("names unknown keys, wrong types and bad values of the config file by their path", async () => {
    await write(
      "broker.yaml",
      [
        "listen: x",
        "catalog:",
        "  reloadIntervalSeconds: 5",
        "git:",
        "  brnach: main",
        "  branch: 3",
        "  pushTimeoutSeconds: 0",
        "  author:",
        "    name: null",
        "log:",
        "  level: verbose",
        "status:",
        "  mode: watch",
      ].join("\n"),
    );
    const problems = await problemsOf(loadConfig({ cwd: tmp, env: {}, argv: ["--config", "broker.yaml"] }));
    expect(problems).toEqual<Problem[]>([
      { file: "broker.yaml", path: "listen", message: '"x" is not HOST:PORT' },
      { file: "broker.yaml", path: "catalog", message: "unknown key" },
      { file: "broker.yaml", path: "git.brnach", message: "unknown key" },
      { file: "broker.yaml", path: "git.branch", message: "must be string" },
      { file: "broker.yaml", path: "git.author.name", message: "must be string" },
      { file: "broker.yaml", path: "git.pushTimeoutSeconds", message: "must be > 0" },
      { file: "broker.yaml", path: "log.level", message: "must be one of fatal, error, warn, info, debug, trace" },
      { file: "broker.yaml", path: "status.mode", message: "must be one of commit, live" },
    ]);
  });

  it("reports a half-set and an unreadable tls section at the keys", async () => {
    await write("key.pem", "KEY");
    await write("half.yaml", "tls:\n  cert: cert.pem\n");
    await write("missing.yaml", "tls:\n  cert: nowhere/cert.pem\n  key: key.pem\n");
    expect(await problemsOf(loadConfig({ cwd: tmp, env: {}, argv: ["--config", "half.yaml"] }))).toEqual<Problem[]>([
      { file: "half.yaml", path: "tls.key", message: "is required" },
      { file: "half.yaml", path: "tls.cert", message: `cannot read ${JSON.stringify(path.join(tmp, "cert.pem"))} (ENOENT)` },
    ]);
    expect(await problemsOf(loadConfig({ cwd: tmp, env: {}, argv: ["--config", "missing.yaml"] }))).toEqual<Problem[]>([
      { file: "missing.yaml", path: "tls.cert", message: `cannot read ${JSON.stringify(path.join(tmp, "nowhere/cert.pem"))} (ENOENT)` },
    ]);
  });

  it("names the environment variable behind a problem", async () => {
    const problems = await problemsOf(
      loadConfig({
        cwd: tmp,
        env: {
          GITOPS_BROKER_LISTEN: "localhost",
          GITOPS_BROKER_LOG_LEVEL: "loud",
          GITOPS_BROKER_GIT_POLL_INTERVAL_SECONDS: "often",
          GITOPS_BROKER_TLS_CERT: "cert.pem",
          GITOPS_BROKER_PASSWORD: "hunter2-secret",
          GITOPS_BROKER_PASSWORD_FILE: "pw",
        },
      }),
    );
    expect(problems).toEqual<Problem[]>([
      { file: "env", path: "GITOPS_BROKER_LISTEN", message: '"localhost" is not HOST:PORT' },
      { file: "env", path: "GITOPS_BROKER_PASSWORD_FILE", message: "conflicts with GITOPS_BROKER_PASSWORD: set only one" },
      { file: "env", path: "GITOPS_BROKER_TLS_CERT", message: "needs GITOPS_BROKER_TLS_KEY as well (set both or neither)" },
      { file: "env", path: "GITOPS_BROKER_GIT_POLL_INTERVAL_SECONDS", message: "must be number" },
      { file: "env", path: "GITOPS_BROKER_LOG_LEVEL", message: "must be one of fatal, error, warn, info, debug, trace" },
    ]);
  });

  it("names a branch, a remote and an author the git writer would refuse, by the key that set them", async () => {
    const fromEnv = await problemsOf(
      loadConfig({
        cwd: tmp,
        env: { GITOPS_BROKER_GIT_BRANCH: "bad..branch", GITOPS_BROKER_GIT_REMOTE: "--upload-pack=touch /tmp/x", GITOPS_BROKER_GIT_AUTHOR_NAME: "Eve <eve@example.com>" },
      }),
    );
    expect(fromEnv).toEqual<Problem[]>([
      { file: "env", path: "GITOPS_BROKER_GIT_BRANCH", message: '"bad..branch" is not a valid branch name (git check-ref-format --branch)' },
      { file: "env", path: "GITOPS_BROKER_GIT_REMOTE", message: "must not start with '-' (git would read it as an option)" },
      { file: "env", path: "GITOPS_BROKER_GIT_AUTHOR_NAME", message: "must not be blank nor hold '<', '>' or a line break (a commit's author line)" },
    ]);
    for (const branch of ["@", "main.lock", "a b", "refs/heads/", ".hidden", "x~1"]) {
      const problems = await problemsOf(loadConfig({ cwd: tmp, env: { GITOPS_BROKER_GIT_BRANCH: branch } }));
      expect(problems.map((p) => p.path), branch).toEqual(["GITOPS_BROKER_GIT_BRANCH"]);
    }
    const file = await write("git.yaml", "git:\n  branch: release/v1..x\n");
    expect(await problemsOf(loadConfig({ cwd: tmp, argv: ["--config", file] }))).toEqual<Problem[]>([
      { file, path: "git.branch", message: '"release/v1..x" is not a valid branch name (git check-ref-format --branch)' },
    ]);
    // What git accepts passes.
    await expect(loadConfig({ cwd: tmp, env: { GITOPS_BROKER_GIT_BRANCH: "release/v1.2" } })).resolves.toMatchObject({ git: { branch: "release/v1.2" } });
  });

  it("names an out-of-range port by the variable and a missing TLS file by its variable", async () => {
    await write("cert.pem", "CERT");
    const problems = await problemsOf(
      loadConfig({ cwd: tmp, env: { GITOPS_BROKER_LISTEN: "0.0.0.0:70000", GITOPS_BROKER_TLS_CERT: "cert.pem", GITOPS_BROKER_TLS_KEY: "key.pem" } }),
    );
    expect(problems).toEqual<Problem[]>([
      { file: "env", path: "GITOPS_BROKER_LISTEN", message: "must be <= 65535" },
      { file: "env", path: "GITOPS_BROKER_TLS_KEY", message: `cannot read ${JSON.stringify(path.join(tmp, "key.pem"))} (ENOENT)` },
    ]);
  });

  it("names bad flags, and reports them with the other sources' problems", async () => {
    const problems = await problemsOf(
      loadConfig({ cwd: tmp, env: { GITOPS_BROKER_LOG_LEVEL: "loud" }, argv: ["--listen", "nope", "--verbose", "extra", "--data-dir", "--config"] }),
    );
    // Problems found while reading the sources come first, then those of the schema.
    expect(problems).toEqual<Problem[]>([
      { file: "flags", path: "--verbose", message: "unknown flag" },
      { file: "flags", path: "extra", message: "unexpected argument" },
      { file: "flags", path: "--data-dir", message: "needs a value" },
      { file: "flags", path: "--config", message: "needs a value" },
      { file: "flags", path: "--listen", message: '"nope" is not HOST:PORT' },
      { file: "env", path: "GITOPS_BROKER_LOG_LEVEL", message: "must be one of fatal, error, warn, info, debug, trace" },
    ]);
  });

  it("reports a missing config file, a non-mapping and password plus passwordFile", async () => {
    await write("list.yaml", "- a\n- b\n");
    await write("both.yaml", "auth:\n  password: x\n  passwordFile: /pw\n");
    const missing = await problemsOf(loadConfig({ cwd: tmp, env: {}, argv: ["--config", "nope.yaml"] }));
    expect(missing).toEqual<Problem[]>([{ file: "nope.yaml", path: "", message: "cannot read config file (ENOENT)" }]);
    expect(await problemsOf(loadConfig({ cwd: tmp, env: {}, argv: ["--config", "list.yaml"] }))).toEqual<Problem[]>([
      { file: "list.yaml", path: "", message: "must be a mapping of config keys" },
    ]);
    expect(await problemsOf(loadConfig({ cwd: tmp, env: {}, argv: ["--config", "both.yaml"] }))).toEqual<Problem[]>([
      { file: "both.yaml", path: "auth.passwordFile", message: "auth.password and auth.passwordFile exclude each other: set one" },
    ]);
  });

  it("never puts a password into an error", async () => {
    const secret = "s3cret-Pa55word";
    // yaml's default ("pretty") errors would quote the offending line.
    await write("syntax.yaml", `auth:\n  password: ${secret}: x\n`);
    await write("type.yaml", `auth:\n  password: [${secret}]\n`);
    for (const file of ["syntax.yaml", "type.yaml"]) {
      const error = await loadConfig({ cwd: tmp, env: {}, argv: ["--config", file] }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ConfigError);
      const text = JSON.stringify((error as ConfigError).toJSON());
      expect(text).toContain(file);
      expect(text).not.toContain(secret);
    }
  });

  it("locates YAML syntax errors by line and column", async () => {
    await write("dup.yaml", "log:\n  level: info\nlog:\n  level: debug\n");
    const problems = await problemsOf(loadConfig({ cwd: tmp, env: {}, argv: ["--config", "dup.yaml"] }));
    expect(problems).toEqual<Problem[]>([{ file: "dup.yaml", path: "", message: "line 3, column 1: Map keys must be unique" }]);
  });
});
