/**
 * Helm as the oracle for our Helm engine (docs/adr/0023-helm-as-the-oracle.md): one case is a
 * chart and `helm template` arguments; `helm template` (Helm 3.21, built from its module by
 * scripts/build-test-tools.sh) and `gitops-broker render-chart` (in process, the function the CLI
 * runs) get the same arguments, and what helm prints is what we must print, byte for byte.
 */
import { execFile } from "node:child_process";
import { readdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { runRenderChart } from "../../src/cli/render-chart.js";
import { helmModuleCall } from "../../src/render/index.js";
import { runProcess } from "../support/processes.js";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

export interface OracleCase {
  /** Unique, readable: the test's name. */
  name: string;
  /**
   * `helm template`'s arguments after "template"; "$DIR" stands for the case's values directory,
   * "$SCAFFOLD" for the chart `helm create` writes (the starting point of most users' charts).
   */
  args: string[];
  /** Files written into $DIR before the case runs (values files, --set-file contents). */
  files?: Record<string, string>;
  /**
   * A difference listed in ADR 0023: what we print, made from what helm prints. The case then
   * asserts that helm's output differs and that ours is exactly this.
   */
  documented?: (helmStdout: string) => string;
}

/** The directory of the helm module the tools module pins (Helm's own testdata charts are in it). */
export async function helmModuleDir(): Promise<string> {
  const { stdout } = await promisify(execFile)("go", ["list", "-m", "-f", "{{.Dir}}", "helm.sh/helm/v3"], {
    cwd: path.join(ROOT, "tools/helm"),
    env: { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: "-mod=readonly" },
  });
  return stdout.trim();
}

/**
 * The charts below `dir` that are not part of another chart: directories with a Chart.yaml none of
 * whose ancestors below `dir` has one, and .tgz archives outside chart directories.
 */
export async function findCharts(dir: string, skip: (rel: string) => boolean = () => false): Promise<string[]> {
  const found: string[] = [];
  const walk = async (d: string): Promise<void> => {
    const rel = path.relative(dir, d);
    if (rel !== "" && skip(rel)) return;
    const entries = await readdir(d, { withFileTypes: true });
    if (entries.some((e) => e.name === "Chart.yaml" && e.isFile())) {
      found.push(d);
      return;
    }
    for (const e of entries) {
      const full = path.join(d, e.name);
      if (e.isDirectory()) await walk(full);
      else if (e.isFile() && e.name.endsWith(".tgz") && !skip(path.relative(dir, full))) found.push(full);
    }
  };
  await walk(dir);
  return found.sort();
}

/** The arguments with "$DIR" (the case's directory) and "$SCAFFOLD" (`helm create`'s chart) filled in. */
export function expand(args: readonly string[], dir: string, scaffold: string): string[] {
  return args.map((a) => a.split("$DIR").join(dir).split("$SCAFFOLD").join(scaffold));
}

/** `helm COMMAND ARGS` with its own empty config, cache and data directories and no HELM_* settings. */
export async function runHelm(helm: string, args: readonly string[], home: string, command = "template"): Promise<Outcome> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, HELM_CACHE_HOME: `${home}/cache`, HELM_CONFIG_HOME: `${home}/config`, HELM_DATA_HOME: `${home}/data` };
  const r = await runProcess(helm, [command, ...args], { env, cwd: home, ceilingMs: 60_000 });
  return { code: r.code ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** `gitops-broker render-chart ARGS`, in process: what the CLI prints, and its exit code. */
export async function runOurs(args: readonly string[]): Promise<Outcome> {
  let stdout = "";
  let stderr = "";
  const code = await runRenderChart([...args], {
    call: helmModuleCall,
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    readStdin: () => Promise.resolve(""),
  });
  return { code, stdout, stderr };
}

/**
 * A unified diff of the first differing lines of `expected` (helm's) and `actual` (ours), with 3
 * lines of context: the hunk ends where both texts agree again for 3 lines at the same offsets
 * (a changed run), else at their common tail, cut at `max` lines a side. "" when they are equal.
 */
export function firstDiff(expected: string, actual: string, max = 25): string {
  if (expected === actual) return "";
  const a = expected.split("\n");
  const b = actual.split("\n");
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  for (let i = start + 1; i + 3 <= Math.min(endA, endB); i++) {
    if (a[i] === b[i] && a[i + 1] === b[i + 1] && a[i + 2] === b[i + 2]) {
      endA = endB = i;
      break;
    }
  }
  const from = Math.max(0, start - 3);
  const minus = a.slice(start, Math.min(endA, start + max));
  const plus = b.slice(start, Math.min(endB, start + max));
  // A carriage return would hide the rest of its line in a terminal.
  const show = (l: string): string => l.replace(/\r/g, "\\r");
  const lines = [
    "--- helm template",
    "+++ gitops-broker render-chart",
    `@@ -${from + 1},${start - from + minus.length} +${from + 1},${start - from + plus.length} @@`,
    ...a.slice(from, start).map((l) => ` ${show(l)}`),
    ...minus.map((l) => `-${show(l)}`),
    ...(endA - start > max ? [`-… ${endA - start - max} more lines`] : []),
    ...plus.map((l) => `+${show(l)}`),
    ...(endB - start > max ? [`+… ${endB - start - max} more lines`] : []),
  ];
  if (start === a.length - 1 && start === b.length - 1) lines.push("\\ the texts differ only in their last line");
  return lines.join("\n");
}

/**
 * The difference between helm's outcome and ours, for a message; "" when they agree: both succeed
 * with the same stdout, or both fail.
 */
export function difference(helm: Outcome, ours: Outcome): string {
  if (helm.code !== 0 || ours.code !== 0) {
    if (helm.code !== 0 && ours.code !== 0) return "";
    const [failed, other] = helm.code !== 0 ? ["helm", "render-chart"] : ["render-chart", "helm"];
    const err = helm.code !== 0 ? helm.stderr : ours.stderr;
    return `${failed} failed and ${other} did not:\n${err.trim()}`;
  }
  const d = firstDiff(helm.stdout, ours.stdout);
  return d === "" ? "" : `stdout differs:\n${d}`;
}

/**
 * What follows "Error: " in a failed run's stderr, the hint after it included: helm prints its
 * warnings (coalesce.go: ..., manifest_sorter.go: ...) before it; render-chart prints none.
 */
export function errorMessage(stderr: string): string {
  const at = stderr.startsWith("Error: ") ? 0 : stderr.indexOf("\nError: ") + 1;
  return at === 0 && !stderr.startsWith("Error: ") ? stderr.trim() : stderr.slice(at).trim();
}

/** Runs `work` over `items` with at most `limit` at a time; results in the items' order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
