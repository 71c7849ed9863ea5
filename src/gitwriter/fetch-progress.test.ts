import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBareRemote, createTempDir } from "../../test/support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../../test/support/git-http-server.js";
import { createGitWriter } from "./index.js";

/** A first clone says how far it got, with counts, instead of staying silent. */

let root: string;
let server: GitHttpServer;

beforeAll(async () => {
  root = await createTempDir("gitwriter-progress-");
  server = await startGitHttpServer({ root: path.join(root, "remotes") });
});
afterAll(async () => {
  await server.close();
  await fs.rm(root, { recursive: true, force: true });
});

describe("fetch progress", () => {
  it("logs each stage of the first fetch with processed/total counts, the last one complete", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 300; i++) files[`instances/${String(i).padStart(3, "0")}.yaml`] = `id: ${i}\n`;
    await createBareRemote(path.join(root, "remotes"), "big.git", files);
    const lines: { obj: Record<string, unknown>; msg: string }[] = [];
    const info = (obj: object, msg: string) => void lines.push({ obj: obj as Record<string, unknown>, msg });
    const writer = createGitWriter({
      gitdir: path.join(root, "work.git"),
      remoteUrl: server.url("big.git"),
      branch: "main",
      author: { name: "t", email: "t@example.com" },
      logger: { debug: () => {}, info, warn: () => {}, error: () => {} },
      progressIntervalMs: 60_000,
    });
    try {
      await writer.start();
    } finally {
      await writer.close();
    }
    const progress = lines.filter((l) => l.msg.startsWith("fetching the Git remote: "));
    const receiving = progress.filter((l) => l.obj.stage === "receiving");
    expect(receiving.length).toBeGreaterThanOrEqual(1);
    // 300 blobs, their trees and the commit.
    const last = receiving.at(-1)!.obj;
    expect(last.total).toBeGreaterThan(300);
    expect(last).toMatchObject({ processed: last.total, percent: 100 });
    expect(receiving.at(-1)!.msg).toBe(`fetching the Git remote: receiving ${String(last.total)}/${String(last.total)}`);
    // With a long interval: the first and the last report of a stage, nothing in between.
    expect(receiving.length).toBeLessThanOrEqual(2);
  });
});
