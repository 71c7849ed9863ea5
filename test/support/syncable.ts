/**
 * Proof that a cluster directory of the GitOps repository (`clusters/<cluster-id>/`) can be synced
 * as is by both delivery tools, without a kustomization.yaml:
 *
 * - Argo CD, directory source with `recurse: true`: every *.yaml below the directory is read and
 *   must hold exactly one object with apiVersion, kind and metadata.name (readClusterDirObjects).
 * - Flux, Kustomization on the path: kustomize-controller generates a kustomization.yaml whose
 *   `resources` list every *.yaml / *.yml below the path and builds it; emulated here with
 *   `kubectl kustomize` on a copy of the directory (kustomizeClusterDir).
 *
 *   const { objects } = await assertSyncableClusterDir(path.join(repo, "clusters/local"));
 */
import { execFile } from "node:child_process";
import { isDeepStrictEqual, promisify } from "node:util";
import fs from "node:fs/promises";
import path from "node:path";
import { parseAllDocuments, stringify } from "yaml";
import { validateManifest } from "./kube-validate.js";
import { trackedTempDir } from "./processes.js";

const execFileAsync = promisify(execFile);

/** File names kustomize recognises as a kustomization (konfig.RecognizedKustomizationFileNames). */
const KUSTOMIZATION_FILES = new Set(["kustomization.yaml", "kustomization.yml", "Kustomization"]);

export interface ClusterObject {
  /** Path relative to the cluster directory, `/`-separated. */
  file: string;
  /** `group/kind/namespace/name`: what Argo CD and kustomize key objects by. */
  id: string;
  object: Record<string, unknown>;
}

export interface SyncableOptions {
  /** The kubectl binary; default `kubectl` from PATH. */
  kubectl?: string;
}

/**
 * Asserts that `dir` syncs under Argo CD (directory, recurse) and under Flux (generated
 * kustomization.yaml, built with `kubectl kustomize`) to the same objects, one per file.
 * Leaves `dir` untouched. Rejects with every problem found.
 */
export async function assertSyncableClusterDir(dir: string, options: SyncableOptions = {}): Promise<{ objects: number }> {
  const objects = await readClusterDirObjects(dir);
  const built = await kustomizeClusterDir(dir, options);
  const problems: string[] = [];
  const expected = new Map(objects.map((o) => [o.id, o]));
  const seen = new Set<string>();
  for (const object of built) {
    const id = objectId(object);
    const source = expected.get(id);
    if (seen.has(id)) problems.push(`kustomize output holds ${id} more than once`);
    else if (source === undefined) problems.push(`kustomize output holds ${id}, which no file of the directory has`);
    else if (!isDeepStrictEqual(object, source.object)) problems.push(`${source.file}: kustomize output of ${id} differs from the file`);
    seen.add(id);
  }
  for (const o of objects) {
    if (!seen.has(o.id)) problems.push(`${o.file}: ${o.id} is missing from the kustomize output`);
  }
  fail(dir, problems);
  return { objects: objects.length };
}

/**
 * The objects Argo CD reads from `dir` as a directory source with `recurse: true`, in path order.
 * Rejects unless every file below `dir` is a *.yaml holding exactly one object with apiVersion,
 * kind and metadata.name, no object appears twice, no kustomization file is present (it would
 * change how both tools read the directory), core kinds validate against kubernetes-models, and
 * `namespace.yaml` holds the Namespace that keeps the directory from ever being empty.
 */
export async function readClusterDirObjects(dir: string): Promise<ClusterObject[]> {
  const problems: string[] = [];
  const objects: ClusterObject[] = [];
  const ids = new Map<string, string>();
  for (const file of await listFiles(dir, problems)) {
    const object = await readOneObject(dir, file, problems);
    if (object === undefined) continue;
    const id = objectId(object);
    const first = ids.get(id);
    if (first !== undefined) {
      problems.push(`${file}: ${id} is already defined in ${first}`);
      continue;
    }
    ids.set(id, file);
    objects.push({ file, id, object });
  }
  const root = objects.find((o) => o.file === "namespace.yaml");
  if (root === undefined || root.object.apiVersion !== "v1" || root.object.kind !== "Namespace") {
    problems.push("namespace.yaml must hold the v1 Namespace of the cluster's instances (it keeps the directory from ever being empty, which Argo CD refuses to prune to)");
  }
  fail(dir, problems);
  return objects;
}

/**
 * What Flux applies from `dir`: on a temporary copy, writes the kustomization.yaml that
 * kustomize-controller generates for a path without one (fluxcd/pkg kustomize generator:
 * `resources` = every *.yaml / *.yml below the path in walk order, as `./<relative path>`), runs
 * `kubectl kustomize` and resolves with the objects it prints.
 */
