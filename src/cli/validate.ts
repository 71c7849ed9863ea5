import { stat } from "node:fs/promises";
import { Command } from "commander";
import { tmpdir } from "node:os";
import path from "node:path";
import { RemoteCharts } from "../charts/index.js";
import { dirTreeReader } from "../repo/index.js";
import { formatValidationProblem, notAGitOpsRepository, validateRepo } from "../validate/index.js";
import { runCommand, type CliIo, type Done } from "./args.js";

/**
 * `gitops-broker validate [repo-dir] [--json]`, for the GitOps repository's own pull-request CI
 * on a plain checkout (default: the current directory). One `file: path: message` line per
 * problem on stdout (or a JSON array with `--json`), a summary on stderr. Exit code 1 when there
 * is an error, 0 when there are only warnings or nothing, 2 for a usage error.
 */
export function validateCommand(io: CliIo, done: Done): Command {
  return new Command("validate")
    .description("check a checkout of the GitOps repository, for its pull-request CI")
    .argument("[repo-dir]", "the checkout", ".")
    .option("--json", "print the problems as a JSON array")
    .addHelpText(
      "after",
      "\nChecks schemas, templates, offboarding, overrides, Secret data and drift under clusters/.\n" +
        "One `file: path: message` line per problem on stdout, a summary on stderr.\n" +
        "Exit 1 on errors (warnings alone exit 0), 2 when the directory is not a GitOps repository or on usage errors.",
    )
    .action(async (dir: string, options: { json?: boolean }) => done(await validate(dir, options, io)));
}

export function runValidate(
  argv: readonly string[],
  io: { stdout: (text: string) => void; stderr: (text: string) => void } = {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
  },
): Promise<number> {
  const cli: CliIo = { stdout: { write: io.stdout }, stderr: { write: io.stderr } };
  return runCommand((done) => validateCommand(cli, done), argv, cli);
}

async function validate(repoDir: string, options: { json?: boolean }, io: CliIo): Promise<number> {
  const dir = path.resolve(repoDir);
  const isDir = await stat(dir).then((s) => s.isDirectory(), () => false);
  if (!isDir) {
    io.stderr.write(`validate: ${dir} is not a directory (give a checkout of the GitOps repository)\n`);
    return 2;
  }

  const tree = dirTreeReader(dir);
  const wrong = await notAGitOpsRepository(tree);
  if (wrong !== null) {
    io.stderr.write(`validate: ${dir} ${wrong}\n`);
    return 2;
  }
  // Remote charts are downloaded, verified against their digest and cached by digest (shared
  // between runs: a cached archive is verified again when read).
  const remoteCharts = new RemoteCharts({ dir: path.join(tmpdir(), "gitops-broker-charts") });
  const problems = await validateRepo(tree, { remoteCharts });
  const errors = problems.filter((p) => p.severity === "error").length;
  if (options.json) io.stdout.write(`${JSON.stringify(problems, null, 2)}\n`);
  else {
    for (const p of problems) {
      io.stdout.write(`${formatValidationProblem(p)}\n`);
      if (p.detail) io.stdout.write(`${p.detail.replace(/^/gm, "    ")}\n`);
    }
  }
  io.stderr.write(`validate ${dir}: ${errors} error(s), ${problems.length - errors} warning(s)\n`);
  return errors > 0 ? 1 : 0;
}
