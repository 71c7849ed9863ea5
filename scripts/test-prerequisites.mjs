// @ts-check
/**
 * The programs the tests run besides Node, found before anything is built or tested: `npm test`
 * runs this first (package.json's `pretest`), and the global setup (test/support/global-setup.ts)
 * asks the same question for a `npx vitest run` of its own. It takes a second or two, where a missing
 * program would otherwise be found by the test that needs it, after minutes of building and testing.
 *
 *   git             the tests' remotes are served over smart HTTP by git's own upload-pack and receive-pack
 *   age, age-keygen the SOPS tests unwrap data keys with the real age CLI
 *   openssl         the client-certificate and kube-apiserver tests make CAs and certificates with it
 *   nginx           test/broker/behind-a-proxy.test.ts puts it in front of the broker (its service is never started)
 *   redis-server    real Argo CD's cache (test/real-agents/argocd.test.ts, ADR 0035; its service is never started)
 *   flock           every test file holds one of the machine's test-file slots with it (test/support/file-slots.ts, ADR 0039)
 *   go              1.21 or later: it fetches the release each go.mod names (GOTOOLCHAIN) from the Go
 *                   module proxy, to build the test tools once (scripts/build-test-tools.sh, ADR 0022)
 *
 * Looked for on PATH, then in GITOPS_BROKER_TEST_PROGRAM_DIRS (default /usr/sbin:/usr/local/go/bin:
 * Debian's nginx and Go's own installer, often not on a user's PATH).
 *
 *   node scripts/test-prerequisites.mjs            exit 1 naming every missing program and the
 *                                                  one command that installs them all
 *   node scripts/test-prerequisites.mjs --install  as root with apt-get (a fresh Debian machine,
 *                                                  CI): install the missing Debian packages first
 */
