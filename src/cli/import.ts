import { randomUUID } from "node:crypto";
import { setFlagsFromString } from "node:v8";
import { Command, Option } from "commander";
import type { ClusterEntry, KubeconfigRef } from "../catalog/index.js";
import {
  account,
  accountingText,
  clusterClient,
  commitImport,
  handOver,
  handOverText,
  leftBehind,
  planImport,
  planText,
  readBack,
  readLandscape,
  verificationText,
  verifyHandOver,
  type ClusterClient,
  type Verification,
} from "../import/index.js";
import { ConfigError } from "../errors/index.js";
import { createKubeConfigResolver } from "../kube/index.js";
import { setModuleWorkers } from "../render/index.js";
import { routedWriter } from "../stores/index.js";
import { addConfigOptions, CONFIG_HELP, configArgv, runCommand, type CliIo, type ConfigOptions, type Done } from "./args.js";
import { openRepo, type RepoAccess } from "./repo-access.js";
import { VERSION } from "./version.js";

/**
 * `gitops-broker import service-fabrik`: reads a running Service Fabrik landscape (read-only,
 * through @kubernetes/client-node) and writes its instances into the GitOps repository; prints
 * the hand-over steps and, with --hand-over --yes, makes them. See
 * docs/migrating-from-service-fabrik.md.
 */

interface ImportOptions extends ConfigOptions {
  masterKubeconfig?: string;
  masterSecret?: string;
  mapCluster: string[];
  dryRun?: boolean;
  yes?: boolean;
  batchSize: string;
  pageSize: string;
  differences: "all" | "summary";
  handOver?: boolean;
  sfNamespace: string;
  renderWorkers: string;
}

const HELP = `
Reads, read-only, the SFServiceInstance and SFServiceBinding resources on Service Fabrik's master
cluster (--master-kubeconfig FILE, --master-secret [NAMESPACE/]NAME[:KEY], else the kubeconfig of
the broker's own cluster, as a registry entry without a reference) and, on each sister cluster
(the registry entry with the id of spec.clusterId, or --map-cluster SF=ID), the objects each
instance's status.resources lists. Prints the plan: instances by cluster and plan, what is refused
or skipped and why (bindings too), the differences between what the plan's templates render and
what is live, and the accounting: per kind, found on the master = imported + already imported +
refused + skipped (the command fails if they do not add up). Nothing is written without --yes;
then the instances are committed in batches (Reason: import) and what was imported is read back
from the remote. Running it again imports only what is missing.

The hand-over steps are printed every time; --hand-over --yes performs them (the kubeconfigs
must be allowed to scale Deployments, patch the imported objects and patch and delete Service
Fabrik's resources): stop its controllers, remove its owner references and finalizers, delete its
resources with propagationPolicy Orphan. Then it lists the master and every cluster holding an
imported instance again, in full, and reports the imported objects still owned by Service Fabrik
and what stays with it, with why.

Exit status:
  0  complete: every instance and binding on the master is imported (with --hand-over: and
     handed over, as the fresh lists show); without --yes: would be
  1  failed: an error, the accounting did not add up, a hand-over step failed, or an imported
     object is still owned by Service Fabrik or its controllers run; do not remove Service Fabrik
  2  usage or configuration error
  3  incomplete: instances or bindings stay with Service Fabrik (refused, skipped, or not handed
     over), each listed with why; settle or fix them and run it again
${CONFIG_HELP}`;

/**
 * V8 lets its old space grow to up to four times what survived its last full collection before the
 * next. An import's heap is mostly the renders' garbage: a dry run of 3,000 instances held 64 MB
 * after a full collection and peaked at 369-526 MB of RSS with V8's growth, 311-336 MB with 1.3
 * times, for 7-10 % more CPU (2026-11-29; ADR 0026, docs/benchmarks.md). V8's flags are the
 * process's: the import runs as a command of its own.
 */
const IMPORT_HEAP_GROWING_PERCENT = 30;

