import { Command } from "commander";
import { knownAnswer } from "../broker/index.js";
import { finishMove, moveCluster, planMove, type MoveClusterOptions, type MovePlan, type MoveStep } from "../stores/index.js";
import { addConfigOptions, CONFIG_HELP, configArgv, runCommand, type CliIo, type ConfigOptions, type Done } from "./args.js";
import { openRepo } from "./repo-access.js";

/** `gitops-broker move-cluster`: a cluster's instances to another store (ADR 0027, docs/stores.md). */

interface MoveClusterFlags extends ConfigOptions {
  to: string;
  yes?: boolean;
  finish?: boolean;
  json?: boolean;
}

const HELP = `
A dry run by default: says where the cluster is, how many instances and files move, and what the
next run does. --yes copies the cluster's records and manifests into the target store, fences
the source (operations on the cluster answer 503 for the seconds of the copy, then go to the
target), and switches the registry's spec.store: each a commit in one repository. Then re-point
the agents (docs/stores.md: the old Kustomization / Application must not prune), and run again
with --finish to remove the cluster's files from the source store.
Running again after an interruption resumes where it stopped.
${CONFIG_HELP}`;

export function moveClusterCommand(io: CliIo, done: Done): Command {
  return addConfigOptions(new Command("move-cluster"))
    .description("move a cluster's instances to another store (a Git repository of the stores configuration)")
    .argument("<cluster-id>", "the cluster (registry/clusters/<cluster-id>.yaml)")
    .requiredOption("--to <store>", 'the target store ("control": the control repository)')
    .option("--yes", "move (copy, fence, switch the registry)")
    .option("--finish", "after the agents are re-pointed: remove the cluster's files from the old store")
    .option("--json", "print JSON")
    .addHelpText("after", HELP)
    .action(async (clusterId: string, options: MoveClusterFlags) => done(await run(clusterId, options, io)));
}

/** `gitops-broker move-cluster <cluster-id> --to <store> [--yes | --finish]` with the arguments after `move-cluster`. */
export function runMoveCluster(argv: string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Promise<number> {
  return runCommand((done) => moveClusterCommand({ stdout: out, stderr: err }, done), argv, { stdout: out, stderr: err });
}

const NEXT: Record<MovePlan["stage"], string> = {
  copy: "a run with --yes copies, fences and switches the registry",
  switch: "a run with --yes switches the registry",
  finish: "re-point the agents (docs/stores.md), then run with --finish to remove the cluster's files from the old store",
  done: "nothing left to do",
};

async function run(clusterId: string, flags: MoveClusterFlags, io: CliIo): Promise<number> {
  const repo = await openRepo(configArgv(flags));
  try {
    if (!repo.storeSet) {
      io.stderr.write("error: no stores are configured (stores: in the broker configuration); every cluster is in the control repository\n");
      return 2;
    }
    const options: MoveClusterOptions = { stores: repo.storeSet, clusters: () => repo.view.clusters(), clusterId, to: flags.to };
    const steps: MoveStep[] = [];
    const onStep = (step: MoveStep) => {
      steps.push(step);
      if (!flags.json) io.stdout.write(`${step.step.padEnd(8)} ${step.store.padEnd(12)} ${step.commit ?? "(no change)"} ${step.files} file(s)\n`);
    };
    const plan = flags.finish ? await finishMove(options, onStep) : flags.yes ? await moveCluster(options, onStep) : await planMove(options);
    if (flags.json) io.stdout.write(`${JSON.stringify({ ...plan, steps, dryRun: !flags.yes && !flags.finish }, null, 2)}\n`);
    else {
      io.stdout.write(
        `cluster ${plan.clusterId}: ${plan.from} -> ${plan.to}, ${plan.instances} instance(s), ${plan.files} file(s), ${plan.bytes} bytes\n` +
          `${!flags.yes && !flags.finish ? "dry run: nothing committed; " : ""}next: ${NEXT[plan.stage]}\n`,
      );
    }
    return 0;
  } catch (e) {
    const refusal = knownAnswer(e);
    if (!refusal) throw e;
    io.stderr.write(`error: ${refusal.body.description}\n`);
    return 1;
  } finally {
    await repo.close();
  }
}
