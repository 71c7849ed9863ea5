import { clusterReport, moveInstance, type AdminDeps, type ClusterReport } from "../broker/index.js";
import { ConfigError, OsbError } from "../errors/index.js";
import { createCommitStatusWatcher } from "../status-watcher/index.js";
import { openRepo, parseArgs, type RepoAccess } from "./repo-access.js";
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

/** Lists clusters with labels, capacity, live instance counts and drain state. */
export async function runClusters(argv: string[], out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const args = parseArgs(argv, ["--json"]);
  if (args.positional.length > 0) {
    throw new ConfigError([{ file: "flags", path: args.positional.join(" "), message: "clusters takes no arguments" }]);
  }
  const repo = await openRepo(args.configArgv);
  try {
    const report = await clusterReport(adminDeps(repo));
    if (args.flags.has("--json")) {
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

/** Moves an instance to another cluster in one commit. Exit 1 when the move is refused. */
export async function runMove(argv: string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Promise<number> {
  const args = parseArgs(argv, []);
  const [instanceId, clusterId, ...extra] = args.positional;
  if (!instanceId || !clusterId || extra.length > 0) {
    err.write("usage: gitops-broker move <instance-id> <cluster-id> [--config FILE] [--data-dir DIR]\n");
    return 2;
  }
  const repo = await openRepo(args.configArgv);
  try {
    const moved = await moveInstance(adminDeps(repo), instanceId, clusterId);
    out.write(`moved instance ${instanceId} from ${moved.from} to ${moved.to} in commit ${moved.commit ?? "(none)"}\n`);
    return 0;
  } catch (e) {
    if (e instanceof OsbError) {
      err.write(`move refused: ${e.message}\n`);
      return 1;
    }
    throw e;
  } finally {
    await repo.close();
  }
}
