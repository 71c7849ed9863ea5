import {
  cleanupBinding,
  clusterReport,
  DEFAULT_PAGE_SIZE,
  INSTANCE_STATES,
  listInstances,
  MAX_PAGE_SIZE,
  knownAnswer,
  moveInstance,
  type AdminDeps,
  type ClusterReport,
  type InstanceQuery,
} from "../broker/index.js";
import { routedWriter } from "../stores/index.js";
import { createCommitStatusWatcher } from "../status-watcher/index.js";
import { Command, InvalidArgumentError } from "commander";
import { addConfigOptions, CONFIG_HELP, configArgv, runCommand, type CliIo, type ConfigOptions, type Done, type TextSink } from "./args.js";
import { openRepo, type RepoAccess } from "./repo-access.js";
import { VERSION } from "./version.js";

/**
 * `gitops-broker clusters`, `move`, `instances` and `cleanup-binding`: administrative commands on
 * the GitOps repo (the last two are also admin endpoints of a running broker: GET /admin/instances,
 * POST /admin/bindings/cleanup).
 */

function adminDeps(repo: RepoAccess): AdminDeps {
  return {
    writer: repo.writer,
    routed: routedWriter(repo.writer, repo.storeSet),
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
    const refusal = knownAnswer(e);
    if (refusal) {
      io.stderr.write(`move refused: ${refusal.body.description}\n`);
      return 1;
    }
    throw e;
  } finally {
    await repo.close();
  }
}

interface InstancesOptions extends ConfigOptions {
  cluster?: string;
  service?: string;
  plan?: string;
  state?: InstanceQuery["state"];
  pageSize?: number;
  pageToken?: string;
  json?: boolean;
}

function stateOption(value: string): NonNullable<InstanceQuery["state"]> {
  const state = INSTANCE_STATES.find((s) => s === value.replace(/_/g, " "));
  if (!state) throw new InvalidArgumentError(`one of ${INSTANCE_STATES.map((s) => s.replace(" ", "_")).join(", ")}`);
  return state;
}

function pageSizeOption(value: string): number {
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || n < 1 || n > MAX_PAGE_SIZE) throw new InvalidArgumentError(`an integer from 1 to ${MAX_PAGE_SIZE}`);
  return n;
}

const INSTANCES_HELP = `
The state is the last operation's as this command sees it: from the records (commit mode). A
running broker in live mode answers GET /admin/instances with the states it observes on the
clusters, with the same filters (cluster, service, plan, state, page_size, page_token).
${CONFIG_HELP}`;

export function instancesCommand(io: CliIo, done: Done): Command {
  return addConfigOptions(new Command("instances"))
    .description("list live instances by cluster, service, plan and state, a page at a time")
    .option("--cluster <id>", "only instances on this cluster")
    .option("--service <id>", "only instances of this service id")
    .option("--plan <id>", "only instances of this plan id")
    .option("--state <state>", "only instances whose last operation is in_progress, succeeded or failed", stateOption)
    .option("--page-size <n>", `instances per page (default ${DEFAULT_PAGE_SIZE}, at most ${MAX_PAGE_SIZE})`, pageSizeOption)
    .option("--page-token <token>", "the next page: the token the previous page printed")
    .option("--json", "print the page as JSON ({instances, nextPageToken})")
    .addHelpText("after", INSTANCES_HELP)
    .action(async (options: InstancesOptions) => done(await instances(options, io)));
}

/** `gitops-broker instances [filters] [--json]` with the arguments after `instances`. */
export function runInstances(argv: string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Promise<number> {
  return runCommand((done) => instancesCommand({ stdout: out, stderr: err }, done), argv, { stdout: out, stderr: err });
}

async function instances(options: InstancesOptions, io: CliIo): Promise<number> {
  const repo = await openRepo(configArgv(options));
  try {
    const page = await listInstances(adminDeps(repo), {
      ...(options.cluster !== undefined ? { clusterId: options.cluster } : {}),
      ...(options.service !== undefined ? { serviceId: options.service } : {}),
      ...(options.plan !== undefined ? { planId: options.plan } : {}),
      ...(options.state !== undefined ? { state: options.state } : {}),
      ...(options.pageSize !== undefined ? { pageSize: options.pageSize } : {}),
      ...(options.pageToken !== undefined ? { pageToken: options.pageToken } : {}),
    });
    if (options.json) {
      io.stdout.write(`${JSON.stringify(page, null, 2)}\n`);
      return 0;
    }
    const rows = [["INSTANCE", "CLUSTER", "PLAN", "STATE", "LAST OPERATION", "ORGANIZATION", "SPACE"]];
    for (const i of page.instances) {
      const op = i.lastOperation;
      rows.push([i.instanceId, i.clusterId, i.planName ?? i.planId, op?.state ?? "-", op ? `${op.action} ${op.at}` : "-", i.organizationGuid ?? "-", i.spaceGuid ?? "-"]);
    }
    io.stdout.write(`${table(rows)}\n`);
    if (page.nextPageToken !== undefined) io.stdout.write(`more: --page-token ${page.nextPageToken}\n`);
    return 0;
  } catch (e) {
    const refusal = knownAnswer(e);
    if (refusal) {
      io.stderr.write(`instances: ${refusal.body.description}\n`);
      return 2;
    }
    throw e;
  } finally {
    await repo.close();
  }
}

export function cleanupBindingCommand(io: CliIo, done: Done): Command {
  return addConfigOptions(new Command("cleanup-binding"))
    .description("remove the records of a binding whose instance is deprovisioned or gone, in one commit")
    .argument("<instance-id>", "the OSB instance id (deprovisioned, or without a record)")
    .argument("<binding-id>", "the OSB binding id")
    .addHelpText("after", CONFIG_HELP)
    .action(async (instanceId: string, bindingId: string, options: ConfigOptions) => done(await cleanup(instanceId, bindingId, options, io)));
}

/** `gitops-broker cleanup-binding <instance-id> <binding-id>` with the arguments after `cleanup-binding`. */
export function runCleanupBinding(argv: string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Promise<number> {
  return runCommand((done) => cleanupBindingCommand({ stdout: out, stderr: err }, done), argv, { stdout: out, stderr: err });
}

/** Exit 1 when refused (the instance is live). Nothing left to remove is a success. */
async function cleanup(instanceId: string, bindingId: string, options: ConfigOptions, io: CliIo): Promise<number> {
  const repo = await openRepo(configArgv(options));
  try {
    const done = await cleanupBinding(adminDeps(repo), instanceId, bindingId);
    io.stdout.write(
      done.commit === null
        ? `nothing to clean up: instance ${instanceId} has no record of binding ${bindingId} left\n`
        : `removed binding ${bindingId} of instance ${instanceId} in commit ${done.commit}\n${done.removed.map((f) => `  delete ${f}`).join("\n")}\n`,
    );
    return 0;
  } catch (e) {
    const refusal = knownAnswer(e);
    if (refusal) {
      io.stderr.write(`cleanup-binding refused: ${refusal.body.description}\n`);
      return 1;
    }
    throw e;
  } finally {
    await repo.close();
  }
}
