import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import diagnosticsChannel from "node:diagnostics_channel";
import fs from "node:fs/promises";
import type { Socket } from "node:net";
import path from "node:path";
import { setImmediate } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createBareRemote,
  createTempDir,
  fsck,
  git,
  gitLog,
  installPreReceiveHook,
  pushExternalCommit,
  pushExternalCommitViaPush,
  readRemoteFile,
} from "./git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "./git-http-server.js";

let root: string;
let server: GitHttpServer;
let bare: string;

beforeAll(async () => {
  root = await createTempDir("git-http-server-test-");
  server = await startGitHttpServer({ root: path.join(root, "remotes") });
  bare = await createBareRemote(path.join(root, "remotes"), "served.git", { "README.md": "hello\n" });
});

afterAll(async () => {
  await server.close();
  await fs.rm(root, { recursive: true, force: true });
});

describe("git fixtures", () => {
  it("seed a remote with a fixed-date commit and read it back", async () => {
    const [seed, ...older] = await gitLog(bare);
    expect(older).toEqual([]);
    expect(seed).toMatchObject({ subject: "initial commit", parents: [] });
    expect(seed!.author.date).toBe("2024-01-01T00:00:00+00:00");
    expect(await readRemoteFile(bare, "main", "README.md")).toBe("hello\n");
    expect(await readRemoteFile(bare, "main", "missing")).toBeNull();
    expect(await readRemoteFile(bare, "no-such-branch", "README.md")).toBeNull();
    await fsck(bare);
  });

  it("fsck throws on a corrupt repository", async () => {
    const broken = await createBareRemote(root, "broken.git");
    // Pushed: a push of a few objects leaves them loose (pushExternalCommit leaves a pack).
    await pushExternalCommitViaPush(broken, { "x.txt": "x\n" }, "initial commit");
    const oid = (await git(["rev-parse", "main:x.txt"], broken)).trim();
    const object = path.join(broken, "objects", oid.slice(0, 2), oid.slice(2));
    await fs.chmod(object, 0o644);
    await fs.writeFile(object, "garbage");
    await expect(fsck(broken)).rejects.toThrow(/fsck/);
  });
});

describe("git http server", () => {
  it("serves clone, fetch and push over smart HTTP", async () => {
    const work = path.join(root, "clone");
    await git(["clone", "--quiet", server.url("served.git"), work]);
    expect(await fs.readFile(path.join(work, "README.md"), "utf8")).toBe("hello\n");

    // A 2 MB file: git uploads the pack chunked (no Content-Length).
    await fs.writeFile(path.join(work, "big.bin"), randomBytes(2 * 1024 * 1024));
    await git(["add", "big.bin"], work);
    await git(["commit", "--quiet", "-m", "big"], work);
    await git(["push", "--quiet", "origin", "HEAD:main"], work);
    expect((await gitLog(bare))[0]!.subject).toBe("big");

    await pushExternalCommit(bare, { "other.txt": "other\n" }, "other");
    await git(["fetch", "--quiet", "origin"], work);
    expect((await git(["log", "-1", "--format=%s", "origin/main"], work)).trim()).toBe("other");
    await fsck(bare);
  });

  it("inflates gzip-compressed request bodies", async () => {
    // 60 branches: the clone's list of wants is large enough for git to gzip it.
    const many = await createBareRemote(path.join(root, "remotes"), "many.git");
    let stream = "";
    for (let i = 0; i < 60; i++) {
      stream += `commit refs/heads/b${i}\ncommitter X <x@example.com> 1700000000 +0000\ndata 4\nb${String(i).padStart(2, "0")}\n\n`;
    }
    execFileSync("git", ["fast-import", "--quiet"], { cwd: many, input: stream });
    const before = server.requests.length;

    const mirror = path.join(root, "many-mirror.git");
    await git(["clone", "--quiet", "--mirror", server.url("many.git"), mirror]);

    expect((await git(["for-each-ref", "--format=%(refname)"], mirror)).trim().split("\n")).toHaveLength(60);
    expect(server.requests.slice(before).some((r) => r.contentEncoding === "gzip")).toBe(true);
    await fsck(mirror);
  });

  it("relays hook output and refusals", async () => {
    const hooked = await createBareRemote(path.join(root, "remotes"), "hooked.git", { "a.txt": "a\n" });
    await installPreReceiveHook(hooked, 'echo "no pushes today" >&2\nexit 1\n');
    const work = path.join(root, "hooked-clone");
    await git(["clone", "--quiet", server.url("hooked.git"), work]);
    await git(["commit", "--quiet", "--allow-empty", "-m", "refused"], work);
    await expect(git(["push", "origin", "HEAD:main"], work)).rejects.toThrow(/remote: no pushes today[\s\S]*pre-receive hook declined/);
  });

  it("simulates outages: refused connections after stop(), 503 while unavailable", async () => {
    const url = server.url("served.git");
    await server.stop();
    await expect(git(["ls-remote", url])).rejects.toThrow(/Failed to connect|Couldn't connect/);
    await server.start();
    expect(await git(["ls-remote", url])).toMatch(/refs\/heads\/main/);

    server.setAvailable(false);
    const before = server.requests.length;
    await expect(git(["ls-remote", url])).rejects.toThrow(/503/);
    expect(server.requests.slice(before).map((r) => r.status)).toEqual([503]);
    server.setAvailable(true);
    expect(await git(["ls-remote", url])).toMatch(/refs\/heads\/main/);
  });

  it("holds requests unanswered until released, then serves them", async () => {
    const url = server.url("served.git");
    const before = server.requests.length;
    const arrived = new Promise<void>((resolve) => {
      const onRequest = (message: unknown) => {
        if ((message as { socket: Socket }).socket.localPort !== server.port) return;
        diagnosticsChannel.unsubscribe("http.server.request.start", onRequest);
        resolve();
      };
      diagnosticsChannel.subscribe("http.server.request.start", onRequest);
    });
    const release = server.hold();
    const listed = git(["ls-remote", url]);
    await arrived;
    await setImmediate();
    expect(server.requests.length).toBe(before);
    release();
    expect(await listed).toMatch(/refs\/heads\/main/);
    expect(server.requests.length).toBeGreaterThan(before);
  });

  it("answers 404 for a repository that does not exist, a path out of its root and a directory that is not a repository", async () => {
    await fs.mkdir(path.join(root, "remotes", "plain"), { recursive: true });
    // broken.git (the fsck test's) is a bare repository beside the served root.
    for (const name of ["missing.git", "..%2Fbroken.git", "plain"]) {
      await expect(git(["ls-remote", server.url(name)])).rejects.toThrow(/not found|404/i);
      expect(server.requests.at(-1)?.status).toBe(404);
    }
  });

  it("speaks protocol v2 and the original protocol (the ref advertisement after a service line)", async () => {
    const tip = (await git(["rev-parse", "main"], bare)).trim();
    for (const version of ["2", "0"]) {
      expect(await git(["-c", `protocol.version=${version}`, "ls-remote", server.url("served.git"), "main"])).toBe(`${tip}\trefs/heads/main\n`);
    }
    // What a client of the original protocol reads first (gitprotocol-http, "Smart Clients").
    const answer = await fetch(`${server.url("served.git")}/info/refs?service=git-upload-pack`);
    expect(answer.headers.get("content-type")).toBe("application/x-git-upload-pack-advertisement");
    expect((await answer.text()).startsWith("001e# service=git-upload-pack\n0000")).toBe(true);
  });
});
