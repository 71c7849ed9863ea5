import { execFileSync } from "node:child_process";
import { chmod, realpath, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { TOOLS_GO, describeMissing, findPrograms, installCommand } from "../../scripts/test-prerequisites.mjs";
import { PROCESS_TEST_TIMEOUT_MS, runProcess, trackedTempDir } from "../support/processes.js";

/**
 * scripts/test-prerequisites.mjs: `npm test` on a machine without the programs the tests run stops
 * before anything is built or tested, naming every one of them and the one command that installs
 * them all.
 */

const ROOT = path.resolve(import.meta.dirname, "../..");
const ALL = ["git", "age", "age-keygen", "openssl", "nginx", "redis-server", "flock", "go"];

/** A directory holding links to these programs (and the fakes written into it). */
async function binDir(links: Record<string, string>): Promise<string> {
  const dir = await trackedTempDir("prerequisites-bin-");
  for (const [name, target] of Object.entries(links)) await symlink(target, path.join(dir, name));
  return dir;
}

/** A `go` that says it is `version` (`go env GOVERSION`). */
async function fakeGo(dir: string, version: string): Promise<void> {
  const file = path.join(dir, "go");
  await writeFile(file, `#!/bin/sh\necho ${version}\n`);
  await chmod(file, 0o755);
}

describe("npm test on a machine without the programs the tests run", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("stops before any build or test, naming each missing program and the one command that installs them all", async () => {
    const npm = await realpath(execFileSync("sh", ["-c", "command -v npm"], { encoding: "utf8" }).trim());
    // Node, npm and the shell npm runs scripts with: nothing the tests need besides.
    const bin = await binDir({ node: process.execPath, npm, sh: "/bin/sh" });
    const { code, stdout, stderr } = await runProcess(path.join(bin, "npm"), ["test"], {
      cwd: ROOT,
      env: { PATH: bin, HOME: process.env.HOME, GITOPS_BROKER_TEST_PROGRAM_DIRS: "" },
      ceilingMs: PROCESS_TEST_TIMEOUT_MS,
    });
    expect(code, `${stdout}\n${stderr}`).not.toBe(0);
    expect(stderr).toContain(`The tests need programs this machine does not have: ${ALL.join(", ")}.`);
    const install = process.getuid?.() === 0 ? "" : "sudo ";
    expect(stderr).toContain(`  ${install}apt-get install -y git age openssl nginx redis-server util-linux && curl -fsSL https://go.dev/dl/${TOOLS_GO}.linux-`);
    // The prerequisites are all it ran: not the check, not vitest, not a build.
    expect(`${stdout}\n${stderr}`).toContain("> gitops-broker@0.1.0 pretest");
    expect(`${stdout}\n${stderr}`).not.toMatch(/> gitops-broker@0\.1\.0 (test|check|deps|test:vitest)$/m);
  });
});

describe("findPrograms", () => {
  it("finds a program off PATH in the extra directories, and puts that directory on the PATH it returns", async () => {
    const onPath = await binDir({ git: "/bin/true", age: "/bin/true", "age-keygen": "/bin/true", openssl: "/bin/true", flock: "/bin/true" });
    const off = await binDir({ nginx: "/bin/true", "redis-server": "/bin/true" });
    await fakeGo(off, TOOLS_GO);
    const found = findPrograms({ PATH: onPath, GITOPS_BROKER_TEST_PROGRAM_DIRS: off });
    expect(found).toEqual({ missing: [], path: [onPath, off].join(path.delimiter) });
  });

  it("takes a go of 1.21 or later, which fetches the releases the go.mod files name, and names an older one", async () => {
    const dir = await binDir({});
    await fakeGo(dir, "go1.21.0");
    expect(findPrograms({ PATH: dir, GITOPS_BROKER_TEST_PROGRAM_DIRS: "" }).missing.map((p) => p.name)).not.toContain("go");
    const old = await binDir({});
    await fakeGo(old, "go1.19.8");
    const { missing } = findPrograms({ PATH: old, GITOPS_BROKER_TEST_PROGRAM_DIRS: "" });
    expect(missing.find((p) => p.name === "go")).toMatchObject({
      note: `${path.join(old, "go")} is go1.19.8; Go 1.21 or later fetches the releases the go.mod files name`,
    });
  });
});

describe("the install command", () => {
  it("is one apt-get for Debian's packages (age once for age and age-keygen), with sudo when not root", () => {
    const missing = findPrograms({ PATH: "", GITOPS_BROKER_TEST_PROGRAM_DIRS: "" }).missing.filter((p) => p.name !== "go");
    expect(installCommand(missing, false)).toBe("sudo apt-get install -y git age openssl nginx redis-server util-linux");
    expect(installCommand(missing, true)).toBe("apt-get install -y git age openssl nginx redis-server util-linux");
  });

  it("adds Go's release from go.dev when go is missing: Debian 12's golang-go is too old to fetch it", () => {
    const go = findPrograms({ PATH: "", GITOPS_BROKER_TEST_PROGRAM_DIRS: "" }).missing.filter((p) => p.name === "go");
    expect(installCommand(go, false)).toMatch(new RegExp(`^curl -fsSL https://go\\.dev/dl/${TOOLS_GO}\\.linux-\\w+\\.tar\\.gz \\| sudo tar -C /usr/local -xz$`));
  });

  it("says nothing when nothing is missing", () => {
    expect(describeMissing([], false)).toBeUndefined();
  });
});
