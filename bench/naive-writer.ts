/**
 * The baseline of the benchmark, for comparison only: the obvious write path of GitOps tools.
 * A working-tree clone; an operation edits the files of the working tree, then `git add`,
 * `git commit`, `git push`, one operation at a time under a mutex; a failed operation is undone
 * with `git reset --hard` and `git clean`.
 *
 * Reads are NOT naive: they come from the objects of HEAD (`git cat-file --batch`), with directory
 * ids, like the real writer's. The broker's instance summary is memoized by directory id; a
 * working tree has none, and the baseline would re-read every record on every operation, which
 * would measure the reads rather than the write path.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { promises as fsp } from "node:fs";
import path from "node:path";
import { GitRemoteError } from "../src/errors/index.js";
import type { CommitInfo, Draft, GitAuthor, GitWriter, Operation, PushEvent, SubmitResult, TreeEntryInfo, TreeReader } from "../src/gitwriter/index.js";
import { run } from "./exec.js";

export interface NaiveWriterOptions {
  /** Working-tree clone (created by start() when missing). */
  dir: string;
  remoteUrl: string;
  branch: string;
  author: GitAuthor;
}

export function createNaiveWriter(options: NaiveWriterOptions): GitWriter {
  return new NaiveWriter(options);
}

const utf8 = new TextDecoder("utf-8");

class NaiveWriter implements GitWriter {
  private head: string | null = null;
  private objects: CatFile | undefined;
  private mutex: Promise<unknown> = Promise.resolve();
  private readonly listeners = new Set<(tip: string | null, previous: string | null) => void>();
  private readonly pushListeners = new Set<(event: PushEvent) => void>();
  readonly remoteReachable = true;

  constructor(private readonly options: NaiveWriterOptions) {}

  async start(): Promise<void> {
    const { dir, remoteUrl, branch, author } = this.options;
    if (!(await exists(path.join(dir, ".git")))) {
      await run("git", ["clone", "-q", "--branch", branch, remoteUrl, dir]);
    }
    await this.git(["config", "user.name", author.name]);
    await this.git(["config", "user.email", author.email]);
    this.objects = new CatFile(dir);
    this.head = (await this.git(["rev-parse", "HEAD"])).trim();
    this.notify(this.head, null);
  }

  submit<R>(op: Operation<R>): Promise<SubmitResult<R>> {
    const result = this.mutex.then(() => this.runOne(op));
    this.mutex = result.catch(() => undefined);
    return result;
  }

  snapshot(): TreeReader {
    return new HeadReader(this.cat(), this.head);
  }

  async readerAt(commit: string): Promise<TreeReader | null> {
    return (await this.cat().read(commit))?.type === "commit" ? new HeadReader(this.cat(), commit) : null;
  }

  async refresh(): Promise<string | null> {
    return this.head;
  }

