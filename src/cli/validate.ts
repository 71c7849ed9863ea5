import { stat } from "node:fs/promises";
import { Command } from "commander";
import { tmpdir } from "node:os";
import path from "node:path";
import { RemoteCharts } from "../charts/index.js";
import { loadClusters } from "../catalog/index.js";
import type { TreeReader } from "../gitwriter/index.js";
import { dirTreeReader } from "../repo/index.js";
import { clusterStores, compositeTree, CONTROL } from "../stores/index.js";
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
    .option(
      "--store <name=dir>",
      "with stores (ADR 0027): a checkout of store <name>, checked together with the control repository's checkout (repeatable)",
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    )
    .addHelpText(
      "after",
      "\nChecks schemas, templates, offboarding, overrides, Secret data and drift under clusters/.\n" +
        "One `file: path: message` line per problem on stdout, a summary on stderr.\n" +
        "Exit 1 on errors (warnings alone exit 0), 2 when the directory is not a GitOps repository or on usage errors.",
    )
    .action(async (dir: string, options: ValidateOptions) => done(await validate(dir, options, io)));
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

interface ValidateOptions {
  json?: boolean;
  store?: string[];
}

/**
 * The control repository's checkout with the stores' (`--store name=dir`): one tree, as the
 * broker reads them (a cluster's directory from the store its registry entry names).
 */
async function withStores(control: TreeReader, stores: string[], io: CliIo): Promise<TreeReader | null> {
  if (stores.length === 0) return control;
  const parts = new Map<string, TreeReader>([[CONTROL, control]]);
  for (const item of stores) {
    const eq = item.indexOf("=");
    const name = item.slice(0, eq);
    const dir = path.resolve(item.slice(eq + 1));
    if (eq <= 0 || name === CONTROL || parts.has(name) || !(await stat(dir).then((st) => st.isDirectory(), () => false))) {
      io.stderr.write(`validate: --store ${JSON.stringify(item)}: give <name>=<directory of a checkout of that store>, once per store\n`);
      return null;
    }
    parts.set(name, dirTreeReader(dir));
  }
  const { clusters } = await loadClusters(control);
  return compositeTree({ control, stores: parts, storeOf: clusterStores(() => clusters), commit: null });
}

async function validate(repoDir: string, options: ValidateOptions, io: CliIo): Promise<number> {
  const dir = path.resolve(repoDir);
  const isDir = await stat(dir).then((s) => s.isDirectory(), () => false);
  if (!isDir) {
    io.stderr.write(`validate: ${dir} is not a directory (give a checkout of the GitOps repository)\n`);
    return 2;
  }

  const control = dirTreeReader(dir);
  const wrong = await notAGitOpsRepository(control);
  if (wrong !== null) {
    io.stderr.write(`validate: ${dir} ${wrong}\n`);
    return 2;
  }
  const tree = await withStores(control, options.store ?? [], io);
  if (tree === null) return 2;
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