export function importCommand(io: CliIo, done: Done): Command {
  const sf = addConfigOptions(new Command("service-fabrik"))
    .description("import the instances and bindings of a running Service Fabrik landscape")
    .addOption(new Option("--master-kubeconfig <file>", "kubeconfig file of Service Fabrik's master cluster"))
    .addOption(new Option("--master-secret <ref>", "[namespace/]name[:key] of a Secret in the broker's cluster holding the master's kubeconfig (key default kubeconfig)").conflicts("masterKubeconfig"))
    .option("--map-cluster <sf=id>", "Service Fabrik cluster id to registry cluster id (repeatable)", (v: string, all: string[]) => [...all, v], [])
    .option("--dry-run", "print the plan and write nothing (the default without --yes)")
    .option("--yes", "commit the import (and, with --hand-over, perform the hand-over)")
    .option("--batch-size <n>", "instances per commit", "500")
    .option("--page-size <n>", "objects per list request to a cluster (every list is read to its last page)", "500")
    .addOption(new Option("--differences <how>", "print every difference, or a count per kind of difference").choices(["all", "summary"]).default("all"))
    .option("--hand-over", "with --yes: perform the hand-over steps after the import")
    .option("--sf-namespace <ns>", "Service Fabrik's namespace (its controllers' Deployments) on every cluster", "interoperator")
    .option("--render-workers <n>", "worker threads rendering the plans' templates side by side (more pay only where cores are idle: docs/benchmarks.md)", "1")
    .addHelpText("after", HELP)
    .action(async (options: ImportOptions, cmd: Command) => {
      const batch = Number(options.batchSize);
      if (!(Number.isInteger(batch) && batch >= 1)) cmd.error(`error: --batch-size must be a positive integer, not ${options.batchSize}`, { exitCode: 2 });
      const page = Number(options.pageSize);
      if (!(Number.isInteger(page) && page >= 1)) cmd.error(`error: --page-size must be a positive integer, not ${options.pageSize}`, { exitCode: 2 });
      const workers = Number(options.renderWorkers);
      if (!(Number.isInteger(workers) && workers >= 1)) cmd.error(`error: --render-workers must be a positive integer, not ${options.renderWorkers}`, { exitCode: 2 });
      setModuleWorkers(workers);
      setFlagsFromString(`--heap-growing-percent=${IMPORT_HEAP_GROWING_PERCENT}`);
      const map: Record<string, string> = {};
      for (const m of options.mapCluster) {
        const [from, to, ...rest] = m.split("=");
        if (!from || !to || rest.length > 0) cmd.error(`error: --map-cluster ${m}: expected SF_ID=REGISTRY_ID`, { exitCode: 2 });
        map[from] = to!;
      }
      if (options.dryRun && options.yes) cmd.error("error: --dry-run and --yes contradict each other", { exitCode: 2 });
      done(await runImport(options, map, batch, io));
    });
  return new Command("import").description("import a running landscape into the GitOps repository").addCommand(sf);
}

/** `gitops-broker import ...` with the arguments after `import`. */
export function runImportCommand(argv: string[], io: CliIo): Promise<number> {
  return runCommand((done) => importCommand(io, done), argv, io);
}

function masterRef(options: ImportOptions): KubeconfigRef | undefined {
  if (options.masterKubeconfig !== undefined) return { path: options.masterKubeconfig };
  if (options.masterSecret === undefined) return undefined;
  const [nameRef, key] = options.masterSecret.split(":", 2);
  const slash = nameRef!.indexOf("/");
  const secretRef = slash >= 0 ? { namespace: nameRef!.slice(0, slash), name: nameRef!.slice(slash + 1) } : { name: nameRef! };
  return { secretRef: { ...secretRef, key: key || "kubeconfig" } };
}

/** The exit status of `import service-fabrik` (also in its --help and docs/migrating-from-service-fabrik.md). */
export const IMPORT_EXIT = {
  /** Everything the master lists is imported (and, with --hand-over, handed over, as verified). */
  complete: 0,
  /** An error, the accounting did not add up, a hand-over step failed, or the verification found an imported object owned by Service Fabrik or its controllers running. */
  failed: 1,
  /** Done what it could; instances or bindings stay with Service Fabrik, each listed with why. */
  incomplete: 3,
} as const;

interface Clients {
  master: ClusterClient;
  /** By Service Fabrik's cluster id (spec.clusterId), through --map-cluster. */
  sister: (sfId: string) => Promise<ClusterClient | undefined>;
  /** By registry cluster id. */
  cluster: (clusterId: string) => Promise<ClusterClient | undefined>;
}

async function clientsOf(options: ImportOptions, map: Record<string, string>, clusters: readonly ClusterEntry[]): Promise<Clients> {
  const resolve = createKubeConfigResolver();
  // The master is no registry entry: a name for the resolver's messages.
  const masterEntry = { id: "service-fabrik-master" } as ClusterEntry;
  const paging = { pageSize: Number(options.pageSize) };
  const master = await clusterClient(await resolve(masterRef(options), masterEntry), "Service Fabrik's master", paging);
  const made = new Map<string, Promise<ClusterClient | undefined>>();
  const cluster = (clusterId: string) => {
    let client = made.get(clusterId);
    if (!client) {
      const entry = clusters.find((c) => c.id === clusterId);
      client = entry ? resolve(entry.kubeconfig, entry).then((kc) => clusterClient(kc, `cluster ${entry.id}`, paging)) : Promise.resolve(undefined);
      made.set(clusterId, client);
    }
    return client;
  };
  return { master, cluster, sister: (sfId) => cluster(map[sfId] ?? sfId) };
}

