import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { lockDataDir } from "./data-dir-lock.js";

/**
 * The lock stays held while its holder lives: proper-lockfile refreshes the lock directory's
 * mtime every staleMs / 2, and a second process takes the directory only once that mtime is older
 * than staleMs. Shortened here to 2 s (proper-lockfile's least).
 */

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe("lockDataDir", () => {
  it("keeps the lock fresh past several refreshes: never compromised, never stale to another process", async () => {
    dir = await mkdtemp(path.join(tmpdir(), "gitops-broker-lock-"));
    const compromised = vi.fn();
    const staleMs = 2000;
    const lock = await lockDataDir(dir, "serve", { onCompromised: compromised, staleMs });
    try {
      const first = (await stat(lock.path)).mtimeMs;
      // Three refreshes (one every second): each moves the mtime on.
      await vi.waitFor(async () => expect((await stat(lock.path)).mtimeMs).toBeGreaterThan(first + 2500), { timeout: 30_000, interval: 200 });
      expect(compromised).not.toHaveBeenCalled();
      // What another process's proper-lockfile would see: a lock refreshed within the stale time.
      expect(Date.now() - (await stat(lock.path)).mtimeMs).toBeLessThan(staleMs);
    } finally {
      await lock.release();
    }
  }, 60_000);
});
