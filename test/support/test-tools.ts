/**
 * The programs built from their Go modules for the tests (scripts/build-test-tools.sh, ADR 0022):
 * the real kube-apiserver and etcd, Helm as the oracle for our Helm engine, Flux's source- and
 * kustomize-controller and Argo CD (ADR 0035), and the CRDs of Flux and Argo CD as their modules
 * ship them. The global setup builds what is missing before the first file (minutes on a fresh machine, a cache hit after) and
 * hands the paths to the workers in the environment; `testTool` reads them.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export const TEST_TOOLS = ["kube-apiserver", "etcd", "helm", "source-controller", "kustomize-controller", "argocd", "crds"] as const;
export type TestToolName = (typeof TEST_TOOLS)[number];

const variable = (name: TestToolName) => `GITOPS_BROKER_TOOL_${name.toUpperCase().replace(/-/g, "_")}`;

/**
 * Builds the tools that are not cached yet and sets their variables in this process's environment
 * (the workers inherit it). A build that fails rejects with the script's own words: a test that
 * needs a tool fails, it is never skipped.
 */
export async function buildTestTools(names: readonly TestToolName[] = TEST_TOOLS): Promise<void> {
  const script = path.join(ROOT, "scripts/build-test-tools.sh");
  // The build prints its progress on stderr: shown as it goes, a cold build takes minutes.
  const child = promisify(execFile)(script, [...names], { cwd: ROOT, maxBuffer: 16 << 20 });
  child.child.stderr?.pipe(process.stderr);
  let stdout: string;
  try {
    ({ stdout } = await child);
  } catch (error) {
    const { stderr = "" } = error as { stderr?: string };
    throw new Error(`scripts/build-test-tools.sh ${names.join(" ")} failed: ${stderr.trim().split("\n").slice(-5).join("\n")}`, { cause: error });
  }
  for (const line of stdout.trim().split("\n")) {
    const [name, file] = line.split("=", 2) as [TestToolName, string];
    process.env[variable(name)] = file;
  }
}

/** The path of a built tool; throws with the reason when the global setup did not build it. */
export function testTool(name: TestToolName): string {
  const file = process.env[variable(name)];
  if (file === undefined || file === "") {
    throw new Error(`${name} was not built: the global setup (test/support/global-setup.ts) runs scripts/build-test-tools.sh; run it by hand to see why`);
  }
  return file;
}
