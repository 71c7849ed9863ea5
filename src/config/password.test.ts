import { chmod, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTempDir } from "../../test/support/git-fixtures.js";
import { ConfigError } from "../errors/index.js";
import { ensurePassword, readPassword, readWebhookSecret, type AuthConfig } from "./index.js";

let tmp: string;
let dataDir: string;
beforeEach(async () => {
  tmp = await createTempDir("gitops-broker-password-");
  dataDir = path.join(tmp, "data");
});
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

function auth(overrides: Partial<AuthConfig> = {}): { auth: AuthConfig } {
  return { auth: { mode: "basic", username: "broker", password: null, passwordFile: null, ...overrides } };
}

async function errorOf(promise: Promise<unknown>): Promise<ConfigError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConfigError);
  return error as ConfigError;
}

describe("ensurePassword", () => {
  it("generates a password once, stores it with mode 0600 and reuses it", async () => {
    const first = await ensurePassword({ dataDir, config: auth() });
    const file = path.join(dataDir, "password");

    expect(first.username).toBe("broker");
    expect(first.password).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(first.generatedFile).toBe(file);
    expect(first.generatedNow).toBe(true);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(dataDir)).mode & 0o777).toBe(0o700);
    expect((await readFile(file, "utf8")).trim()).toBe(first.password);
    expect(await readdir(dataDir)).toEqual(["password"]);

    const second = await ensurePassword({ dataDir, config: auth() });
    expect(second).toEqual({ ...first, generatedNow: false });
  });

  it("hands two brokers starting at once the same password", async () => {
    const [a, b] = await Promise.all([ensurePassword({ dataDir, config: auth() }), ensurePassword({ dataDir, config: auth() })]);
    expect(a.password).toBe(b.password);
    expect([a.generatedNow, b.generatedNow].sort()).toEqual([false, true]);
    expect((await readFile(path.join(dataDir, "password"), "utf8")).trim()).toBe(a.password);
    expect(await readdir(dataDir)).toEqual(["password"]);
  });

  it("returns a configured password and writes nothing", async () => {
    expect(await ensurePassword({ dataDir, config: auth({ username: "osb", password: "pw" }) })).toEqual({ username: "osb", password: "pw" });
    await expect(stat(dataDir)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("reads a private passwordFile, trimmed", async () => {
    const file = path.join(tmp, "pw");
    await writeFile(file, "  from-file\n", { mode: 0o600 });
    expect(await ensurePassword({ dataDir, config: auth({ passwordFile: file }) })).toEqual({ username: "broker", password: "from-file" });
  });

  it("refuses a passwordFile that group or others can access, without revealing it", async () => {
    const file = path.join(tmp, "pw");
    await writeFile(file, "loose-secret\n");
    await chmod(file, 0o640);
    const error = await errorOf(ensurePassword({ dataDir, config: auth({ passwordFile: file }) }));
    expect(error.problems).toEqual([
      { file, path: "", message: "password file is accessible by group or others (mode 0640); restrict it to its owner, e.g. chmod 600" },
    ]);
    expect(JSON.stringify(error.toJSON())).not.toContain("loose-secret");
  });

  it("refuses a missing or empty passwordFile", async () => {
    const file = path.join(tmp, "pw");
    expect((await errorOf(ensurePassword({ dataDir, config: auth({ passwordFile: file }) }))).problems).toEqual([
      { file, path: "", message: "password file does not exist" },
    ]);
    await writeFile(file, " \n", { mode: 0o600 });
    expect((await errorOf(ensurePassword({ dataDir, config: auth({ passwordFile: file }) }))).problems).toEqual([
      { file, path: "", message: "password file is empty" },
    ]);
  });

  it("refuses a stored password that became readable by others", async () => {
    await ensurePassword({ dataDir, config: auth() });
    await chmod(path.join(dataDir, "password"), 0o644);
    const error = await errorOf(ensurePassword({ dataDir, config: auth() }));
    expect(error.problems[0]?.message).toContain("(mode 0644)");
  });
});

describe("readPassword (clients of a running broker)", () => {
  it("reads the configured, the file's or the generated password, and never generates one", async () => {
    expect(await readPassword({ dataDir, config: auth({ password: "pw" }) })).toEqual({ username: "broker", password: "pw" });
    const missing = await errorOf(readPassword({ dataDir, config: auth() }));
    expect(missing.problems[0]?.message).toBe("password file does not exist (has the broker been started with this configuration?)");
    await expect(stat(dataDir)).rejects.toMatchObject({ code: "ENOENT" });
    const generated = await ensurePassword({ dataDir, config: auth() });
    expect(await readPassword({ dataDir, config: auth() })).toEqual({ username: "broker", password: generated.password });
  });
});

describe("readWebhookSecret", () => {
  const webhook = (secret: string | null, secretFile: string | null) => ({ webhook: { secret, secretFile } });

  it("is null without a secret, else the secret or the private file's content", async () => {
    expect(await readWebhookSecret(webhook(null, null))).toBeNull();
    expect(await readWebhookSecret(webhook("s", null))).toBe("s");
    const file = path.join(tmp, "hook");
    await writeFile(file, "from-file\n", { mode: 0o600 });
    expect(await readWebhookSecret(webhook(null, file))).toBe("from-file");
    await chmod(file, 0o644);
    expect((await errorOf(readWebhookSecret(webhook(null, file)))).problems[0]?.message).toMatch(/^webhook secret file is accessible by group or others/);
  });
});
