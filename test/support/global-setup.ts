/**
 * Runs once before the test files (vitest `globalSetup`): builds dist/ (`npm run build`'s
 * `tsc -p tsconfig.build.json`) when it is older than a source file or missing.
 *
 * Tests that start `bin/gitops-broker.js` as a process (kill -9, replicas, startup failures, the CLI
 * commands) then run the compiled build, as the container image and `npm start` do, instead of
 * compiling the sources through tsx in every process: ~1.9 s of CPU per start instead of ~4.5 s
 * on 2 cores, over dozens of starts (docs/benchmarks.md, "The test suite"). bin/gitops-broker.js
 * makes the same freshness check, so a stale build is never run; test/cli/bin.test.ts covers both
 * of its branches in a project of its own.
 */
import { execFile } from "node:child_process";
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

async function mtime(file: string): Promise<number> {
  try {
    return (await stat(file)).mtimeMs;
  } catch {
    return -1; // missing
  }
}

async function newestSource(): Promise<number> {
  let newest = 0;
  for (const entry of await readdir(path.join(ROOT, "src"), { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) newest = Math.max(newest, await mtime(path.join(entry.parentPath, entry.name)));
  }
  return newest;
}

export default async function buildOnce(): Promise<void> {
  if ((await mtime(path.join(ROOT, "dist/cli/main.js"))) >= (await newestSource())) return;
  const tsc = path.join(ROOT, "node_modules/typescript/bin/tsc");
  try {
    await promisify(execFile)(process.execPath, [tsc, "-p", path.join(ROOT, "tsconfig.build.json")], { cwd: ROOT });
  } catch (error) {
    // A type error: tsc emitted anyway, as tsx would run it. The typecheck step reports it.
    const { stdout = "" } = error as { stdout?: string };
    process.stderr.write(`global setup: tsc -p tsconfig.build.json reported errors (the build is used anyway):\n${stdout}`);
  }
}
