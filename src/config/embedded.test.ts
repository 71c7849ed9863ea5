import { execFile } from "node:child_process";
import { mkdir, readdir, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTempDir } from "../../test/support/git-fixtures.js";
import { ConfigError } from "../errors/index.js";
import { silentLogger } from "../log/index.js";
import { namespaceManifest } from "../repo/index.js";
import { prepareEmbedded, SEED_MESSAGE, type PrepareEmbeddedOptions } from "./index.js";

const run = promisify(execFile);

async function git(gitDir: string, ...args: string[]): Promise<string> {
  return (await run("git", ["--git-dir", gitDir, ...args])).stdout.trim();
}

let tmp: string;
let options: PrepareEmbeddedOptions;

async function write(rel: string, content: string): Promise<void> {
  const file = path.join(tmp, rel);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, content);
}

beforeEach(async () => {
  tmp = await createTempDir("gitops-broker-embedded-");
  await write("src/catalog/services/postgres.yaml", "kind: SFService\n");
  await write("src/catalog/plans/postgres-small.yaml", "kind: SFPlan\n");
  await write("src/catalog/templates/postgres.hbs", "{{instance.metadata.name}}\n");
  await write("src/registry/clusters/local.yaml", "kind: Cluster\nspec:\n  namespace: sample-instances\n");
  options = {
    dataDir: path.join(tmp, "state", "data"),
    catalogSource: path.join(tmp, "src", "catalog"),
    registrySource: path.join(tmp, "src", "registry"),
    branch: "trunk",
    author: { name: "Seeder", email: "seeder@example.com" },
    now: () => new Date("2024-05-01T12:00:00Z"),
    log: silentLogger(),
  };
});
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe("prepareEmbedded", () => {
  it("creates a bare repository with one seed commit and no working tree", async () => {
    const { remoteDir } = await prepareEmbedded(options);

    expect(remoteDir).toBe(path.join(options.dataDir, "remote.git"));
    expect((await stat(options.dataDir)).mode & 0o777).toBe(0o700);
    expect(await readdir(options.dataDir)).toEqual(["remote.git"]);
    expect(await readdir(remoteDir)).not.toContain("index");
    expect(await readdir(remoteDir)).not.toContain("seed.marks");
    expect(await git(remoteDir, "rev-parse", "--is-bare-repository")).toBe("true");
    expect(await git(remoteDir, "symbolic-ref", "HEAD")).toBe("refs/heads/trunk");
    expect(await git(remoteDir, "rev-list", "--count", "--all")).toBe("1");
    expect(await git(remoteDir, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%aI|%s", "trunk")).toBe(
      `Seeder <seeder@example.com>|Seeder <seeder@example.com>|2024-05-01T12:00:00+00:00|${SEED_MESSAGE}`,
    );
    expect((await git(remoteDir, "ls-tree", "-r", "--format=%(objectmode) %(path)", "trunk")).split("\n")).toEqual([
      "100644 catalog/plans/postgres-small.yaml",
      "100644 catalog/services/postgres.yaml",
      "100644 catalog/templates/postgres.hbs",
      "100644 clusters/local/namespace.yaml",
      "100644 registry/clusters/local.yaml",
    ]);
    expect(await git(remoteDir, "show", "trunk:catalog/templates/postgres.hbs")).toBe("{{instance.metadata.name}}");
    expect(await git(remoteDir, "show", "trunk:registry/clusters/local.yaml")).toBe("kind: Cluster\nspec:\n  namespace: sample-instances");
    expect(`${await git(remoteDir, "show", "trunk:clusters/local/namespace.yaml")}\n`).toBe(namespaceManifest("sample-instances"));
    // The whole commit object: no header or line beyond these (2024-05-01T12:00:00Z is 1714564800).
    const identity = "Seeder <seeder@example.com> 1714564800 +0000";
    const tree = await git(remoteDir, "rev-parse", "trunk^{tree}");
    expect(await git(remoteDir, "cat-file", "commit", "trunk")).toBe(`tree ${tree}\nauthor ${identity}\ncommitter ${identity}\n\n${SEED_MESSAGE}`);
  });

  it("keeps a file name with a newline, quotes and a backslash as it is", async () => {
    const name = 'catalog/templates/two\nlines "quoted" back\\slash.hbs';
    await write(`src/${name}`, "q\n");
    const { remoteDir } = await prepareEmbedded(options);
    const names = (await run("git", ["--git-dir", remoteDir, "ls-tree", "-r", "-z", "--name-only", "trunk"])).stdout.split("\0");
    expect(names).toContain(name);
    expect(await git(remoteDir, "show", `trunk:${name}`)).toBe("q");
  });

  it("builds the same commit from the same input and clock", async () => {
    const first = await prepareEmbedded(options);
    const second = await prepareEmbedded({ ...options, dataDir: path.join(tmp, "other") });
    expect(await git(second.remoteDir, "rev-parse", "trunk")).toBe(await git(first.remoteDir, "rev-parse", "trunk"));
  });

  it("leaves an existing remote untouched", async () => {
    const { remoteDir } = await prepareEmbedded(options);
    const seeded = await git(remoteDir, "rev-parse", "trunk");

    await write("src/catalog/services/mysql.yaml", "kind: SFService\n");
    const again = await prepareEmbedded({ ...options, now: () => new Date("2025-01-01T00:00:00Z") });

    expect(again.remoteDir).toBe(remoteDir);
    expect(await git(remoteDir, "rev-parse", "trunk")).toBe(seeded);
    expect(await git(remoteDir, "rev-list", "--count", "--all")).toBe("1");
    expect(await readdir(options.dataDir)).toEqual(["remote.git"]);
  });

  it("gives two brokers seeding at once the same single remote", async () => {
    const [a, b] = await Promise.all([prepareEmbedded(options), prepareEmbedded(options)]);
    expect(b.remoteDir).toBe(a.remoteDir);
    expect(await git(a.remoteDir, "rev-list", "--count", "--all")).toBe("1");
    expect(await readdir(options.dataDir)).toEqual(["remote.git"]);
  });

  it("names the namespace gitops-broker-instances when the cluster entry has none", async () => {
    await write("src/registry/clusters/local.yaml", "kind: Cluster\nspec: {}\n");
    const { remoteDir } = await prepareEmbedded(options);
    expect(await git(remoteDir, "show", "trunk:clusters/local/namespace.yaml")).toContain("  name: gitops-broker-instances\n");
  });

  it("refuses a remote.git that is not a bare repository", async () => {
    await mkdir(path.join(options.dataDir, "remote.git"), { recursive: true });
    const error = await prepareEmbedded(options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      { file: path.join(options.dataDir, "remote.git"), path: "", message: "exists but is not a bare Git repository" },
    ]);
  });

  it("refuses a cluster namespace that is not a DNS-1123 label, and leaves no remote behind", async () => {
    await write("src/registry/clusters/local.yaml", "spec:\n  namespace: Not_A_Label\n");
    const error = await prepareEmbedded(options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      { file: path.join(options.registrySource, "clusters", "local.yaml"), path: "spec.namespace", message: "must be a DNS-1123 label" },
    ]);
    expect(await readdir(options.dataDir)).toEqual([]);
  });

  it("names a missing source", async () => {
    await rm(path.join(tmp, "src", "catalog"), { recursive: true });
    const error = await prepareEmbedded(options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    const [problem] = (error as ConfigError).problems;
    expect(problem?.file).toBe(options.catalogSource);
    expect(problem?.message).toMatch(/^cannot be read for the embedded seed: ENOENT/);
  });
});
