/**
 * The programs built from their Go modules for the tests (scripts/build-test-tools.sh, ADR 0022):
 * the real kube-apiserver and etcd, kube-controller-manager (its garbage collector, ADR 0031), Helm
 * as the oracle for our Helm engine, Flux's source- and kustomize-controller and Argo CD (ADR 0035),
 * and the CRDs of Flux and Argo CD as their modules ship them. The global setup builds what is
 * missing before the first file (minutes on a fresh machine, a cache hit after), says what it
 * builds and for how long (`buildProgress`), and hands the paths to the workers in the
 * environment; `testTool` reads them.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export const TEST_TOOLS = ["kube-apiserver", "kube-controller-manager", "etcd", "helm", "source-controller", "kustomize-controller", "argocd", "crds"] as const;
export type TestToolName = (typeof TEST_TOOLS)[number];

const variable = (name: TestToolName) => `GITOPS_BROKER_TOOL_${name.toUpperCase().replace(/-/g, "_")}`;

/** How often a build in progress says how long it has taken so far. */
export const PROGRESS_INTERVAL_MS = 30_000;

/**
 * Builds the tools that are not cached yet and sets their variables in this process's environment
 * (the workers inherit it). A build that fails rejects with the script's own words: a test that
 * needs a tool fails, it is never skipped. What the script says goes to stderr as it comes,
 * the Go toolchain's hundreds of "go: downloading" lines counted instead of shown (buildProgress).
 */
export async function buildTestTools(names: readonly TestToolName[] = TEST_TOOLS, write: (text: string) => void = (t) => void process.stderr.write(t)): Promise<void> {
  const script = path.join(ROOT, "scripts/build-test-tools.sh");
  const child = spawn(script, [...names], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  const progress = buildProgress(write);
  const ticker = setInterval(() => progress.tick(), PROGRESS_INTERVAL_MS).unref();
  const stderr: string[] = [];
  const built: string[] = [];
  createInterface({ input: child.stderr }).on("line", (line) => {
    stderr.push(line);
    progress.line(line);
  });
  createInterface({ input: child.stdout }).on("line", (line) => built.push(line));
  const [code] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (exitCode, signal) => resolve([exitCode, signal]));
  }).finally(() => clearInterval(ticker));
  if (code !== 0) {
    throw new Error(`scripts/build-test-tools.sh ${names.join(" ")} failed: ${stderr.slice(-5).join("\n")}`);
  }
  progress.done();
  for (const line of built) {
    const [name, file] = line.split("=", 2) as [TestToolName, string];
    process.env[variable(name)] = file;
  }
}

/** Minutes and seconds, as a person reads them: "45 s", "3 min 5 s". */
export function elapsed(ms: number): string {
  const seconds = Math.round(ms / 1000);
  return seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

/**
 * What the first run says while scripts/build-test-tools.sh builds: that the build is a one-time
 * one and why it takes minutes (when the script says it builds a tool), how long the tool in
 * progress has taken so far (`tick`, every PROGRESS_INTERVAL_MS) and how long all of it took
 * (`done`). A run whose tools are cached says nothing.
 */
export function buildProgress(write: (text: string) => void, now: () => number = () => performance.now()) {
  const started = now();
  let building: { name: string; since: number } | undefined;
  let downloads = 0;
  let builtAny = false;
  return {
    line(line: string): void {
      if (line.startsWith("go: downloading ")) {
        downloads++;
        return;
      }
      const tool = /^building (\S+)/.exec(line)?.[1];
      if (tool !== undefined && !builtAny) {
        write(
          "\nThe tests run real programs built from their Go modules (kube-apiserver, etcd, Helm ...: scripts/build-test-tools.sh, ADR 0022).\n" +
            "A one-time build per machine, minutes on 2 cores; later runs use the cache (~/.cache/gitops-broker/test-tools).\n",
        );
      }
      if (tool !== undefined) {
        builtAny = true;
        building = { name: tool, since: now() };
      } else if (/^built /.test(line)) {
        building = undefined;
      }
      write(`${line}\n`);
    },
    tick(): void {
      const modules = downloads > 0 ? `, ${downloads} Go modules downloaded so far` : "";
      if (building) write(`  still building ${building.name}: ${elapsed(now() - building.since)}${modules} (one-time)\n`);
      else if (!builtAny) write(`  scripts/build-test-tools.sh: ${elapsed(now() - started)} so far (it waits while another run on this machine builds the same tool)\n`);
      else write(`  scripts/build-test-tools.sh: ${elapsed(now() - started)} so far\n`);
    },
    done(): void {
      if (builtAny) write(`The test tools are ready after ${elapsed(now() - started)}; the tests start.\n\n`);
    },
  };
}

/** The path of a built tool; throws with the reason when the global setup did not build it. */
export function testTool(name: TestToolName): string {
  const file = process.env[variable(name)];
  if (file === undefined || file === "") {
    throw new Error(`${name} was not built: the global setup (test/support/global-setup.ts) runs scripts/build-test-tools.sh; run it by hand to see why`);
  }
  return file;
}
