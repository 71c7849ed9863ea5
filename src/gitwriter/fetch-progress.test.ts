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

type Line = { obj: Record<string, unknown>; msg: string };

/** A first clone of `files` by a writer whose clock moves 1 ms at each reading; its progress lines. */
async function clone(name: string, files: Record<string, string>, progressIntervalMs: number): Promise<Line[]> {
  await createBareRemote(path.join(root, "remotes"), `${name}.git`, files);
  const lines: Line[] = [];
  const info = (obj: object, msg: string) => void lines.push({ obj: obj as Record<string, unknown>, msg });
  let t = 0;
  const writer = createGitWriter({
    gitdir: path.join(root, `${name}-work.git`),
    remoteUrl: server.url(`${name}.git`),
    branch: "main",
    author: { name: "t", email: "t@example.com" },
    logger: { debug: () => {}, info, warn: () => {}, error: () => {} },
    progressIntervalMs,
    clock: () => ++t,
  });
  try {
    await writer.start();
  } finally {
    await writer.close();
  }
  return lines.filter((l) => l.msg.startsWith("fetching the Git remote: "));
}

describe("fetch progress", () => {
  it("logs the stages of a long first fetch with processed/total counts, at most once per interval", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 300; i++) files[`instances/${String(i).padStart(3, "0")}.yaml`] = `id: ${i}\n`;
    // git reports each stage percent by percent: hundreds of reports, one clock ms each.
    const progress = await clone("big", files, 50);
    expect(progress.length).toBeGreaterThanOrEqual(2);
    for (const l of progress) {
      const { stage, processed, total } = l.obj as { stage: string; processed: number; total: number };
      expect(processed).toBeLessThanOrEqual(total);
      expect(l.msg).toBe(`fetching the Git remote: ${stage} ${String(processed)}/${String(total)}`);
    }
    // 300 blobs, their trees and the commit.
    expect(progress.some((l) => l.obj.stage === "receiving" && (l.obj.total as number) > 300)).toBe(true);
    // Every report reads the clock once: lines are at least 50 reports apart, so there are few.
    expect(progress.length).toBeLessThanOrEqual(20);
  });

  it("logs no progress for a fetch that ends within the interval", async () => {
    expect(await clone("small", { "README.md": "x\n", "a.yaml": "a: 1\n" }, 50)).toEqual([]);
  });
});
