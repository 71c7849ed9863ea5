/**
 * The real age CLI (Debian package `age`, which `npm test` installs as root:
 * scripts/test-prerequisites.mjs) for tests: key pairs from `age-keygen`, data keys unwrapped
 * with `age -d`. A missing CLI fails the test with a clear
 * message; nothing is skipped.
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface AgeIdentity {
  /** `AGE-SECRET-KEY-1...` */
  secretKey: string;
  /** `age1...` */
  recipient: string;
  /** The identity file age-keygen wrote. */
  file: string;
}

/** A new key pair from `age-keygen -o <dir>/<name>.txt`. */
export async function ageKeygen(dir: string, name: string): Promise<AgeIdentity> {
  const file = path.join(dir, `${name}.txt`);
  try {
    await run("age-keygen", ["-o", file]);
  } catch (e) {
    throw new Error("the age CLI (age, age-keygen) is needed by this test: install the Debian package `age` (npm test does when it runs as root)", { cause: e });
  }
  const text = await fs.readFile(file, "utf8");
  const recipient = /^# public key: (age1\S+)$/m.exec(text)?.[1];
  const secretKey = /^(AGE-SECRET-KEY-1\S+)$/m.exec(text)?.[1];
  if (!recipient || !secretKey) throw new Error(`age-keygen wrote no key pair to ${file}`);
  return { secretKey, recipient, file };
}

/** `age -d -i <identity file>` of an ASCII-armored age file (a sops `enc`), written to `dir` first. */
export async function ageDecrypt(dir: string, identity: AgeIdentity, armored: string): Promise<Buffer> {
  const file = path.join(dir, `${randomUUID()}.age`);
  await fs.writeFile(file, armored);
  const { stdout } = await run("age", ["-d", "-i", identity.file, file], { encoding: "buffer" });
  return stdout;
}