export async function kustomizeClusterDir(dir: string, options: SyncableOptions = {}): Promise<Record<string, unknown>[]> {
  const copy = await trackedTempDir("kustomize-");
  try {
    await fs.cp(dir, copy, { recursive: true });
    const resources = (await walk(copy)).filter((f) => /\.ya?ml$/.test(f)).map((f) => `./${f}`);
    const kustomization = { apiVersion: "kustomize.config.k8s.io/v1beta1", kind: "Kustomization", resources };
    await fs.writeFile(path.join(copy, "kustomization.yaml"), stringify(kustomization, { lineWidth: 0 }));
    const stdout = await run(options.kubectl ?? "kubectl", ["kustomize", copy]);
    const docs = parseAllDocuments(stdout);
    const errors = docs.flatMap((d) => d.errors.map((e) => e.message));
    if (errors.length > 0) throw new Error(`kubectl kustomize printed invalid YAML: ${errors.join("; ")}`);
    return docs
      .filter((d) => d.contents !== null)
      .map((d, i) => {
        const value: unknown = d.toJS();
        if (!isRecord(value)) throw new Error(`kubectl kustomize printed a non-object as document ${i}`);
        return value;
      });
  } finally {
    await fs.rm(copy, { recursive: true, force: true });
  }
}

/** True when `command -v <name>` finds the command. */
export async function commandExists(name: string): Promise<boolean> {
  try {
    await execFileAsync("sh", ["-c", 'command -v "$1"', "sh", name]);
    return true;
  } catch {
    return false;
  }
}

async function listFiles(dir: string, problems: string[]): Promise<string[]> {
  const files: string[] = [];
  for (const file of await walk(dir)) {
    const stat = await fs.lstat(path.join(dir, file));
    if (KUSTOMIZATION_FILES.has(path.posix.basename(file))) {
      problems.push(`${file}: a kustomization file; the broker writes none, and it would replace what both tools generate from the plain files`);
    } else if (!stat.isFile()) {
      problems.push(`${file}: not a regular file`);
    } else if (!file.endsWith(".yaml")) {
      problems.push(`${file}: not a *.yaml manifest; a cluster directory holds manifests only`);
    } else {
      files.push(file);
    }
  }
  if (files.length === 0) problems.push("holds no manifest");
  return files;
}

async function readOneObject(dir: string, file: string, problems: string[]): Promise<Record<string, unknown> | undefined> {
  const docs = parseAllDocuments(await fs.readFile(path.join(dir, file), "utf8"));
  const errors = docs.flatMap((d) => d.errors.map((e) => e.message));
  if (errors.length > 0) {
    problems.push(`${file}: is not valid YAML: ${errors.join("; ")}`);
    return undefined;
  }
  const values = docs.filter((d) => d.contents !== null).map((d): unknown => d.toJS());
  const [object] = values;
  if (values.length !== 1 || !isRecord(object)) {
    problems.push(`${file}: holds ${values.length} documents; one object per file is expected`);
    return undefined;
  }
  const { apiVersion, kind, metadata } = object;
  const name = isRecord(metadata) ? metadata.name : undefined;
  const missing = Object.entries({ apiVersion, kind, "metadata.name": name })
    .filter(([, v]) => typeof v !== "string" || v === "")
    .map(([k]) => k);
  if (missing.length > 0) {
    problems.push(`${file}: ${missing.join(", ")} missing or not a string`);
    return undefined;
  }
  try {
    validateManifest(object);
  } catch (e: unknown) {
    problems.push(`${file}: does not validate: ${e instanceof Error ? e.message : String(e)}`);
    return undefined;
  }
  return object;
}

/** Every non-directory entry below `root`, relative and `/`-separated, in lexical walk order (as Go's filepath.Walk). */
async function walk(root: string, rel = ""): Promise<string[]> {
  const entries = await fs.readdir(path.join(root, rel), { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const out: string[] = [];
  for (const e of entries) {
    const p = rel === "" ? e.name : `${rel}/${e.name}`;
    if (e.isDirectory()) out.push(...(await walk(root, p)));
    else out.push(p);
  }
  return out;
}

function objectId(object: Record<string, unknown>): string {
  const apiVersion = String(object.apiVersion);
  const group = apiVersion.includes("/") ? apiVersion.slice(0, apiVersion.indexOf("/")) : "";
  const metadata = isRecord(object.metadata) ? object.metadata : {};
  return `${group}/${String(object.kind)}/${String(metadata.namespace ?? "")}/${String(metadata.name)}`;
}

async function run(command: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await execFileAsync(command, args, { maxBuffer: 256 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? "";
    throw new Error(`${command} ${args.join(" ")} failed: ${stderr.trim()}`, { cause: error });
  }
}

function fail(dir: string, problems: string[]): void {
  if (problems.length > 0) throw new Error(`${dir} is not syncable:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
