import { randomBytes } from "node:crypto";
import { link, open, readFile, rm, stat } from "node:fs/promises";
import path from "node:path";
import { ConfigError } from "../errors/index.js";
import { ensureDataDir } from "./data-dir.js";
import type { AuthConfig, WebhookConfig } from "./types.js";

export interface Credentials {
  username: string;
  password: string;
  /** Set when the password is the generated one: the file to read it from (the CLI prints this path, never the password). */
  generatedFile?: string;
}

export const GENERATED_PASSWORD_FILE = "password";

/**
 * The OSB basic-auth credentials: the configured password, the content of `auth.passwordFile`, or
 * else a password generated on first start and kept in `<dataDir>/password` (mode 0600) for later
 * starts. Secret files readable by group or others are refused.
 */
export async function ensurePassword({ dataDir, config }: { dataDir: string; config: { auth: AuthConfig } }): Promise<Credentials> {
  const { username, password, passwordFile } = config.auth;
  if (password !== null) return { username, password };
  if (passwordFile !== null) {
    const secret = await readSecretFile(passwordFile);
    if (secret === null) throw secretError(passwordFile, "does not exist");
    return { username, password: secret };
  }

  await ensureDataDir(dataDir);
  const file = path.join(dataDir, GENERATED_PASSWORD_FILE);
  return { username, password: (await readSecretFile(file)) ?? (await generate(file)), generatedFile: file };
}

/**
 * The credentials a running broker uses, for clients such as `gitops-broker update`: like
 * ensurePassword, but a password that was never generated is an error, never generated here.
 */
export async function readPassword({ dataDir, config }: { dataDir: string; config: { auth: AuthConfig } }): Promise<Credentials> {
  const { username, password, passwordFile } = config.auth;
  if (password !== null) return { username, password };
  const file = passwordFile ?? path.join(dataDir, GENERATED_PASSWORD_FILE);
  const secret = await readSecretFile(file);
  if (secret === null) throw secretError(file, "does not exist (has the broker been started with this configuration?)");
  return { username, password: secret };
}

/** The webhook secret (`webhook.secret` or the content of `webhook.secretFile`); null: no webhook. */
export async function readWebhookSecret(config: { webhook: WebhookConfig }): Promise<string | null> {
  const { secret, secretFile } = config.webhook;
  if (secret !== null) return secret;
  if (secretFile === null) return null;
  const content = await readSecretFile(secretFile, "webhook secret file");
  if (content === null) throw secretError(secretFile, "does not exist", undefined, "webhook secret file");
  return content;
}

/**
 * Write to a private temporary file, then hard-link it into place: the file is 0600 from its first
 * byte, never seen half-written, and when two brokers start at once the first link wins and the
 * other one uses it.
 */
async function generate(file: string): Promise<string> {
  const password = randomBytes(32).toString("base64url");
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  const handle = await open(tmp, "wx", 0o600);
  try {
    await handle.writeFile(`${password}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await link(tmp, file);
    return password;
  } catch (e: unknown) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw secretError(file, "cannot be created", e);
  } finally {
    await rm(tmp, { force: true });
  }
  // Another broker linked its password first: use that one.
  const theirs = await readSecretFile(file);
  if (theirs === null) throw secretError(file, "vanished while it was being created");
  return theirs;
}

/** The trimmed content of a secret file; null when it does not exist. */
async function readSecretFile(file: string, what = "password file"): Promise<string | null> {
  let mode: number;
  let content: string;
  try {
    mode = (await stat(file)).mode;
    content = await readFile(file, "utf8");
  } catch (e: unknown) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return null;
    throw secretError(file, `cannot be read (${code ?? "error"})`, e, what);
  }
  if ((mode & 0o077) !== 0) {
    const octal = (mode & 0o777).toString(8).padStart(4, "0");
    throw secretError(file, `is accessible by group or others (mode ${octal}); restrict it to its owner, e.g. chmod 600`, undefined, what);
  }
  const secret = content.trim();
  if (secret === "") throw secretError(file, "is empty", undefined, what);
  return secret;
}

function secretError(file: string, message: string, cause?: unknown, what = "password file"): ConfigError {
  return new ConfigError([{ file, path: "", message: `${what} ${message}` }], cause === undefined ? undefined : { cause });
}
