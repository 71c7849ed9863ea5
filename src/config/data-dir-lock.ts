import fs from "node:fs";
import { readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import path from "node:path";
import lockfile from "proper-lockfile";
import { DataDirLockedError } from "../errors/index.js";

/**
 * One process per role and data directory (ADR 0013). The lock is proper-lockfile's: a directory
 * created atomically (mkdir), its mtime refreshed while the holder lives, stale once not refreshed
 * for STALE_MS (a holder that died without releasing it, on any host or PID namespace sharing the
 * volume). Inside it, `owner.json` names the holder (PID, host, process start time) for the message
 * a second process prints; when that holder is on this host and its PID is gone (or now belongs to
 * another process), the lock is stale at once rather than after STALE_MS, so a crashed broker
 * restarts without waiting. Beside it, `<role>.pid` holds the holder's PID alone, as a pidfile
 * does (`kill $(cat .gitops-broker/serve.pid)`).
 */

/** proper-lockfile's fs, removing the lock directory with the owner file in it. */
const lockFs = {
  ...fs,
  rmdir: (dir: string, callback: (error: NodeJS.ErrnoException | null) => void) => fs.rm(dir, { recursive: true, force: true }, callback),
  rmdirSync: (dir: string) => fs.rmSync(dir, { recursive: true, force: true }),
};

/** A lock not refreshed for this long is stale; refreshed every STALE_MS / 2. */
const STALE_MS = 30_000;

export type LockRole = "serve" | "cli";

export interface DataDirLock {
  /** Absolute path of the lock directory. */
  readonly path: string;
  release(): Promise<void>;
}

interface Owner {
  pid: number;
  host: string;
  /** Start time of the process (Linux /proc/<pid>/stat field 22), to tell a reused PID. */
  start: string | null;
  since: string;
}

/** Locks held by this process: a second lock from the same process is refused, never stolen. */
const heldHere = new Set<string>();

export async function lockDataDir(
  dataDir: string,
  role: LockRole,
  options: {
    onCompromised?: (error: Error) => void;
    /** A lock not refreshed for this long is stale (default STALE_MS); tests shorten it. */
    staleMs?: number;
  } = {},
): Promise<DataDirLock> {
  const staleMs = options.staleMs ?? STALE_MS;
  const lockPath = path.join(dataDir, `${role}.lock`);
  const ownerPath = path.join(lockPath, "owner.json");
  const pidPath = path.join(dataDir, `${role}.pid`);
  const take = () =>
    lockfile.lock(dataDir, {
      lockfilePath: lockPath,
      fs: lockFs,
      stale: staleMs,
      retries: 0,
      onCompromised: options.onCompromised ?? (() => undefined),
    });
  let release: () => Promise<void>;
  try {
    release = await take();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ELOCKED") throw error;
    const owner = await readOwner(ownerPath);
    if (heldHere.has(lockPath) || owner === null || !(await holderIsGone(owner))) {
      throw new DataDirLockedError(dataDir, role, owner?.pid, owner?.host, { cause: error });
    }
    // The holder died on this host: its lock is stale now, not in STALE_MS.
    await rm(lockPath, { recursive: true, force: true }).catch(() => undefined);
    try {
      release = await take();
    } catch (again) {
      throw new DataDirLockedError(dataDir, role, owner.pid, owner.host, { cause: again });
    }
  }
  heldHere.add(lockPath);
  const owner: Owner = { pid: process.pid, host: hostname(), start: await processStart(process.pid), since: new Date().toISOString() };
  // proper-lockfile refreshes the lock directory's mtime and takes any other change of it for a
  // compromised lock: writing the owner file into it moves it, so it is put back (without this the
  // lock was given up at its first refresh, and a second process could take the directory 30 s on).
  const { mtime } = await stat(lockPath);
  await writeFile(ownerPath, `${JSON.stringify(owner)}\n`, { mode: 0o600 });
  await utimes(lockPath, mtime, mtime);
  await writeFile(pidPath, `${process.pid}\n`, { mode: 0o644 });
  let released = false;
  return {
    path: lockPath,
    async release() {
      if (released) return;
      released = true;
      heldHere.delete(lockPath);
      await rm(pidPath, { force: true });
      await release().catch(() => undefined);
    },
  };
}

async function readOwner(file: string): Promise<Owner | null> {
  try {
    const owner = JSON.parse(await readFile(file, "utf8")) as Partial<Owner>;
    return typeof owner.pid === "number" && typeof owner.host === "string"
      ? { pid: owner.pid, host: owner.host, start: owner.start ?? null, since: owner.since ?? "" }
      : null;
  } catch {
    return null;
  }
}

/** True only when we can tell: the holder ran on this host and its PID is dead or reused. */
async function holderIsGone(owner: Owner): Promise<boolean> {
  if (owner.host !== hostname()) return false;
  // PID 1 of a restarted container, or our own PID reused: not the holder (that would be heldHere).
  if (owner.pid === process.pid) return true;
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
  const start = await processStart(owner.pid);
  return owner.start !== null && start !== null && start !== owner.start;
}

async function processStart(pid: number): Promise<string | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}
