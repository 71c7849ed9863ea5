import { instanceHistory, type HistoryEntry, type InstanceHistory } from "../broker/index.js";
import { NotFoundError } from "../errors/index.js";
import { createCommitStatusWatcher } from "../status-watcher/index.js";
import { openRepo, parseArgs } from "./repo-access.js";

/**
 * `gitops-broker history <instance-id> [--json] [--config FILE] [--data-dir DIR]`: the
 * instance's timeline from Git (same configuration as `serve`). It reads its own clone of the
 * remote (see openRepo), never a running broker's. Status is `commit` mode:
 * what Git says, not what the cluster runs.
 */

function who(e: HistoryEntry): string {
  if (e.by === "human") return `${e.author.name} <${e.author.email}>`;
  const oi = e.originatingIdentity;
  return oi ? `${oi.platform} ${JSON.stringify(oi.value)}` : e.trailers["Originating-Identity"] ?? "(no originating identity)";
}

function text(h: InstanceHistory): string {
  const c = h.current;
  const head = c
    ? `instance ${h.instanceId} (key ${h.key}): ${c.deleted ? "deprovisioned" : "live"} on cluster ${c.clusterId}, plan ${c.planId}` +
      (c.lastOperation ? `; last operation ${c.lastOperation.action} ${c.lastOperation.id}: ${c.lastOperation.state}` : "")
    : `instance ${h.instanceId} (key ${h.key}): no record at the tip`;
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

/** Exit 0 with the timeline, 1 when the instance has no history, 2 on usage errors. */
export async function runHistory(argv: string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Promise<number> {
  const args = parseArgs(argv, ["--json"]);
  const [instanceId, ...extra] = args.positional;
  if (!instanceId || extra.length > 0) {
    err.write("usage: gitops-broker history <instance-id> [--json] [--config FILE] [--data-dir DIR]\n");
    return 2;
  }
  const repo = await openRepo(args.configArgv);
  try {
    const history = await instanceHistory({ reader: repo.writer, status: createCommitStatusWatcher() }, instanceId);
    out.write(args.flags.has("--json") ? `${JSON.stringify(history, null, 2)}\n` : `${text(history)}\n`);
    return 0;
  } catch (e) {
    if (e instanceof NotFoundError) {
      err.write(`${e.message}\n`);
      return 1;
    }
    throw e;
  } finally {
    await repo.close();
  }
}
