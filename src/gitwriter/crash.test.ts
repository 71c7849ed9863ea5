import fs from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { createBareRemote, createTempDir, fsck, gitLog, readRemoteFiles, revParse } from "../../test/support/git-fixtures.js";
import { PROCESS_TEST_TIMEOUT_MS, startProcess } from "../../test/support/processes.js";
import { createGitWriter } from "./index.js";

const CHILD = fileURLToPath(new URL("./testdata/crash-child.ts", import.meta.url));
const noop = (): void => {};
const logger = { debug: noop, info: noop, warn: noop, error: noop };

let root: string | undefined;

afterEach(async () => {
  if (root !== undefined) await fs.rm(root, { recursive: true, force: true });
  root = undefined;
});

/**
 * Runs crash-child until it acknowledged `acks` operations, then kill -9s it with its children.
 * Resolves with the acknowledged operations: file written -> commit.
 */
async function runAndKill(gitdir: string, remoteUrl: string, run: string, acks: number): Promise<Map<string, string>> {
  const child = startProcess(process.execPath, ["--import", "tsx", CHILD, gitdir, remoteUrl, run]);
  const acked = new Map<string, string>();
  child.onLine((line) => {
    const [, n, commit] = line.split(" ");
    acked.set(`crash/${run}-${n}.txt`, commit ?? "");
    // The whole process group, as when a container dies: a git push the writer started must not
    // outlive it and move the remote under the next writer's start (a race, not a crash).
    if (acked.size >= acks) void child.killGroup();
  });
  const { code, signal } = await child.exited;
  if (signal !== "SIGKILL") throw new Error(`crash-child exited with ${String(code)} before it was killed: ${child.stderr()}`);
  return acked;
}

describe("git writer crash safety", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("after kill -9 at any point, a new writer on the same gitdir keeps every acknowledged commit and goes on", async () => {
    root = await createTempDir("gitwriter-crash-");
    const bare = await createBareRemote(root, "remote.git", { "README.md": "seed\n" });
    const gitdir = path.join(root, "work.git");

    // Kill twice, at different moments, the second time on top of what the first left behind.
    const acked = new Map([...(await runAndKill(gitdir, bare, "a", 12)), ...(await runAndKill(gitdir, bare, "b", 25))]);

    const writer = createGitWriter({ gitdir, remoteUrl: bare, branch: "main", author: { name: "a", email: "a@example.com" }, logger });
    await writer.start();
    const remoteTip = await revParse(bare, "main");
    expect(writer.snapshot().commit).toBe(remoteTip);
    expect(await revParse(gitdir, "refs/heads/main")).toBe(remoteTip);
    const history = new Set((await gitLog(bare)).map((c) => c.oid));
    expect(acked.size).toBeGreaterThanOrEqual(37);
    for (const commit of acked.values()) expect(history.has(commit)).toBe(true);
    const files = [...acked.keys()];
    for (const [i, content] of (await readRemoteFiles(bare, "main", files)).entries()) expect(content, files[i]).not.toBeNull();
    const after = await writer.submit(async (draft) => {
      draft.write("after-crash.txt", "ok\n");
      return { commit: { subject: "after the crash", trailers: {} }, result: null };
    });
    expect((await gitLog(bare))[0]!.oid).toBe(after.commit);
    await writer.close();
    await fsck(bare);
    await fsck(gitdir);
  });
});
