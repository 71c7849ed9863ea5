/**
 * The writer against a remote that hangs, or that takes a push and never says so (ADR 0005's
 * addendum of 2026-11-29): what waits behind a hung push is answered without it and never
 * written; a read gives up with the writes; a push whose pack may have reached the remote is
 * never answered "nothing was changed", and is acknowledged once the remote shows it took it.
 * Real remotes over smart HTTP, behind a TCP proxy that hangs or mutes (test/support/hang-proxy.ts).
 * No timing bound is asserted here: test/broker/remote-hang.test.ts measures from the client.
 */
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { GitRemoteError } from "../errors/index.js";
import { createBareRemote, createTempDir, readRemoteFile, revParse } from "../../test/support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../../test/support/git-http-server.js";
import { startHangProxy, type HangProxy } from "../../test/support/hang-proxy.js";
import { waitUntil } from "../../test/support/processes.js";
import { createGitWriter, type GitWriter, type Operation } from "./index.js";
import { pushInDoubt } from "./remote.js";

const AUTHOR = { name: "gitops-broker", email: "broker@example.com" };

let root: string;
let server: GitHttpServer;
let proxy: HangProxy;
let count = 0;
const writers: GitWriter[] = [];

beforeAll(async () => {
  root = await createTempDir("gitwriter-bounds-");
  server = await startGitHttpServer({ root: path.join(root, "remotes") });
  proxy = await startHangProxy(server.port);
});

afterEach(async () => {
  proxy.setHanging(false);
  proxy.setMutingPushes(false);
  await Promise.all(writers.splice(0).map((w) => w.close()));
});

afterAll(async () => {
  await proxy.close();
  await server.close();
  await fs.rm(root, { recursive: true, force: true });
});

interface Log {
  msg: string;
  obj: Record<string, unknown>;
}

async function setup(remoteTimeoutMs: number): Promise<{ bare: string; writer: GitWriter; logs: Log[] }> {
  count += 1;
  const name = `bounds-${count}.git`;
  const bare = await createBareRemote(path.join(root, "remotes"), name, { "README.md": "seed\n" });
  const logs: Log[] = [];
  const log = (obj: object, msg: string) => void logs.push({ msg, obj: obj as Record<string, unknown> });
  const writer = createGitWriter({
    gitdir: path.join(root, `work-${count}.git`),
    remoteUrl: `http://127.0.0.1:${proxy.port}/${name}`,
    branch: "main",
    author: AUTHOR,
    logger: { debug: log, info: log, warn: log, error: log },
    remoteTimeoutMs,
    repository: "store test",
  });
  writers.push(writer);
  await writer.start();
  return { bare, writer, logs };
}

function writeOp(file: string): Operation<string> {
  return async (draft) => {
    draft.write(file, `${file}\n`);
    return { commit: { subject: `write ${file}`, trailers: {} }, result: file };
  };
}

describe("a remote that hangs", () => {
  it("answers what waits behind a hung push while it still hangs, and never writes it", async () => {
    const { bare, writer } = await setup(1_500);
    const tip = await revParse(bare, "main");
    proxy.setHanging(true);
    const first = writer.submit(writeOp("first.txt")).catch((e: unknown) => e);
    await waitUntil(() => proxy.hungConnections > 0, "the push to hang");
    const behind = writer.submit(writeOp("behind.txt")).catch((e: unknown) => e);
    const read = writer.refresh().catch((e: unknown) => e);

    // All three are answered while the remote still hangs (it never stops in this test until then).
    for (const error of [await first, await behind, await read]) {
      expect(error).toBeInstanceOf(GitRemoteError);
      expect(error).toMatchObject({ kind: "unreachable", repository: "store test", inDoubt: false });
    }
    expect((await read) as GitRemoteError).toMatchObject({ remoteMessage: expect.stringMatching(/for a read/) });

    proxy.setHanging(false);
    await writer.submit(writeOp("after.txt"));
    expect(await readRemoteFile(bare, "main", "after.txt")).not.toBeNull();
    for (const file of ["first.txt", "behind.txt"]) expect(await readRemoteFile(bare, "main", file)).toBeNull();
    // One commit on top of the old tip: the answered ones were never pushed.
    expect(await revParse(bare, "main~1")).toBe(tip);
  });
});

describe("a remote that takes a push and never answers it", () => {
  it("keeps the push's operations until the remote shows it took them, then acknowledges them", async () => {
    const { bare, writer, logs } = await setup(1_500);
    proxy.setMutingPushes(true);
    let settled: "resolved" | "rejected" | undefined;
    const pending = writer.submit(writeOp("taken.txt")).then(
      (result) => ((settled = "resolved"), result),
      (error: unknown) => {
        settled = "rejected";
        throw error;
      },
    );
    await waitUntil(() => logs.some((l) => l.msg.startsWith("push without an answer after its pack may have reached the remote")), "the push in doubt");
    // The remote takes it (its receive-pack may still be running when the writer's deadline
    // passes, on a loaded machine); the writer does not know, and does not say "nothing was changed".
    await waitUntil(async () => (await readRemoteFile(bare, "main", "taken.txt")) !== null, "the remote to take the push");
    expect(settled).toBeUndefined();
    proxy.setMutingPushes(false);

    const result = await pending;
    expect(result.result).toBe("taken.txt");
    expect(result.commit).toBe(await revParse(bare, "main"));
  });

  it("tells a push in doubt from one that never got past the ref advertisement", () => {
    const update = `${"a".repeat(40)} ${"b".repeat(40)} refs/heads/main`;
    expect(pushInDoubt(`12:00:00.000000 pkt-line.c:80           packet:         push> ${update}\0 report-status-v2`)).toBe(true);
    expect(pushInDoubt(`12:00:00.000000 pkt-line.c:80           packet:          git> ${update}\0 report-status-v2`)).toBe(true);
    expect(pushInDoubt("12:00:00.000000 pkt-line.c:80           packet:          git< # service=git-receive-pack\n")).toBe(false);
    expect(pushInDoubt(`12:00:00.000000 pkt-line.c:80           packet:          git< ${update}\0report-status`)).toBe(false);
    expect(pushInDoubt("")).toBe(false);
  });
});