  onTip(listener: (tip: string | null, previous: string | null) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The baseline only writes: no history reads. */
  log(): Promise<CommitInfo[]> {
    return Promise.reject(new Error("the naive writer reads no history"));
  }

  onPushed(listener: (event: PushEvent) => void): () => void {
    this.pushListeners.add(listener);
    return () => this.pushListeners.delete(listener);
  }

  async close(): Promise<void> {
    await this.mutex;
    this.objects?.close();
  }

  private async runOne<R>(op: Operation<R>): Promise<SubmitResult<R>> {
    const draft = new WorkingTreeDraft(this.options.dir, new HeadReader(this.cat(), this.head));
    let outcome: Awaited<ReturnType<Operation<R>>>;
    try {
      outcome = await op(draft);
      await draft.settled();
    } catch (error) {
      await this.undo();
      throw error;
    }
    const touched = draft.touched();
    if (outcome.commit === null || touched.length === 0) {
      await this.undo();
      return { result: outcome.result, commit: null };
    }
    // The directories holding what was touched: a removed path is no pathspec git accepts.
    const dirs = [...new Set(touched.map((file) => path.posix.dirname(file)))];
    const present = await Promise.all(dirs.map((d) => exists(path.join(this.options.dir, d))));
    await this.git(["add", "-A", "--", ...dirs.filter((_, i) => present[i])]);
    if ((await exitCode("git", ["diff", "--cached", "--quiet"], this.options.dir)) === 0) {
      return { result: outcome.result, commit: null };
    }
    const { subject, body, trailers } = outcome.commit;
    const message = [subject, body ?? "", Object.entries(trailers).flatMap(([k, v]) => (typeof v === "string" ? [v] : v).map((x) => `${k}: ${x}`)).join("\n")]
      .filter((part) => part !== "")
      .join("\n\n");
    await this.git(["commit", "-q", "--no-verify", "-F", "-"], `${message}\n`);
    try {
      await this.git(["push", "-q", "origin", `HEAD:refs/heads/${this.options.branch}`]);
    } catch (error) {
      await this.git(["fetch", "-q", "origin"]);
      await this.git(["reset", "-q", "--hard", `origin/${this.options.branch}`]);
      throw new GitRemoteError("rejected", error instanceof Error ? error.message : String(error), { cause: error });
    }
    const previous = this.head;
    this.head = (await this.git(["rev-parse", "HEAD"])).trim();
    this.notify(this.head, previous);
    const event: PushEvent = { branch: this.options.branch, previous, tip: this.head, commits: [{ commit: this.head, paths: [...touched].sort() }] };
    for (const listener of this.pushListeners) listener(event);
    return { result: outcome.result, commit: this.head };
  }

  private async undo(): Promise<void> {
    await this.git(["reset", "-q", "--hard"]);
    await this.git(["clean", "-qfd"]);
  }

  private notify(tip: string | null, previous: string | null): void {
    for (const listener of this.listeners) listener(tip, previous);
  }

  private cat(): CatFile {
    if (this.objects === undefined) throw new Error("the naive writer is not started");
    return this.objects;
  }

  private git(args: string[], input?: string): Promise<string> {
    return run("git", args, { cwd: this.options.dir, ...(input !== undefined ? { input } : {}) });
  }
}

interface GitObject {
  type: string;
  data: Buffer;
}

/** One `git cat-file --batch` process; requests are answered in order. */
class CatFile {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly waiting: ((object: GitObject | null) => void)[] = [];
  private buffer = Buffer.alloc(0);

  constructor(dir: string) {
    this.child = spawn("git", ["cat-file", "--batch"], { cwd: dir });
    this.child.stdout.on("data", (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.drain();
    });
  }

  read(oid: string): Promise<GitObject | null> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.child.stdin.write(`${oid}\n`);
    });
  }

  close(): void {
    this.child.stdin.end();
  }

  private drain(): void {
    for (;;) {
      const eol = this.buffer.indexOf(10);
      if (eol === -1) return;
      const [, type = "", size] = this.buffer.toString("latin1", 0, eol).split(" ");
      if (type === "missing") {
        this.buffer = this.buffer.subarray(eol + 1);
        this.waiting.shift()!(null);
        continue;
      }
      const end = eol + 1 + Number(size);
      if (this.buffer.length < end + 1) return;
      const data = Buffer.from(this.buffer.subarray(eol + 1, end));
      this.buffer = this.buffer.subarray(end + 1);
      this.waiting.shift()!({ type, data });
    }
  }
}

type Entry = { name: string; type: "blob" | "tree"; oid: string };

/** A commit's tree through cat-file, trees parsed once per id. */
class HeadReader implements TreeReader {
  private static readonly trees = new Map<string, Entry[]>();

  constructor(
    private readonly objects: CatFile,
    readonly commit: string | null,
  ) {}

  async readFile(file: string): Promise<Uint8Array | null> {
    const entry = await this.entry(file);
    return entry?.type === "blob" ? ((await this.objects.read(entry.oid))?.data ?? null) : null;
  }

  async readText(file: string): Promise<string | null> {
    const content = await this.readFile(file);
    return content === null ? null : utf8.decode(content);
  }

  async list(dir: string): Promise<TreeEntryInfo[] | null> {
    const oid = dir === "" ? await this.rootTree() : (await this.entry(dir))?.oid;
    if (oid === undefined || oid === null) return null;
    if (dir !== "" && (await this.entry(dir))?.type !== "tree") return null;
    return (await this.tree(oid)).map((e) => ({ ...e }));
  }

  async oid(file: string): Promise<string | null> {
    const entry = await this.entry(file);
    return entry?.type === "blob" ? entry.oid : null;
  }

  private async rootTree(): Promise<string | null> {
    if (this.commit === null) return null;
    const commit = await this.objects.read(this.commit);
    return commit === null ? null : commit.data.toString("latin1", 5, 45);
  }

  private async entry(file: string): Promise<Entry | undefined> {
    let tree = await this.rootTree();
    let found: Entry | undefined;
    for (const name of file.split("/")) {
      if (tree === null) return undefined;
      found = (await this.tree(tree)).find((e) => e.name === name);
      tree = found?.type === "tree" ? found.oid : null;
    }
    return found;
  }

