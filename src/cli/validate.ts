import { stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { RemoteCharts } from "../charts/index.js";
import { ConfigError } from "../errors/index.js";
import { dirTreeReader } from "../repo/index.js";
import { formatValidationProblem, validateRepo } from "../validate/index.js";

/**
 * `gitops-broker validate [repo-dir] [--json]`, for the GitOps repository's own pull-request CI
 * on a plain checkout (default: the current directory). One `file: path: message` line per
 * problem on stdout (or a JSON array with `--json`), a summary on stderr. Exit code 1 when there
 * is an error, 0 when there are only warnings or nothing, 2 for a usage error.
 */
export async function runValidate(
  argv: readonly string[],
  io: { stdout: (text: string) => void; stderr: (text: string) => void } = {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
  },
): Promise<number> {
  const json = argv.includes("--json");
  const flag = argv.find((a) => a.startsWith("-") && a !== "--json");
  if (flag !== undefined) throw new ConfigError([{ file: "flags", path: flag, message: "unknown flag (validate takes [repo-dir] [--json])" }]);
  const positional = argv.filter((a) => a !== "--json");
  if (positional.length > 1) throw new ConfigError([{ file: "flags", path: positional.join(" "), message: "validate takes one repository directory" }]);
  const dir = path.resolve(positional[0] ?? ".");
  const isDir = await stat(dir).then((s) => s.isDirectory(), () => false);
  if (!isDir) throw new ConfigError([{ file: dir, path: "", message: "is not a directory (give a checkout of the GitOps repository)" }]);

  // Remote charts are downloaded, verified against their digest and cached by digest (shared
  // between runs: a cached archive is verified again when read).
  const remoteCharts = new RemoteCharts({ dir: path.join(tmpdir(), "gitops-broker-charts") });
  const problems = await validateRepo(dirTreeReader(dir), { remoteCharts });
  const errors = problems.filter((p) => p.severity === "error").length;
  if (json) io.stdout(`${JSON.stringify(problems, null, 2)}\n`);
  else for (const p of problems) io.stdout(`${formatValidationProblem(p)}\n`);
  io.stderr(`validate ${dir}: ${errors} error(s), ${problems.length - errors} warning(s)\n`);
  return errors > 0 ? 1 : 0;
}