async function runImport(options: ImportOptions, map: Record<string, string>, batchSize: number, io: CliIo): Promise<number> {
  const repo = await openRepo(configArgv(options));
  try {
    return await importAndHandOver(repo, options, map, batchSize, io);
  } catch (e) {
    // A configuration problem stays a usage error (exit 2, runCommand).
    if (e instanceof ConfigError) throw e;
    io.stderr.write(`import failed: ${e instanceof Error ? e.message : String(e)}\n`);
    return IMPORT_EXIT.failed;
  } finally {
    await repo.close();
  }
}

async function importAndHandOver(repo: RepoAccess, options: ImportOptions, map: Record<string, string>, batchSize: number, io: CliIo): Promise<number> {
  const out = (text: string) => void io.stdout.write(text);
  const clusters = repo.view.clusters();
  const clients = await clientsOf(options, map, clusters);
  const landscape = await readLandscape(clients.master, clients.sister);
  // Two instances per worker: one renders while the other's records and differences are made.
  const concurrency = 2 * Number(options.renderWorkers);
  const plan = await planImport({ landscape, catalog: repo.view.catalog(), clusters, base: repo.writer.snapshot(), clusterMap: map, now: () => new Date(), newId: randomUUID, concurrency, keepEdits: options.yes === true });
  out(planText(plan, { differences: options.differences }));
  let accounting = account(landscape, plan);
  out(accountingText(accounting, true));
  if (options.yes) {
    const result = await commitImport(routedWriter(repo.writer, repo.storeSet), plan, {
      batchSize,
      brokerVersion: `gitops-broker/${VERSION}`,
      release: true,
      onBatch: (b) => out(`committed ${b.instances} instance(s) in ${b.commit ?? "(no commit)"} (${b.done}/${b.total})\n`),
    });
    // What the remote holds, fetched again: not what this run built.
    await repo.writer.refresh();
    const back = await readBack(repo.writer.snapshot(), plan);
    out(`imported ${back.instances.length} instance(s) with ${back.bindings.length} binding(s) in ${result.commits.length} commit(s), read back from the remote (${back.commit ?? "no commit"})\n`);
    accounting = account(landscape, plan, back);
    out(accountingText(accounting, false));
  } else {
    out("dry run: nothing was written; run with --yes to commit the import\n");
  }
  const report = await handOver({ master: clients.master, sister: clients.sister, subjects: plan.handOver, landscape, namespace: options.sfNamespace, perform: options.yes === true && options.handOver === true });
  out(handOverText(report));
  if (!report.performed) {
    const left = leftBehind(accounting);
    out(left === 0 ? "complete: every SFServiceInstance and SFServiceBinding on the master is imported\n" : `incomplete: ${left} instance(s) and binding(s) stay with Service Fabrik, each listed above with why\n`);
    return left === 0 ? IMPORT_EXIT.complete : IMPORT_EXIT.incomplete;
  }
  await repo.writer.refresh();
  const verified = await verifyHandOver({ master: clients.master, cluster: clients.cluster, tip: repo.writer.snapshot(), namespace: options.sfNamespace, plan });
  out(verificationText(verified));
  return verdict(report.steps.filter((s) => s.error !== undefined).length, verified, out);
}

/** The exit status and its last line, from the verification's own lists (and the steps that failed). */
function verdict(failedSteps: number, v: Verification, out: (text: string) => void): number {
  const owned = v.stillOwned.length === 0 ? "no imported object is owned by a Service Fabrik resource" : `${v.stillOwned.length} imported object(s) owned by a Service Fabrik resource`;
  const left = v.left.instances.length + v.left.bindings.length;
  if (failedSteps > 0 || v.stillOwned.length > 0 || v.running.length > 0) {
    const why = [failedSteps > 0 ? `${failedSteps} step(s) failed` : "", v.stillOwned.length > 0 ? owned : "", v.running.length > 0 ? `${v.running.length} controller(s) of Service Fabrik running` : ""];
    out(`hand-over failed: ${why.filter(Boolean).join("; ")} (listed above); do not remove Service Fabrik\n`);
    return IMPORT_EXIT.failed;
  }
  if (left > 0) {
    out(`hand-over incomplete: ${owned}; ${v.left.instances.length} instance(s) and ${v.left.bindings.length} binding(s) stay with Service Fabrik (listed above)\n`);
    return IMPORT_EXIT.incomplete;
  }
  out(`hand-over complete: ${owned}; nothing stays with Service Fabrik\n`);
  return IMPORT_EXIT.complete;
}