  private async tree(oid: string): Promise<Entry[]> {
    let entries = HeadReader.trees.get(oid);
    if (entries === undefined) {
      const data = (await this.objects.read(oid))?.data ?? Buffer.alloc(0);
      entries = [];
      for (let at = 0; at < data.length; ) {
        const space = data.indexOf(0x20, at);
        const nul = data.indexOf(0, space);
        const mode = data.toString("latin1", at, space);
        entries.push({
          name: utf8.decode(data.subarray(space + 1, nul)),
          type: mode === "40000" ? "tree" : "blob",
          oid: data.toString("hex", nul + 1, nul + 21),
        });
        at = nul + 21;
      }
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      HeadReader.trees.set(oid, entries);
    }
    return entries;
  }
}

/**
 * Edits go straight to the working tree. Reads of what this operation touched come from the
 * files; everything else from HEAD, with ids (the working tree is HEAD plus these edits).
 */
class WorkingTreeDraft implements Draft {
  readonly commit: string | null;
  private readonly edited: string[] = [];
  private pending: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly dir: string,
    private readonly head: HeadReader,
  ) {
    this.commit = head.commit;
  }

  get changed(): boolean {
    return this.edited.length > 0;
  }

  write(file: string, content: string | Uint8Array): void {
    this.edited.push(file);
    const target = path.join(this.dir, file);
    this.pending = this.pending.then(async () => {
      await fsp.rm(target, { recursive: true, force: true });
      await fsp.mkdir(path.dirname(target), { recursive: true });
      await fsp.writeFile(target, content);
    });
  }

  remove(file: string): void {
    this.edited.push(file);
    const target = path.join(this.dir, file);
    this.pending = this.pending.then(() => fsp.rm(target, { recursive: true, force: true }));
  }

  /** Resolves once the edits are on disk. */
  settled(): Promise<unknown> {
    return this.pending;
  }

  touched(): string[] {
    return [...new Set(this.edited)];
  }

  async readFile(file: string): Promise<Uint8Array | null> {
    if (!this.isTouched(file)) return this.head.readFile(file);
    await this.pending;
    try {
      return await fsp.readFile(path.join(this.dir, file));
    } catch {
      return null; // missing, or a directory
    }
  }

  async readText(file: string): Promise<string | null> {
    const content = await this.readFile(file);
    return content === null ? null : utf8.decode(content);
  }

  async oid(file: string): Promise<string | null> {
    if (!this.isTouched(file)) return this.head.oid(file);
    const content = await this.readFile(file);
    if (content === null) return null;
    return createHash("sha1").update(`blob ${content.byteLength}\0`).update(content).digest("hex");
  }

  async list(dir: string): Promise<TreeEntryInfo[] | null> {
    if (!this.isTouched(dir) && !this.hasTouchedBelow(dir)) return this.head.list(dir);
    await this.pending;
    let names: { name: string; isDirectory(): boolean }[];
    try {
      names = await fsp.readdir(path.join(this.dir, dir), { withFileTypes: true });
    } catch {
      return null;
    }
    const base = new Map(((await this.head.list(dir)) ?? []).map((e) => [e.name, e]));
    const entries: TreeEntryInfo[] = [];
    for (const d of names) {
      if (dir === "" && d.name === ".git") continue;
      const child = dir === "" ? d.name : `${dir}/${d.name}`;
      const type = d.isDirectory() ? "tree" : "blob";
      const untouched = !this.isTouched(child) && !this.hasTouchedBelow(child);
      const known = base.get(d.name);
      entries.push(untouched && known?.type === type ? known : { name: d.name, type });
    }
    return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  private isTouched(file: string): boolean {
    return this.edited.some((e) => file === e || file.startsWith(`${e}/`));
  }

  private hasTouchedBelow(dir: string): boolean {
    return dir === "" ? this.edited.length > 0 : this.edited.some((e) => e.startsWith(`${dir}/`));
  }
}


async function exitCode(command: string, args: string[], cwd: string): Promise<number | null> {
  const child = spawn(command, args, { cwd, stdio: "ignore" });
  const [code] = (await once(child, "exit")) as [number | null];
  return code;
}

async function exists(file: string): Promise<boolean> {
  try {
    await fsp.access(file);
    return true;
  } catch {
    return false;
  }
}
