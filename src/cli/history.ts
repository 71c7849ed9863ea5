import { instanceHistory, type HistoryEntry, type InstanceHistory } from "../broker/index.js";
import { NotFoundError } from "../errors/index.js";
import { createCommitStatusWatcher } from "../status-watcher/index.js";
import { Command } from "commander";
import { addConfigOptions, CONFIG_HELP, configArgv, runCommand, type CliIo, type ConfigOptions, type Done } from "./args.js";
import { openRepo } from "./repo-access.js";

/**
 * `gitops-broker history <instance-id> [--json] [--config FILE] [--data-dir DIR]`: the
 * instance's timeline from Git (same configuration as `serve`). It reads its own clone of the
 * remote (see openRepo), never a running broker's. Status is `commit` mode:
 * what Git says, not what the cluster runs.
 */

function who(e: HistoryEntry): string {
  if (e.by === "human") return `${e.author.name} <${e.author.email}>`;
  const oi = e.originatingIdentity;
  const raw = e.trailers["Originating-Identity"];
  return oi ? `${oi.platform} ${JSON.stringify(oi.value)}` : typeof raw === "string" ? raw : "(no originating identity)";
}

function text(h: InstanceHistory): string {
  const c = h.current;
  const head = c
    ? `instance ${h.instanceId} (key ${h.key}): ${c.deleted ? "deprovisioned" : "live"} on cluster ${c.clusterId}, plan ${c.planId}` +
      (c.lastOperation ? `; last operation ${c.lastOperation.action} ${c.lastOperation.id}: ${c.lastOperation.state}` : "")
    : `instance ${h.instanceId} (key ${h.key}): no record at the tip` + (h.entries.at(-1)?.action === "gc" ? " (removed by records GC)" : "");
  const lines = h.entries.map((e) => {
    const parts = [e.at, e.commit.slice(0, 12), e.action + (e.bindingId ? ` binding ${e.bindingId}` : ""), `by ${who(e)}`];
    if (e.state) parts.push(`[${e.state}]`);
    if (e.operation) parts.push(`operation ${e.operation}`);
    if (e.requestIdentity) parts.push(`request ${e.requestIdentity}`);
    if (e.overrides) parts.push(`overrides ${e.overrides.join(", ")}`);
    if (e.by === "human") parts.push(JSON.stringify(e.subject));
    return parts.join("  ");
  });
  return [head, ...lines].join("\n");
}

export function historyCommand(io: CliIo, done: Done): Command {
  return addConfigOptions(new Command("history"))
    .description("an instance's timeline from Git: operations, human commits, who asked, overrides applied")
    .argument("<instance-id>", "the OSB instance id")
    .option("--json", "print JSON")
    .addHelpText("after", `\nReads its own clone of the remote (<dataDir>/cli.git), never a running broker's.\n${CONFIG_HELP}`)
    .action(async (instanceId: string, options: ConfigOptions & { json?: boolean }) => done(await history(instanceId, options, io)));
}

/** Exit 0 with the timeline, 1 when the instance has no history, 2 on usage errors. */
export function runHistory(argv: string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Promise<number> {
  return runCommand((done) => historyCommand({ stdout: out, stderr: err }, done), argv, { stdout: out, stderr: err });
}

async function history(instanceId: string, options: ConfigOptions & { json?: boolean }, io: CliIo): Promise<number> {
  const repo = await openRepo(configArgv(options));
  try {
    const history = await instanceHistory({ reader: repo.writer, status: createCommitStatusWatcher() }, instanceId);
    io.stdout.write(options.json ? `${JSON.stringify(history, null, 2)}\n` : `${text(history)}\n`);
    return 0;
  } catch (e) {
    if (e instanceof NotFoundError) {
      io.stderr.write(`${e.message}\n`);
      return 1;
    }
    throw e;
  } finally {
    await repo.close();
  }
}
