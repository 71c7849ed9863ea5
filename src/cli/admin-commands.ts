import { clusterReport, moveInstance, type AdminDeps, type ClusterReport } from "../broker/index.js";
import { OsbError } from "../errors/index.js";
import { createCommitStatusWatcher } from "../status-watcher/index.js";
import { Command } from "commander";
import { addConfigOptions, CONFIG_HELP, configArgv, runCommand, type CliIo, type ConfigOptions, type Done, type TextSink } from "./args.js";
import { openRepo, type RepoAccess } from "./repo-access.js";
import { VERSION } from "./version.js";

/** `gitops-broker clusters` and `gitops-broker move`: administrative commands on the GitOps repo. */

function adminDeps(repo: RepoAccess): AdminDeps {
  return {
    writer: repo.writer,
    view: repo.view,
    summaries: repo.summaries,
    status: createCommitStatusWatcher(),
    brokerVersion: `gitops-broker/${VERSION}`,
  };
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd()).join("\n");
}

function capacityText(c: ClusterReport): string {
  const parts = [
    ...(c.maxInstances !== undefined ? [`${c.maxInstances} instances`] : []),
    ...Object.entries(c.resources ?? {}).map(([k, v]) => `${k} ${v}`),
  ];
  return parts.length ? parts.join(", ") : "-";
}

export function clustersCommand(io: CliIo, done: Done): Command {
  return addConfigOptions(new Command("clusters"))
    .description("list the registered clusters: labels, capacity, live instances, drain state")
    .option("--json", "print JSON instead of a table")
    .addHelpText("after", CONFIG_HELP)
    .action(async (options: ConfigOptions & { json?: boolean }) => done(await clusters(options, io.stdout)));
}

/** `gitops-broker clusters [--json] [config flags]` with the arguments after `clusters`. */
export function runClusters(argv: string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Promise<number> {
  return runCommand((done) => clustersCommand({ stdout: out, stderr: err }, done), argv, { stdout: out, stderr: err });
}

/** Lists clusters with labels, capacity, live instance counts and drain state. */
async function clusters(options: ConfigOptions & { json?: boolean }, out: TextSink): Promise<number> {
  const repo = await openRepo(configArgv(options));
  try {
    const report = await clusterReport(adminDeps(repo));
    if (options.json) {
      out.write(`${JSON.stringify(report, null, 2)}\n`);
    } else {
      const rows = [["CLUSTER", "SCHEDULABLE", "INSTANCES", "CAPACITY", "NAMESPACE", "STATUS", "LABELS"]];
      for (const c of report) {
        rows.push([
          c.id,
          c.schedulable ? "yes" : "no (drained)",
          String(c.instances),
          capacityText(c),
          c.namespace,
          c.statusMode ?? "default",
          Object.entries(c.labels).map(([k, v]) => `${k}=${v}`).join(",") || "-",
        ]);
      }
      out.write(`${table(rows)}\n`);
    }
    return 0;
  } finally {
    await repo.close();
  }
}

const MOVE_HELP = `
What happens to the data: the move is one commit that deletes the instance's objects (and its
bindings') under clusters/<from>/ and renders them under clusters/<to>/. Argo CD or Flux with
pruning then DELETES them on the old cluster: the operator drops the database there, with its
data. The new cluster gets a new, empty instance. Copy the data first (backup and restore) if it
must survive; --dry-run shows the files the commit would delete and write.
${CONFIG_HELP}`;

interface MoveOptions extends ConfigOptions {
  dryRun?: boolean;
  yes?: boolean;
}

export function moveCommand(io: CliIo, done: Done): Command {
  return addConfigOptions(new Command("move"))
    .description("move an instance (and its bindings) to another cluster in one commit")
    .argument("<instance-id>", "the OSB instance id")
    .argument("<cluster-id>", "the target cluster (registered, schedulable, with room)")
    .option("--dry-run", "show what the commit would delete and write; commit nothing")
    .option("--yes", "confirm the move (its objects on the old cluster are deleted, see below)")
    .addHelpText("after", MOVE_HELP)
    .action(async (instanceId: string, clusterId: string, options: MoveOptions, cmd: Command) => {
      if (!options.dryRun && !options.yes) {
        cmd.error(
          "error: move deletes the instance's objects on its current cluster (with pruning, the database there is dropped).\n" +
            "Run with --dry-run to see what changes, then with --yes to move.",
          { exitCode: 2, code: "gitops-broker.confirm" },
        );
      }
      done(await move(instanceId, clusterId, options, io));
    });
}

/** `gitops-broker move <instance-id> <cluster-id> (--dry-run | --yes)` with the arguments after `move`. */
export function runMove(argv: string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Promise<number> {
  return runCommand((done) => moveCommand({ stdout: out, stderr: err }, done), argv, { stdout: out, stderr: err });
}

/** Moves an instance to another cluster in one commit (or shows the plan). Exit 1 when the move is refused. */
async function move(instanceId: string, clusterId: string, options: MoveOptions, io: CliIo): Promise<number> {
  const repo = await openRepo(configArgv(options));
  try {
    const moved = await moveInstance(adminDeps(repo), instanceId, clusterId, { dryRun: options.dryRun === true });
    const files = [...moved.deleted.map((f) => `  delete ${f}`), ...moved.written.map((f) => `  write  ${f}`)].join("\n");
    if (options.dryRun) {
      io.stdout.write(
        `dry run: moving instance ${instanceId} from ${moved.from} to ${moved.to} would commit:\n${files}\n` +
          `its objects on cluster ${moved.from} would be deleted (with pruning, its data there is dropped); nothing was committed\n`,
      );
    } else {
      io.stdout.write(`moved instance ${instanceId} from ${moved.from} to ${moved.to} in commit ${moved.commit ?? "(none)"}\n${files}\n`);
    }
    return 0;
  } catch (e) {
    if (e instanceof OsbError) {
      io.stderr.write(`move refused: ${e.message}\n`);
      return 1;
    }
    throw e;
  } finally {
    await repo.close();
  }
}
