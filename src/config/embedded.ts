import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { parse } from "yaml";
import { ConfigError, GitRepositoryError } from "../errors/index.js";
import type { Logger } from "../log/index.js";
import { CATALOG_DIR, clusterNamespacePath, clusterRegistryPath, isDns1123Label, namespaceManifest } from "../repo/index.js";
import { ensureDataDir } from "./data-dir.js";

/** The bare repository serving as remote when `git.remote` is null. */
export const EMBEDDED_REMOTE_DIR = "remote.git";
export const SEED_MESSAGE = "seed: sample catalog and cluster local";
const SEED_CLUSTER = "local";
const DEFAULT_NAMESPACE = "gitops-broker-instances";

export interface PrepareEmbeddedOptions {
  dataDir: string;
  /** Directory whose files become `catalog/` (examples/catalog). */
  catalogSource: string;
  /** Directory holding `clusters/local.yaml` (examples/registry). */
  registrySource: string;
  branch: string;
  author: { name: string; email: string };
  /** Clock for the seed commit's dates. */
  now?: () => Date;
  log: Pick<Logger, "info">;
}

/**
 * Make sure the embedded remote `<dataDir>/remote.git` exists. A new one is a bare repository with
 * one commit on `branch`: the sample catalog, cluster `local` in the registry and that cluster's
 * namespace manifest. An existing one is left untouched, so restarts keep their state.
 *
 * The seed is written by `git fast-import` (every file, the tree and the commit in one process)
 * into a temporary bare repository that is renamed into place: there is never a working tree in
 * the data dir, and a crash leaves no half-seeded remote behind.
 */
export async function prepareEmbedded(options: PrepareEmbeddedOptions): Promise<{ remoteDir: string }> {
  const { dataDir, branch, log } = options;
  const remoteDir = path.join(dataDir, EMBEDDED_REMOTE_DIR);
  await ensureDataDir(dataDir);

  if (await exists(remoteDir)) {
    await assertBare(remoteDir);
    log.info({ remoteDir }, "embedded remote exists, keeping it");
    return { remoteDir };
  }

  const files = await seedFiles(options);
  const tmp = await mkdtemp(path.join(dataDir, `.${EMBEDDED_REMOTE_DIR}-`));
  try {
    const commit = await seed(tmp, files, options);
    await rename(tmp, remoteDir);
    log.info({ remoteDir, branch, commit, files: files.size }, "embedded remote seeded");
  } catch (e: unknown) {
    // A broker starting at the same time won the rename: its remote is as good as ours.
    if (!(await exists(remoteDir))) {
      throw new ConfigError([{ file: remoteDir, path: "", message: `cannot create the embedded remote: ${errorMessage(e)}` }], { cause: e });
    }
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  return { remoteDir };
}

async function assertBare(remoteDir: string): Promise<void> {
  const problem = { file: remoteDir, path: "", message: "exists but is not a bare Git repository" };
  let answer: string;
  try {
    answer = await git(remoteDir, ["rev-parse", "--is-bare-repository"]);
  } catch (e: unknown) {
    throw new ConfigError([problem], { cause: e });
  }
  if (answer !== "true") throw new ConfigError([problem]);
}

/** Repo path -> content of every file of the seed commit. */
async function seedFiles({ catalogSource, registrySource }: PrepareEmbeddedOptions): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  for (const rel of await readSource(catalogSource, () => listFiles(catalogSource))) {
    const file = path.join(catalogSource, ...rel.split("/"));
    files.set(`${CATALOG_DIR}/${rel}`, await readSource(file, () => readFile(file)));
  }

  const clusterFile = path.join(registrySource, "clusters", `${SEED_CLUSTER}.yaml`);
  const cluster = await readSource(clusterFile, () => readFile(clusterFile));
  files.set(clusterRegistryPath(SEED_CLUSTER), cluster);

  let namespace: unknown;
  try {
    namespace = (parse(cluster.toString("utf8")) as { spec?: { namespace?: unknown } } | null)?.spec?.namespace ?? DEFAULT_NAMESPACE;
  } catch (e: unknown) {
    throw new ConfigError([{ file: clusterFile, path: "", message: "is not valid YAML" }], { cause: e });
  }
  if (typeof namespace !== "string" || !isDns1123Label(namespace)) {
    throw new ConfigError([{ file: clusterFile, path: "spec.namespace", message: "must be a DNS-1123 label" }]);
  }
  files.set(clusterNamespacePath(SEED_CLUSTER), Buffer.from(namespaceManifest(namespace)));
  return files;
}

async function readSource<T>(file: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (e: unknown) {
    throw new ConfigError([{ file, path: "", message: `cannot be read for the embedded seed: ${errorMessage(e)}` }], { cause: e });
  }
}

/** Regular files below `dir` (symlinks are skipped), `/`-separated and relative to it, sorted. */
async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join("/"))
    .sort();
}

/** Initialise a bare repository in `gitDir` and commit `files` to `branch`; returns the commit id. */
async function seed(gitDir: string, files: Map<string, Buffer>, options: PrepareEmbeddedOptions): Promise<string> {
  const { branch, author, now = () => new Date() } = options;
  await git(gitDir, ["init", "--quiet", "--bare", `--initial-branch=${branch}`, gitDir]);

  // One commit, every file inline (git fast-import's stream format); `done` makes a cut-off
  // stream an error instead of a shorter commit.
  const identity = `${author.name} <${author.email}> ${Math.floor(now().getTime() / 1000)} +0000`;
  const data = (content: Buffer): Buffer[] => [Buffer.from(`data ${content.length}\n`), content, Buffer.from("\n")];
  const stream: Buffer[] = [
    Buffer.from(`commit refs/heads/${branch}\nmark :1\nauthor ${identity}\ncommitter ${identity}\n`),
    ...data(Buffer.from(`${SEED_MESSAGE}\n`)),
  ];
  for (const [file, content] of files) {
    // A path is the rest of the line; one that starts with a quote or holds a newline is C-quoted.
    const quoted = file.startsWith('"') || file.includes("\n") ? JSON.stringify(file) : file;
    stream.push(Buffer.from(`M 100644 inline ${quoted}\n`), ...data(content));
  }
  stream.push(Buffer.from("done\n"));
  const marks = path.join(gitDir, "seed.marks");
  // unpackLimit=0: the seed stays one pack (below the limit, fast-import runs unpack-objects).
  const args = ["-c", "fastimport.unpackLimit=0", "fast-import", "--quiet", "--done", `--export-marks=${marks}`];
  await git(gitDir, args, { input: Buffer.concat(stream) });
  const commit = /^:1 ([0-9a-f]{40,64})$/m.exec(await readFile(marks, "utf8"))?.[1];
  await rm(marks);
  if (commit === undefined) throw new GitRepositoryError("git fast-import did not report the seed commit");
  return commit;
}

/** Run git against `gitDir`; resolves with trimmed stdout, rejects with execFile's error (command and stderr). */
function git(gitDir: string, args: string[], opts: { input?: string | Buffer; env?: Record<string, string> } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      "git",
      args,
      { env: { ...process.env, ...opts.env, GIT_DIR: gitDir }, encoding: "utf8" },
      (error, stdout) => (error ? reject(error) : resolve(stdout.trim())),
    );
    // A git that exits before reading its input closes the pipe: the exit status reports the
    // failure, so the EPIPE on stdin is not an error of its own.
    child.stdin?.on("error", () => undefined);
    child.stdin?.end(opts.input ?? "");
  });
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    (e: unknown) => {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return false;
      throw e;
    },
  );
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message.trim() : String(e);
}
