import fs from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ConflictError, GitRemoteError, InvalidArgumentError } from "../errors/index.js";
import { instanceRecordPath } from "../repo/index.js";
import {
  createBareRemote,
  createTempDir,
  fsck,
  git,
  gitLog,
  installPreReceiveHook,
  pushExternalCommit,
  readRemoteFile,
  readRemoteFiles,
  revParse,
} from "../../test/support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../../test/support/git-http-server.js";
import { createGitWriter, type GitWriter, type GitWriterOptions, type Operation } from "./index.js";
import { waitUntil } from "../../test/support/processes.js";

const AUTHOR = { name: "gitops-broker", email: "broker@example.com" };
const NOW = new Date("2024-06-01T12:00:00Z");

interface LogCall {
  level: "debug" | "info" | "warn" | "error";
  obj: Record<string, unknown>;
  msg: string;
}

let root: string;
let server: GitHttpServer;
let repoCount = 0;
const writers: GitWriter[] = [];

beforeAll(async () => {
  root = await createTempDir("gitwriter-test-");
  server = await startGitHttpServer({ root: path.join(root, "remotes") });
});

afterEach(async () => {
  await Promise.all(writers.splice(0).map((w) => w.close()));
  await server.start();
  server.setAvailable(true);
});

afterAll(async () => {
  await server.close();
  await fs.rm(root, { recursive: true, force: true });
});

interface Setup {
  bare: string;
  gitdir: string;
  writer: GitWriter;
  logs: LogCall[];
  delays: number[];
  pushes: () => number;
}

/** A bare remote (seeded with `files` unless null) served over HTTP, and a started writer on it. */
async function setup(
  files: Record<string, string> | null = { "README.md": "seed\n" },
  options: Partial<GitWriterOptions> = {},
): Promise<Setup> {
  repoCount += 1;
  const name = `repo-${repoCount}.git`;
  const bare = await createBareRemote(path.join(root, "remotes"), name, files ?? undefined);
  const gitdir = path.join(root, `work-${repoCount}.git`);
  const logs: LogCall[] = [];
  const delays: number[] = [];
  const writer = createWriter(gitdir, server.url(name), logs, { ...options, delay: options.delay ?? recordDelay(delays) });
  await writer.start();
  const pushes = () => logs.filter((l) => l.msg === "pushed").length;
  return { bare, gitdir, writer, logs, delays, pushes };
}

