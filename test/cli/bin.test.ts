import { copyFile, mkdir, rm, symlink, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTempDir } from "../support/git-fixtures.js";
import { PROCESS_TEST_TIMEOUT_MS, runProcess, startProcess } from "../support/processes.js";

const PROJECT = path.resolve(import.meta.dirname, "../..");

/**
 * bin/gitops-broker.js in a project of its own whose sources and build only say which one ran:
 * the build when it is newer than every source file, else the sources through tsx.
 */
let dir: string;

async function which(): Promise<string> {
  const { code, stdout, stderr } = await runProcess(process.execPath, [path.join(dir, "bin/gitops-broker.js"), "clusters"]);
  if (code !== 0) throw new Error(`bin/gitops-broker.js clusters exited with ${String(code)}: ${stderr}`);
  return stdout.trim();
}

async function age(file: string, secondsAgo: number): Promise<void> {
  const t = new Date(Date.now() - secondsAgo * 1000);
  await utimes(path.join(dir, file), t, t);
}

beforeAll(async () => {
  dir = await createTempDir("bin-test-");
  await mkdir(path.join(dir, "bin"));
  await mkdir(path.join(dir, "src/cli"), { recursive: true });
  await copyFile(path.join(PROJECT, "bin/gitops-broker.js"), path.join(dir, "bin/gitops-broker.js"));
  await symlink(path.join(PROJECT, "node_modules"), path.join(dir, "node_modules"));
  await writeFile(path.join(dir, "package.json"), JSON.stringify({ type: "module", version: "9.8.7" }));
  const main = (what: string) => `export async function main(args: string[]): Promise<number> { console.log("${what} " + args.join(" ")); return 0; }\n`;
  await writeFile(path.join(dir, "src/cli/main.ts"), main("sources"));
  await writeFile(path.join(dir, "src/cli/other.ts"), "export {};\n");
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("bin/gitops-broker.js", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("answers --version from package.json without loading the broker", async () => {
    // Loading main (sources or build) would print "sources --version".
    for (const flag of ["--version", "-V"]) {
      const { stdout, stderr } = await runProcess(process.execPath, [path.join(dir, "bin/gitops-broker.js"), flag]);
      expect({ stdout, stderr }).toEqual({ stdout: "9.8.7\n", stderr: "" });
    }
  });

  it("ends quietly when its reader went away (gitops-broker --help | head -3): no EPIPE stack, SIGPIPE's status", async () => {
    const help = startProcess(process.execPath, [path.join(PROJECT, "bin/gitops-broker.js"), "--help"]);
    // Closed before node has even started: its first write finds no reader.
    help.child.stdout!.destroy();
    expect(await help.exited).toEqual({ code: 141, signal: null });
    expect(help.stderr()).toBe("");
  });

  it("runs the sources when there is no build", async () => {
    expect(await which()).toBe("sources clusters");
  });

  it("runs the build when it is newer than every source file, the sources again once one is edited", async () => {
    await mkdir(path.join(dir, "dist/cli"), { recursive: true });
    await writeFile(path.join(dir, "dist/cli/main.js"), 'export async function main(args) { console.log("build " + args.join(" ")); return 0; }\n');
    await age("src/cli/main.ts", 60);
    await age("src/cli/other.ts", 60);
    await age("dist/cli/main.js", 30);
    expect(await which()).toBe("build clusters");
    await age("src/cli/other.ts", 0); // edited after the build
    expect(await which()).toBe("sources clusters");
  });
});