import { execFileSync, spawnSync } from "node:child_process";
import { accessSync, constants, readFileSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The Go release the test tools are built with (tools/kube-apiserver/go.mod's toolchain line): the one to install. */
export const TOOLS_GO = /^toolchain (\S+)$/m.exec(readFileSync(path.join(ROOT, "tools/kube-apiserver/go.mod"), "utf8"))?.[1] ?? "";

export const DEFAULT_PROGRAM_DIRS = ["/usr/sbin", "/usr/local/go/bin"];

/**
 * Each program and the Debian package that has it (go: none recent enough, see `tooOldGo`).
 * @type {{ name: string; debian: string | undefined }[]}
 */
export const PROGRAMS = [
  { name: "git", debian: "git" },
  { name: "age", debian: "age" },
  { name: "age-keygen", debian: "age" },
  { name: "openssl", debian: "openssl" },
  { name: "nginx", debian: "nginx" },
  { name: "redis-server", debian: "redis-server" },
  { name: "flock", debian: "util-linux" },
  { name: "go", debian: undefined },
];

/**
 * What the tests lack in `env`: each missing program with the reason when it is there but unusable,
 * and PATH with the directories of the ones found off it added.
 * @param {NodeJS.ProcessEnv} env
 * @returns {{ missing: { name: string; debian: string | undefined; note?: string }[]; path: string }}
 */
export function findPrograms(env = process.env) {
  const pathDirs = (env.PATH ?? "").split(path.delimiter).filter((d) => d !== "");
  const extra = (env.GITOPS_BROKER_TEST_PROGRAM_DIRS ?? DEFAULT_PROGRAM_DIRS.join(path.delimiter)).split(path.delimiter).filter((d) => d !== "");
  const added = new Set();
  /** @param {string} name */
  const find = (name) => {
    for (const dir of [...pathDirs, ...extra]) {
      const file = path.join(dir, name);
      try {
        accessSync(file, constants.X_OK);
      } catch {
        continue;
      }
      if (!pathDirs.includes(dir)) added.add(dir);
      return file;
    }
    return undefined;
  };
  /** @type {{ name: string; debian: string | undefined; note?: string }[]} */
  const missing = [];
  for (const program of PROGRAMS) {
    const file = find(program.name);
    const note = file !== undefined && program.name === "go" ? tooOldGo(file, env) : undefined;
    if (file === undefined) missing.push(program);
    else if (note !== undefined) missing.push({ ...program, note });
  }
  return { missing, path: [...pathDirs, ...added].join(path.delimiter) };
}

/**
 * Undefined for a go command that fetches the releases the go.mod files name from the Go module
 * proxy (Go 1.21 and later, with GOTOOLCHAIN); else a note saying which go was found.
 * @param {string} file
 * @param {NodeJS.ProcessEnv} env
 */
function tooOldGo(file, env) {
  const run = spawnSync(file, ["env", "GOVERSION"], { env: { ...env, GOTOOLCHAIN: "local" }, encoding: "utf8" });
  const version = run.status === 0 ? run.stdout.trim() : "";
  const [, major, minor] = /^go(\d+)\.(\d+)/.exec(version) ?? [];
  if (Number(major) > 1 || (Number(major) === 1 && Number(minor) >= 21)) return undefined;
  return `${file} is ${version || "not runnable"}; Go 1.21 or later fetches the releases the go.mod files name`;
}

/**
 * The one command that installs every missing program: Debian's packages with apt-get, the test
 * tools' Go release from go.dev into /usr/local/go (Debian 12's golang-go is go1.19, too old to
 * fetch the releases the go.mod files name).
 * @param {{ debian: string | undefined }[]} missing
 * @param {boolean} root
 */
export function installCommand(missing, root) {
  const sudo = root ? "" : "sudo ";
  const packages = [...new Set(missing.map((p) => p.debian).filter((p) => p !== undefined))];
  const commands = [];
  if (packages.length > 0) commands.push(`${sudo}apt-get install -y ${packages.join(" ")}`);
  if (missing.some((p) => p.name === "go")) {
    const arch = process.arch === "x64" ? "amd64" : process.arch;
    commands.push(`curl -fsSL https://go.dev/dl/${TOOLS_GO}.linux-${arch}.tar.gz | ${sudo}tar -C /usr/local -xz`);
  }
  return commands.join(" && ");
}

/**
 * The message for what is missing, or undefined when nothing is.
 * @param {{ name: string; debian: string | undefined; note?: string }[]} missing
 * @param {boolean} root
 */
export function describeMissing(missing, root) {
  if (missing.length === 0) return undefined;
  const names = missing.map((p) => (p.note === undefined ? p.name : `${p.name} (${p.note})`));
  return [
    `The tests need programs this machine does not have: ${names.join(", ")}.`,
    "Install them all with:",
    `  ${installCommand(missing, root)}`,
    ...(root ? [] : ["(npm test installs Debian's packages itself when it runs as root.)"]),
  ].join("\n");
}

/** Installs the missing Debian packages with apt-get, as root; true when it ran. */
function install(/** @type {{ debian: string | undefined }[]} */ missing) {
  const packages = [...new Set(missing.map((p) => p.debian).filter((p) => p !== undefined))];
  if (packages.length === 0 || process.getuid?.() !== 0) return false;
  if (spawnSync("apt-get", ["--version"], { stdio: "ignore" }).status !== 0) return false;
  const started = performance.now();
  process.stderr.write(`Installing Debian's ${packages.join(", ")} for the tests (apt-get, once per machine) ...\n`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  execFileSync("apt-get", ["update", "-qq"], { stdio: ["ignore", "ignore", "inherit"], env });
  execFileSync("apt-get", ["install", "-y", "-qq", ...packages], { stdio: ["ignore", "ignore", "inherit"], env });
  process.stderr.write(`Installed ${packages.join(", ")} in ${Math.round((performance.now() - started) / 1000)} s.\n`);
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = process.getuid?.() === 0;
  let { missing } = findPrograms();
  if (process.argv.includes("--install") && install(missing)) ({ missing } = findPrograms());
  const message = describeMissing(missing, root);
  if (message !== undefined) {
    process.stderr.write(`${message}\n`);
    process.exitCode = 1;
  }
}