function createWriter(gitdir: string, remoteUrl: string, logs: LogCall[], options: Partial<GitWriterOptions> = {}): GitWriter {
  const log = (level: LogCall["level"]) => (obj: object, msg: string) => {
    logs.push({ level, obj: obj as Record<string, unknown>, msg });
  };
  const writer = createGitWriter({
    gitdir,
    remoteUrl,
    branch: "main",
    author: AUTHOR,
    logger: { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") },
    now: () => NOW,
    // As long as a push may take on a machine loaded 20x (50 operations at once took over 2 s); the
    // tests of the deadline set their own.
    remoteTimeoutMs: 30_000,
    ...options,
  });
  writers.push(writer);
  return writer;
}

/** Records the backoff the writer asks for and waits a little (real time: deadlines are real). */
function recordDelay(delays: number[]): (ms: number) => Promise<void> {
  return async (ms) => {
    delays.push(ms);
    await sleep(Math.min(ms, 20));
  };
}

function writeOp(file: string, content: string, subject = `write ${file}`): Operation<string> {
  return async (draft) => {
    draft.write(file, content);
    return { commit: { subject, trailers: {} }, result: file };
  };
}

function waitFor(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  return waitUntil(condition, what);
}

function receivePacks(): number {
  return server.requests.filter((r) => r.method === "POST" && r.path.endsWith("/git-receive-pack")).length;
}

describe("git writer", () => {
  it("makes one commit per operation with subject, body, trailers, author and the injected date", async () => {
    const { bare, writer } = await setup();
    const [seed] = await gitLog(bare);

    const submitted = await writer.submit(async (draft) => {
      draft.write("clusters/c1/instances/i1.yaml", "kind: Instance\n");
      return {
        commit: { subject: "provision i1", body: "Plan small.", trailers: { "Instance-Id": "i1", Operation: "provision" } },
        result: 42,
      };
    });

    const log = await gitLog(bare);
    expect(log).toHaveLength(2);
    expect(submitted).toEqual({ result: 42, commit: log[0]!.oid });
    expect(log[0]!.message).toBe("provision i1\n\nPlan small.\n\nInstance-Id: i1\nOperation: provision");
    expect(log[0]!.parents).toEqual([seed!.oid]);
    expect(log[0]!.author).toEqual({ ...AUTHOR, date: "2024-06-01T12:00:00+00:00" });
    expect(log[0]!.committer).toEqual({ ...AUTHOR, date: "2024-06-01T12:00:00+00:00" });
    expect(await readRemoteFile(bare, "main", "clusters/c1/instances/i1.yaml")).toBe("kind: Instance\n");
    expect(await readRemoteFile(bare, "main", "README.md")).toBe("seed\n");
    expect(writer.snapshot().commit).toBe(log[0]!.oid);
    expect(await writer.snapshot().readText("clusters/c1/instances/i1.yaml")).toBe("kind: Instance\n");
  });

  it("makes no commit for an unchanged draft, whatever the outcome says", async () => {
    const { bare, writer } = await setup();
    const before = await gitLog(bare);

    const read = await writer.submit(async (draft) => ({ commit: null, result: await draft.readText("README.md") }));
    const same = await writer.submit(async (draft) => {
      draft.write("README.md", "seed\n");
      draft.remove("no/such/file");
      return { commit: { subject: "rewrite README", trailers: {} }, result: "same" };
    });
    const undone = await writer.submit(async (draft) => {
      draft.write("tmp/x", "1");
      draft.remove("tmp");
      return { commit: { subject: "write and remove", trailers: {} }, result: "undone" };
    });
    const uncommitted = await writer.submit(async (draft) => {
      draft.write("ignored.txt", "1");
      return { commit: null, result: "ignored" };
    });

    expect([read, same, undone, uncommitted]).toEqual([
      { result: "seed\n", commit: null },
      { result: "same", commit: null },
      { result: "undone", commit: null },
      { result: "ignored", commit: null },
    ]);
    expect(await gitLog(bare)).toEqual(before);
  });

  it("lets each operation read the edits of earlier operations that are not pushed yet", async () => {
    const { bare, writer } = await setup();
    const increment: Operation<number> = async (draft) => {
      const n = Number((await draft.readText("counter")) ?? "0") + 1;
      draft.write("counter", String(n));
      return { commit: { subject: `counter ${n}`, trailers: {} }, result: n };
    };
    const read: Operation<string | null> = async (draft) => ({ commit: null, result: await draft.readText("counter") });

    const results = await Promise.all([
      writer.submit(increment),
      writer.submit(increment),
      writer.submit(read),
      writer.submit(increment),
    ]);

    expect(results.map((r) => r.result)).toEqual([1, 2, "2", 3]);
    expect(results[2].commit).toBeNull();
    const log = await gitLog(bare);
    expect(log.map((c) => c.subject)).toEqual(["counter 3", "counter 2", "counter 1", "initial commit"]);
    expect(await readRemoteFile(bare, "main", "counter")).toBe("3");
  });

  it("turns 50 concurrent operations into 50 commits of a linear history, in fewer pushes", async () => {
    const { bare, gitdir, writer, pushes } = await setup();
    const receivePacksBefore = receivePacks();
    const ids = Array.from({ length: 50 }, (_, i) => `instance-${i}`);

    const results = await Promise.all(
      ids.map((id) => writer.submit(writeOp(instanceRecordPath(id), `id: ${id}\n`, `provision ${id}`))),
    );

    const log = await gitLog(bare);
    expect(log).toHaveLength(51);
    // Linear: each commit has exactly one parent, the next older one.
    log.slice(0, -1).forEach((c, i) => expect(c.parents).toEqual([log[i + 1]!.oid]));
    expect(new Set(results.map((r) => r.commit)).size).toBe(50);
    expect(results.map((r) => r.commit).reverse()).toEqual(log.slice(0, 50).map((c) => c.oid));
    expect(await readRemoteFiles(bare, "main", ids.map((id) => instanceRecordPath(id)))).toEqual(ids.map((id) => `id: ${id}\n`));
    await fsck(bare);
    await fsck(gitdir);
    expect(pushes()).toBeLessThan(50);
    expect(receivePacks() - receivePacksBefore).toBe(pushes());
  });

  it("sends operations that arrive during a push together in the next push; the snapshot shows pushed commits only", async () => {
    const { bare, writer, logs } = await setup();
    const gate = path.join(root, `gate-${repoCount}`);
    await fs.mkdir(gate);
    // The hook holds the push while `block` exists, after saying so with `in-flight`.
    await installPreReceiveHook(
      bare,
      `if [ -f ${gate}/block ]; then touch ${gate}/in-flight; while [ -f ${gate}/block ]; do sleep 0.02; done; fi\n`,
    );
    await fs.writeFile(path.join(gate, "block"), "");
    const tipBefore = writer.snapshot().commit;

    const first = writer.submit(writeOp("a.txt", "a"));
    await waitFor(() => fs.access(path.join(gate, "in-flight")).then(() => true, () => false), "the first push");
    const later = [writer.submit(writeOp("b.txt", "b")), writer.submit(writeOp("c.txt", "c")), writer.submit(writeOp("d.txt", "d"))];
    expect(writer.snapshot().commit).toBe(tipBefore);
    expect(await writer.snapshot().readFile("a.txt")).toBeNull();
    await fs.rm(path.join(gate, "block"));

    const a = await first;
    const [b, c, d] = await Promise.all(later);
    const log = await gitLog(bare);
    expect(log.slice(0, 4).map((x) => x.oid)).toEqual([d!.commit, c!.commit, b!.commit, a.commit]);
    expect(log[2]!.parents).toEqual([a.commit]);
    const pushed = logs.filter((l) => l.msg === "pushed").map((l) => l.obj.ops);
    expect(pushed).toEqual([1, 3]);
    expect(writer.snapshot().commit).toBe(d!.commit);
  });

  it("retries on top of a commit someone else pushed, keeping their change", async () => {
    const { bare, writer, delays } = await setup();
    await writer.submit(writeOp("mine-1.txt", "1"));
    const external = await pushExternalCommit(bare, { "external.txt": "a human was here\n" }, "human edit");
    let runs = 0;

    const result = await writer.submit(async (draft) => {
      runs += 1;
      draft.write("mine-2.txt", "2");
      return { commit: { subject: "second", trailers: {} }, result: await draft.readText("external.txt") };
    });

    expect(runs).toBe(2);
    expect(result.result).toBe("a human was here\n");
    const log = await gitLog(bare);
    expect(log.map((c) => c.subject)).toEqual(["second", "human edit", "write mine-1.txt", "initial commit"]);
    expect(log[0]!.parents).toEqual([external]);
    expect(await readRemoteFile(bare, "main", "external.txt")).toBe("a human was here\n");
    expect(delays).toHaveLength(1);
    expect(delays[0]).toBeLessThanOrEqual(25);
    await fsck(bare);
  });

  it("rejects only the operation whose precondition breaks on the re-run", async () => {
    const { bare, writer } = await setup();
    await pushExternalCommit(bare, { "claims/x": "taken by a human\n" }, "claim x");
    const runs = { a: 0, claim: 0, c: 0 };
    const claim: Operation<string> = async (draft) => {
      runs.claim += 1;
      if ((await draft.readFile("claims/x")) !== null) throw new ConflictError("x is already claimed");
      draft.write("claims/x", "taken by the broker\n");
      return { commit: { subject: "claim x", trailers: {} }, result: "claimed" };
    };
    const counted = (key: "a" | "c"): Operation<string> => async (draft) => {
      runs[key] += 1;
      draft.write(`${key}.txt`, key);
      return { commit: { subject: `write ${key}`, trailers: {} }, result: key };
    };

    const [a, claimed, c] = await Promise.allSettled([writer.submit(counted("a")), writer.submit(claim), writer.submit(counted("c"))]);

    expect(runs).toEqual({ a: 2, claim: 2, c: 2 });
    expect(a.status).toBe("fulfilled");
    expect(c.status).toBe("fulfilled");
    expect(claimed.status).toBe("rejected");
    expect((claimed as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
    expect(await readRemoteFile(bare, "main", "claims/x")).toBe("taken by a human\n");
    expect(await readRemoteFile(bare, "main", "a.txt")).toBe("a");
    expect(await readRemoteFile(bare, "main", "c.txt")).toBe("c");
    expect((await gitLog(bare)).map((x) => x.subject)).toEqual(["write c", "write a", "claim x", "initial commit"]);
  });

  it("gives up with a 'rejected' GitRemoteError after maxPushAttempts lost races", async () => {
    // A deadline far away: this is about attempts, and a loaded machine takes seconds for three.
    const { bare, writer, logs, delays } = await setup(undefined, { maxPushAttempts: 3, remoteTimeoutMs: 60_000 });
    // A racing replica: while our push is being received, the branch moves on, so receive-pack
    // loses the ref update ("cannot lock ref ... but expected ..."). Every push loses.
    await installPreReceiveHook(
      bare,
      [
        "read old new ref",
        "unset GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES",
        'c=$(git -c user.name=race -c user.email=race@example.com commit-tree "$old^{tree}" -p "$old" -m race)',
        'git update-ref "$ref" "$c"',
        "",
      ].join("\n"),
    );
    const receivePacksBefore = receivePacks();

    const error = await writer.submit(writeOp("lost.txt", "x")).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(GitRemoteError);
    expect((error as GitRemoteError).kind).toBe("rejected");
    expect((error as GitRemoteError).remoteMessage).toMatch(/^error: cannot lock ref 'refs\/heads\/main'/);
    expect(receivePacks() - receivePacksBefore).toBe(3);
    expect(delays).toHaveLength(2);
    expect(await readRemoteFile(bare, "main", "lost.txt")).toBeNull();
    expect(logs.some((l) => l.level === "warn" && l.msg === "push rejected too often, giving up")).toBe(true);
    // The queue is not stuck: once the race is over, the next operation lands.
    await fs.rm(path.join(bare, "hooks", "pre-receive"));
    await writer.submit(writeOp("next.txt", "x"));
    expect(await readRemoteFile(bare, "main", "next.txt")).toBe("x");
  });

  it("rejects the batch with a 'hook' GitRemoteError carrying the hook's message, and logs it", async () => {
    const { bare, writer, logs } = await setup();
    const tip = writer.snapshot().commit;
    await installPreReceiveHook(bare, 'echo "policy: clusters/ is frozen" >&2\nexit 1\n');

    const error = await writer.submit(writeOp("clusters/c1/x.yaml", "x")).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(GitRemoteError);
    expect((error as GitRemoteError).kind).toBe("hook");
    expect((error as GitRemoteError).remoteMessage).toBe("policy: clusters/ is frozen");
    expect(logs).toContainEqual({
      level: "error",
      obj: { remoteMessage: "policy: clusters/ is frozen", ops: 1 },
      msg: "push refused by the remote",
    });
    expect(writer.snapshot().commit).toBe(tip);
    expect(await writer.snapshot().readFile("clusters/c1/x.yaml")).toBeNull();
    expect(await revParse(path.join(root, `work-${repoCount}.git`), "refs/heads/main")).toBe(tip);

    await fs.rm(path.join(bare, "hooks", "pre-receive"));
    const next = await writer.submit(writeOp("ok.txt", "ok"));
    expect((await gitLog(bare))[0]).toMatchObject({ oid: next.commit, parents: [tip] });
  });

  it("rejects with an 'unreachable' GitRemoteError after remoteTimeoutMs, then recovers by itself", async () => {
    // Long enough for a first failed push and a retry on a loaded machine (300 ms was not).
    const { bare, writer, delays } = await setup(undefined, { remoteTimeoutMs: 2_000 });
    await server.stop();

    const started = performance.now();
    const error = await writer.submit(writeOp("during-outage.txt", "x")).catch((e: unknown) => e);
    const elapsed = performance.now() - started;

    expect(error).toBeInstanceOf(GitRemoteError);
    expect((error as GitRemoteError).kind).toBe("unreachable");
    expect((error as GitRemoteError).remoteMessage).toMatch(/Failed to connect|Couldn't connect/);
    expect(elapsed).toBeGreaterThanOrEqual(2_000);
    expect(delays.length).toBeGreaterThan(0);
    for (const ms of delays) expect(ms).toBeLessThanOrEqual(2_000);
    expect(writer.remoteReachable).toBe(false);

    await server.start();
    const after = await writer.submit(writeOp("after-outage.txt", "y"));
    expect(writer.remoteReachable).toBe(true);
    expect((await gitLog(bare))[0]!.oid).toBe(after.commit);
    expect(await readRemoteFile(bare, "main", "during-outage.txt")).toBeNull();
  });

  it("keeps an operation queued through a short outage and pushes it when the remote is back", async () => {
    const { bare, writer, logs } = await setup(undefined, { remoteTimeoutMs: 10_000 });
    server.setAvailable(false);

    const pending = writer.submit(writeOp("queued.txt", "q"));
    await waitFor(() => logs.some((l) => l.msg === "git remote unreachable, retrying"), "a failed push");
    expect(writer.remoteReachable).toBe(false);
    const warning = logs.find((l) => l.msg === "git remote unreachable, retrying");
    expect(warning?.obj.remoteMessage).toMatch(/503/);
    server.setAvailable(true);

    const result = await pending;
    expect(writer.remoteReachable).toBe(true);
    expect((await gitLog(bare))[0]!.oid).toBe(result.commit);
  });

  it("refresh() adopts what others pushed and notifies onTip listeners; our pushes notify too", async () => {
    const { bare, writer } = await setup();
    const seen: [string | null, string | null][] = [];
    writer.onTip((tip, previous) => seen.push([tip, previous]));
    const start = writer.snapshot().commit;

    const external = await pushExternalCommit(bare, { "docs/notes.md": "notes\n" }, "notes");
    expect(await writer.refresh()).toBe(external);
    expect(await writer.snapshot().readText("docs/notes.md")).toBe("notes\n");
    expect(await writer.refresh()).toBe(external);
    const ours = await writer.submit(writeOp("ours.txt", "o"));

    expect(seen).toEqual([
      [external, start],
      [ours.commit, external],
    ]);
    server.setAvailable(false);
    const error = await writer.refresh().catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "unreachable" });
    expect(writer.remoteReachable).toBe(false);
  });

  it("onPushed: one event per accepted push with its commits and their edited paths; none for fetched commits", async () => {
    const { bare, writer } = await setup({ "README.md": "seed\n", "clusters/a/old/x.yaml": "x\n", "clusters/a/keep.yaml": "k\n" });
    const events: import("./index.js").PushEvent[] = [];
    writer.onPushed((event) => events.push(event));
    const start = writer.snapshot().commit;

    // Held back until all three are queued, so they go out in one push.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const first = writer.submit(async (draft) => {
      await gate;
      draft.write("clusters/a/new.yaml", "n\n");
      draft.remove("clusters/a/old");
      return { commit: { subject: "one", trailers: {} }, result: 1 };
    });
    const second = writer.submit(async (draft) => {
      draft.write("clusters/b/y.yaml", "y\n");
      draft.write("records/i.yaml", "r\n");
      return { commit: { subject: "two", trailers: {} }, result: 2 };
    });
    const unchanged = writer.submit(async (draft) => {
      draft.write("clusters/a/keep.yaml", "k\n");
      return { commit: { subject: "no change", trailers: {} }, result: 3 };
    });
    release();
    const [a, b, c] = await Promise.all([first, second, unchanged]);
    expect(c.commit).toBeNull();
    const ours = [...events];
    expect(ours.length).toBeGreaterThanOrEqual(1);
    // Whatever the batching, the commits are reported once each, in order, with the push's range.
    expect(ours.flatMap((e) => e.commits)).toEqual([
      { commit: a.commit, paths: ["clusters/a/new.yaml", "clusters/a/old"] },
      { commit: b.commit, paths: ["clusters/b/y.yaml", "records/i.yaml"] },
    ]);
    expect(ours[0]!.previous).toBe(start);
    expect(ours.at(-1)!.tip).toBe(b.commit);
    expect(ours.every((e) => e.branch === "main")).toBe(true);

    await pushExternalCommit(bare, { "clusters/a/theirs.yaml": "t\n" }, "theirs");
    await writer.refresh();
    expect(events).toEqual(ours);
  });

  it("keeps its tip when the remote branch is deleted, and recreates the branch with the full history", async () => {
    const { bare, writer, logs } = await setup();
    const [seed] = await gitLog(bare);
    const kept = await writer.submit(writeOp("kept.txt", "k"));
    await git(["update-ref", "-d", "refs/heads/main"], bare);

    expect(await writer.refresh()).toBe(kept.commit);
    expect(logs.some((l) => l.level === "error" && l.msg === "the remote branch is gone; keeping the last known tip")).toBe(true);
    const next = await writer.submit(writeOp("next.txt", "n"));

    expect((await gitLog(bare)).map((c) => c.oid)).toEqual([next.commit, kept.commit, seed!.oid]);
    expect(await readRemoteFile(bare, "main", "kept.txt")).toBe("k");
  });

  it("starts on an empty remote (with a pino logger); the first push creates the branch", async () => {
    const { bare, writer } = await setup(null, { logger: pino({ level: "silent" }) });
    expect(writer.snapshot().commit).toBeNull();
    expect(await writer.snapshot().list("")).toEqual([]);

    const first = await writer.submit(writeOp("catalog/service.yaml", "kind: SFService\n"));

    const log = await gitLog(bare);
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ oid: first.commit, parents: [] });
    expect(await writer.snapshot().list("")).toEqual([
      { name: "catalog", type: "tree", oid: await revParse(bare, "main:catalog") },
    ]);
  });

  it("close() pushes what is queued, then refuses new operations", async () => {
    const { bare, writer } = await setup();
    const queued = [writer.submit(writeOp("1.txt", "1")), writer.submit(writeOp("2.txt", "2"))];

    await writer.close();

    const results = await Promise.all(queued);
    expect((await gitLog(bare))[0]!.oid).toBe(results[1]!.commit);
    await expect(writer.submit(writeOp("3.txt", "3"))).rejects.toMatchObject({ code: "GitWriterClosed" });
  });

  it("on restart discards an unpushed local commit and adopts the remote tip", async () => {
    const { bare, gitdir, writer } = await setup();
    await writer.submit(writeOp("pushed.txt", "p"));
    await writer.close();
    // What a kill -9 could leave: a commit never acknowledged on the branch, a fetch's lock.
    const tip = (await revParse(gitdir, "refs/heads/main"))!;
    const dangling = (await git(["commit-tree", `${tip}^{tree}`, "-p", tip, "-m", "never pushed"], gitdir)).trim();
    await git(["update-ref", "refs/heads/main", dangling], gitdir);
    await fs.writeFile(path.join(gitdir, "refs", "remotes", "origin", "main.lock"), "");
    const external = await pushExternalCommit(bare, { "meanwhile.txt": "m" }, "meanwhile");

    const restarted = createWriter(gitdir, server.url(path.basename(bare)), []);
    await restarted.start();

    expect(restarted.snapshot().commit).toBe(external);
    expect(await revParse(gitdir, "refs/heads/main")).toBe(external);
    const next = await restarted.submit(writeOp("after-restart.txt", "r"));
    const log = await gitLog(bare);
    expect(log[0]).toMatchObject({ oid: next.commit, parents: [external] });
    expect(log.map((c) => c.subject)).not.toContain("never pushed");
  });

  it("readerAt() reads any commit of the local repository, older tips included", async () => {
    const { writer } = await setup();
    const first = await writer.submit(writeOp("v.txt", "1"));
    await writer.submit(writeOp("v.txt", "2"));

    expect(await (await writer.readerAt(first.commit!))?.readText("v.txt")).toBe("1");
    expect(await writer.snapshot().readText("v.txt")).toBe("2");
    expect(await writer.readerAt("0".repeat(40))).toBeNull();
    expect(await writer.readerAt("not-a-commit")).toBeNull();
  });

  it("keeps the local repository bare: no working tree, no index", async () => {
    const { gitdir, writer } = await setup();
    await writer.submit(writeOp("file-in-repo.txt", "x"));

    expect((await git(["rev-parse", "--is-bare-repository"], gitdir)).trim()).toBe("true");
    const names = await fs.readdir(gitdir);
    expect(names).not.toContain("file-in-repo.txt");
    expect(names).not.toContain("index");
    expect(names).not.toContain(".git");
  });

  it("validates its options", () => {
    const valid: GitWriterOptions = {
      gitdir: path.join(root, "unused.git"),
      remoteUrl: "https://git.example.com/gitops.git",
      branch: "main",
      author: AUTHOR,
      logger: pino({ level: "silent" }),
    };
    expect(() => createGitWriter(valid)).not.toThrow();
    for (const bad of [
      { branch: "../main" },
      { branch: "feature..x" },
      { branch: "a.lock" },
      { branch: "-x" },
      { remoteUrl: "--upload-pack=evil" },
      { remoteUrl: "" },
      { author: { name: "a", email: "<a>" } },
      { maxPushAttempts: 0 },
      { remoteTimeoutMs: -1 },
    ]) {
      expect(() => createGitWriter({ ...valid, ...bad }), JSON.stringify(bad)).toThrow(InvalidArgumentError);
    }
  });

  it("rejects an operation that throws, or edits invalid paths, without touching the others", async () => {
    const { bare, writer } = await setup();

    const results = await Promise.allSettled([
      writer.submit(writeOp("ok-1.txt", "1")),
      writer.submit(async () => {
        throw new ConflictError("nope");
      }),
      writer.submit(writeOp("../escape", "x")),
      writer.submit(writeOp("ok-2.txt", "2")),
    ]);

    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "rejected", "fulfilled"]);
    expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(InvalidArgumentError);
    expect((await gitLog(bare)).map((c) => c.subject)).toEqual(["write ok-2.txt", "write ok-1.txt", "initial commit"]);
  });
});
