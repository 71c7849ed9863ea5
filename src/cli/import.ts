import { randomUUID } from "node:crypto";
import { availableParallelism } from "node:os";
import { Command, Option } from "commander";
import type { ClusterEntry, KubeconfigRef } from "../catalog/index.js";
import {
  clusterClient,
  commitImport,
  handOver,
  handOverText,
  planImport,
  planText,
  readLandscape,
  type ClusterClient,
} from "../import/index.js";
import { setModuleWorkers } from "../render/index.js";
import { createKubeConfigResolver } from "../status-watcher/index.js";
import { addConfigOptions, CONFIG_HELP, configArgv, runCommand, type CliIo, type ConfigOptions, type Done } from "./args.js";
import { openRepo } from "./repo-access.js";
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
or skipped and why, the differences between what the plan's templates render and what is live.
Nothing is written without --yes; then the instances are committed in batches (Reason: import).
Running it again imports only what is missing.

The hand-over steps are printed every time; --hand-over --yes performs them (the kubeconfigs
must be allowed to scale Deployments, patch the imported objects and patch and delete Service
Fabrik's resources): stop its controllers, remove its owner references and finalizers, delete its
resources with propagationPolicy Orphan, then check that no imported object is owned by it.
${CONFIG_HELP}`;

export function importCommand(io: CliIo, done: Done): Command {
  const sf = addConfigOptions(new Command("service-fabrik"))
    .description("import the instances and bindings of a running Service Fabrik landscape")
    .addOption(new Option("--master-kubeconfig <file>", "kubeconfig file of Service Fabrik's master cluster"))
    .addOption(new Option("--master-secret <ref>", "[namespace/]name[:key] of a Secret in the broker's cluster holding the master's kubeconfig (key default kubeconfig)").conflicts("masterKubeconfig"))
    .option("--map-cluster <sf=id>", "Service Fabrik cluster id to registry cluster id (repeatable)", (v: string, all: string[]) => [...all, v], [])
    .option("--dry-run", "print the plan and write nothing (the default without --yes)")
    .option("--yes", "commit the import (and, with --hand-over, perform the hand-over)")
    .option("--batch-size <n>", "instances per commit", "500")
    .addOption(new Option("--differences <how>", "print every difference, or a count per kind of difference").choices(["all", "summary"]).default("all"))
    .option("--hand-over", "with --yes: perform the hand-over steps after the import")
    .option("--sf-namespace <ns>", "Service Fabrik's namespace (its controllers' Deployments) on every cluster", "interoperator")
    .option("--render-workers <n>", "worker threads rendering the plans' templates side by side (default: the machine's cores)", String(availableParallelism()))
    .addHelpText("after", HELP)
    .action(async (options: ImportOptions, cmd: Command) => {
      const batch = Number(options.batchSize);
      if (!(Number.isInteger(batch) && batch >= 1)) cmd.error(`error: --batch-size must be a positive integer, not ${options.batchSize}`, { exitCode: 2 });
      const map: Record<string, string> = {};
      for (const m of options.mapCluster) {
        const [from, to, ...rest] = m.split("=");
        if (!from || !to || rest.length > 0) cmd.error(`error: --map-cluster ${m}: expected SF_ID=REGISTRY_ID`, { exitCode: 2 });
        map[from] = to!;
      }
      if (options.dryRun && options.yes) cmd.error("error: --dry-run and --yes contradict each other", { exitCode: 2 });
      const workers = Number(options.renderWorkers);
      if (!(Number.isInteger(workers) && workers >= 1)) cmd.error(`error: --render-workers must be a positive integer, not ${options.renderWorkers}`, { exitCode: 2 });
      setModuleWorkers(workers);
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

async function runImport(options: ImportOptions, map: Record<string, string>, batchSize: number, io: CliIo): Promise<number> {
  const repo = await openRepo(configArgv(options));
  try {
    const resolve = createKubeConfigResolver();
    const clusters = repo.view.clusters();
    // The master is no registry entry: a name for the resolver's messages.
    const masterEntry = { id: "service-fabrik-master" } as ClusterEntry;
    const master = await clusterClient(await resolve(masterRef(options), masterEntry), "Service Fabrik's master");
    const sisters = new Map<string, Promise<ClusterClient | undefined>>();
    const sister = (sfId: string) => {
      let client = sisters.get(sfId);
      if (!client) {
        const entry = clusters.find((c) => c.id === (map[sfId] ?? sfId));
        client = entry ? resolve(entry.kubeconfig, entry).then((kc) => clusterClient(kc, `cluster ${entry.id}`)) : Promise.resolve(undefined);
        sisters.set(sfId, client);
      }
      return client;
    };
    const landscape = await readLandscape(master, sister);
    // Two instances per worker: one renders while the other's records and differences are made.
    const concurrency = 2 * Number(options.renderWorkers);
    const plan = await planImport({ landscape, catalog: repo.view.catalog(), clusters, base: repo.writer.snapshot(), clusterMap: map, now: () => new Date(), newId: randomUUID, concurrency });
    io.stdout.write(planText(plan, { differences: options.differences }));
    let code = 0;
    if (options.yes) {
      const result = await commitImport(repo.writer, plan, {
        batchSize,
        brokerVersion: `gitops-broker/${VERSION}`,
        onBatch: (b) => void io.stdout.write(`committed ${b.instances} instance(s) in ${b.commit ?? "(no commit)"} (${b.done}/${b.total})\n`),
      });
      io.stdout.write(`imported ${result.imported.length} instance(s) in ${result.commits.length} commit(s)${result.present.length > 0 ? `; ${result.present.length} were in the repository already` : ""}\n`);
    } else {
      io.stdout.write("dry run: nothing was written; run with --yes to commit the import\n");
    }
    const report = await handOver({ master, sister, subjects: plan.handOver, landscape, namespace: options.sfNamespace, perform: options.yes === true && options.handOver === true });
    io.stdout.write(handOverText(report));
    if (report.performed && (report.steps.some((s) => s.error !== undefined) || report.stillOwned.length > 0 || report.running.length > 0)) code = 1;
    return code;
  } finally {
    await repo.close();
  }
}
