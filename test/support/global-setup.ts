/**
 * Runs once before the test files (vitest `globalSetup`): stops at once, naming them, when programs
 * the tests run are missing (scripts/test-prerequisites.mjs, which `npm test` runs first too), then
 * builds the Go test tools that are not cached (the real kube-apiserver and etcd, Helm, the GitOps
 * agents: test-tools.ts, which says what it builds and for how long) and dist/ (what `npm run
 * build` emits, without its type check: `npm test` runs `npm run check` beside vitest) when it is
 * not the current build (`currentBuild`), from scratch, so that no output of a removed source is
 * left over.
 *
 * Tests that start `bin/gitops-broker.js` as a process (kill -9, replicas, startup failures, the CLI
 * commands) then run the compiled build, as the container image and `npm start` do, instead of
 * compiling the sources through tsx in every process: ~1.9 s of CPU per start instead of ~4.5 s
 * on 2 cores, over dozens of starts (ADR 0019). bin/gitops-broker.js makes the same freshness
 * check, so a stale build is never run; test/cli/bin.test.ts covers both of its branches in a
 * project of its own.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describeMissing, findPrograms } from "../../scripts/test-prerequisites.mjs";
import { buildTestTools, elapsed } from "./test-tools.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * The checkout's dist/ when it is what `npm run build` makes of the sources as they are (the suite
 * builds it once before the tests): every file in it comes from a source file (no leftover of a
 * removed one), every source file has its output, and none is older than a source or the
 * compiler's configuration. Else undefined. The global setup and test/deploy/image.test.ts (which
 * copies it into the image's layout) ask the same question.
 */
export async function currentBuild(): Promise<string | undefined> {
  const dist = path.join(ROOT, "dist");
  const files = async (dir: string) =>
    (await readdir(dir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
  let built: string[];
  try {
    built = await files(dist);
  } catch {
    return undefined; // not built
  }
  const allSources = await files(path.join(ROOT, "src"));
  const sources = allSources.filter((f) => !f.endsWith(".test.ts") && !f.split(path.sep).includes("testdata"));
  const outputs = new Set(sources.filter((f) => f.endsWith(".ts")).map((f) => f.replace(/\.ts$/, ".js")));
  const copied = new Set(sources.filter((f) => f.endsWith(".json")));
  if (built.some((f) => !outputs.has(f) && !copied.has(f)) || [...outputs].some((f) => !built.includes(f))) return undefined;
  const mtime = async (file: string) => (await stat(file)).mtimeMs;
  const inputs = [
    ...allSources.map((f) => path.join(ROOT, "src", f)),
    ...["tsconfig.json", "tsconfig.build.json", "package.json", "node_modules/typescript/package.json"].map((f) => path.join(ROOT, f)),
  ];
  const newestInput = Math.max(...(await Promise.all(inputs.map(mtime))));
  const oldestOutput = Math.min(...(await Promise.all(built.map((f) => mtime(path.join(dist, f))))));
  return oldestOutput >= newestInput ? dist : undefined;
}

/**
 * The environment variable naming a directory that lives as long as the run (the setup makes it
 * and removes it after the last file): fixtures made once per worker and copied by later files
 * (seeded remotes, the embedded sample remote) are kept there. Unset outside a vitest run (the
 * benchmarks): the fixtures then keep their copies in temporary directories of their own.
 */
export const RUN_DIR_VARIABLE = "GITOPS_BROKER_TEST_RUN_DIR";

/** Prefix of a run's directory in the system's temporary directory; the run's PID follows it. */
const RUN_DIR_PREFIX = "gitops-broker-run-";

export default async function setup(): Promise<() => Promise<void>> {
  const programs = findPrograms();
  const missing = describeMissing(programs.missing, process.getuid?.() === 0);
  if (missing !== undefined) throw new Error(missing);
  // Programs found off PATH (Debian's /usr/sbin/nginx, /usr/local/go/bin/go) on it, for the tools'
  // build and the workers.
  process.env.PATH = programs.path;
  await removeAbandonedRunDirs();
  const runDir = await mkdtemp(path.join(tmpdir(), `${RUN_DIR_PREFIX}${process.pid}-`));
  // Set before the workers start: they inherit the environment.
  process.env[RUN_DIR_VARIABLE] = runDir;
  // The Go test tools and dist/ side by side: both are needed before the first file.
  await Promise.all([buildOnce(), buildTestTools()]);
  return async () => {
    await rm(runDir, { recursive: true, force: true, maxRetries: 5 });
  };
}

/**
 * The directories of runs that were killed before their teardown (kill -9, a CI job cancelled):
 * those whose PID no longer runs. A live run's directory, or one of a PID reused since, is kept.
 */
export async function removeAbandonedRunDirs(parent = tmpdir()): Promise<void> {
  const runDir = new RegExp(`^${RUN_DIR_PREFIX}(\\d+)-`);
  for (const name of await readdir(parent)) {
    const match = runDir.exec(name);
    if (match === null || isRunning(Number(match[1]))) continue;
    await rm(path.join(parent, name), { recursive: true, force: true, maxRetries: 5 });
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

async function buildOnce(): Promise<void> {
  if ((await currentBuild()) !== undefined) return;
  await buildDist();
}

/** dist/ from scratch, as `npm run build` emits it (without its type check). */
export async function buildDist(): Promise<void> {
  const started = performance.now();
  const tsc = path.join(ROOT, "node_modules/typescript/bin/tsc");
  await rm(path.join(ROOT, "dist"), { recursive: true, force: true });
  // --noCheck: the same output without a second type check; `npm test`'s check step
  // (scripts/check.mjs) checks these sources and the tests together.
  await promisify(execFile)(process.execPath, [tsc, "-p", path.join(ROOT, "tsconfig.build.json"), "--noCheck"], { cwd: ROOT });
  process.stderr.write(`compiled src/ into dist/ in ${elapsed(performance.now() - started)} (the tests that start the broker as a process run it)\n`);
}
