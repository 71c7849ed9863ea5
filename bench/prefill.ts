/**
 * A bare GitOps remote holding N provisioned instances, built fast: the sample seed (catalog,
 * cluster `local`), then ONE commit adding, for every instance, the record and the manifests the
 * broker would write on provision (same layout, record and render functions), streamed into
 * `git fast-import`. What it writes is checked against a real broker provision in
 * test/write-path (the prefill test), so the benchmarks run against the repository the broker
 * itself would have grown.
 *
 * `prefillStores` does the same for a broker with stores (ADR 0027): a control repository (catalog,
 * registry) and a bare repository per store, each cluster's instances in the repository of its
 * store.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import path from "node:path";
import { loadCatalog, loadClusters, type ClusterEntry, type Plan, type Service } from "../src/catalog/index.js";
import { SAMPLE_CATALOG_DIR, SAMPLE_REGISTRY_DIR } from "../src/cli/serve.js";
import { prepareEmbedded } from "../src/config/index.js";
import { createGitWriter } from "../src/gitwriter/index.js";
import { silentLogger } from "../src/log/index.js";
import { renderInstanceMetadataNow } from "../src/materialize/index.js";
import { renderNow } from "../src/render/index.js";
import {
  LABEL_INSTANCE,
  LABEL_MANAGED_BY,
  MANAGED_BY,
  RECORD_API_VERSION,
  clusterNamespacePath,
  clusterRegistryPath,
  instanceManifestDir,
  instanceRecordPath,
  keyOf,
  recordYaml,
  type InstanceRecord,
} from "../src/repo/index.js";
import { clusterFiles, sampleCatalogFiles } from "../test/support/repo-files.js";

export const PREFILL_AUTHOR = { name: "gitops-broker bench", email: "bench@gitops-broker.invalid" };
/** Fixed dates: the same N gives the same commit ids on every run. */
const SEED_DATE = new Date("2026-01-01T00:00:00Z");
const PREFILL_TIME = Math.floor(new Date("2026-01-02T00:00:00Z").getTime() / 1000);

export interface Prefilled {
  /** The bare repository (absolute path). */
  remoteDir: string;
  /** Tip of `main`. */
  tip: string;
  instances: number;
  /** Service, plan `small` and cluster `local`, as the broker reads them from the seed. */
  placement: SamplePlacement;
}

/** What provisioning plan `small` needs: read from the seed like the broker does. */
export interface SamplePlacement {
  service: Service;
  plan: Plan;
  cluster: ClusterEntry;
}

/** Id of the i-th pre-filled instance (a DNS-1123 label, so its key is the id). */
export function prefillInstanceId(i: number): string {
  return `prefill-${i}`;
}

/**
 * The files a provision of `instanceId` on plan `small` adds (repo path -> content): the
 * instance record and the rendered manifests, as src/broker/instances.ts writes them.
 */
export function provisionFiles(p: SamplePlacement, instanceId: string, operationId: string, at: string): Map<string, string> {
  const record: InstanceRecord = {
    apiVersion: RECORD_API_VERSION,
    kind: "ServiceInstance",
    metadata: { name: keyOf(instanceId), namespace: p.cluster.namespace },
    spec: {
      instanceId,
      serviceId: p.service.id,
      planId: p.plan.id,
      clusterId: p.cluster.id,
      organizationGuid: "bench-org",
      spaceGuid: "bench-space",
    },
    status: { operations: [{ id: operationId, action: "provision", at, planId: p.plan.id }] },
  };
  // The sample plans' OSB metadata (labels, attributes), as a provision keeps it in the record.
  Object.assign(record.status, renderInstanceMetadataNow({ service: p.service, plan: p.plan, instance: record, bindings: [] }));
  const manifests = renderNow({
    action: "provision",
    templates: p.plan.templates,
    values: { service: p.service.raw, plan: p.plan.raw, instance: record as unknown as Record<string, unknown>, bindings: [] },
    defaultNamespace: p.cluster.namespace,
    labels: { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_INSTANCE]: keyOf(instanceId) },
    planName: p.plan.name,
  });
  const files = new Map<string, string>([[instanceRecordPath(instanceId), recordYaml(record)]]);
  const dir = instanceManifestDir(p.cluster.id, instanceId);
  for (const m of manifests) files.set(`${dir}/${m.fileName}`, m.yaml);
  return files;
}

/** Service, plan `small` and cluster `local` of the sample seed in `remoteDir`. */
export async function samplePlacement(remoteDir: string, scratch: string): Promise<SamplePlacement> {
  const [placement] = await samplePlacements(remoteDir, scratch, ["local"]);
  return placement!;
}

/** Service and plan `small` of the catalog in `remoteDir`, on each of `clusterIds` of its registry. */
async function samplePlacements(remoteDir: string, scratch: string, clusterIds: readonly string[]): Promise<SamplePlacement[]> {
  const writer = createGitWriter({
    gitdir: path.join(scratch, "catalog-reader.git"),
    remoteUrl: remoteDir,
    branch: "main",
    author: PREFILL_AUTHOR,
    logger: silentLogger(),
  });
  await writer.start();
  try {
    const tree = writer.snapshot();
    const [{ catalog }, { clusters }] = await Promise.all([loadCatalog(tree), loadClusters(tree)]);
    const service = catalog.services.find((s) => s.name === "postgresql");
    const plan = service?.plans.find((p) => p.name === "small");
    if (!service || !plan) throw new Error("the seed has no postgresql/small");
    return clusterIds.map((id) => {
      const cluster = clusters.find((c) => c.id === id);
      if (!cluster) throw new Error(`the seed's registry has no cluster ${id}`);
      return { service, plan, cluster };
    });
  } finally {
    await writer.close();
  }
}

/**
 * Creates `<dir>/remote.git`: the sample seed plus one commit with `instances` provisioned
 * instances (`prefill-0` ...). `http.receivepack` is on, so it can be served over smart HTTP.
 */
export async function prefillRemote(dir: string, instances: number): Promise<Prefilled> {
  const { remoteDir } = await prepareEmbedded({
    dataDir: dir,
    catalogSource: SAMPLE_CATALOG_DIR,
    registrySource: SAMPLE_REGISTRY_DIR,
    branch: "main",
    author: PREFILL_AUTHOR,
    now: () => SEED_DATE,
    log: silentLogger(),
  });
  await git(remoteDir, ["config", "http.receivepack", "true"]);
  const scratch = await mkdtemp(path.join(dir, ".prefill-"));
  let placement: SamplePlacement;
  try {
    placement = await samplePlacement(remoteDir, scratch);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  if (instances > 0) {
    const filesOf = provisionFilesByTemplate(placement, new Date(PREFILL_TIME * 1000).toISOString(), prefillInstanceId);
    await fastImport(remoteDir, `prefill: ${instances} provisioned instances\n`, "refs/heads/main^0", range(instances, filesOf));
  }
  const tip = (await git(remoteDir, ["rev-parse", "refs/heads/main"])).trim();
  return { remoteDir, tip, instances, placement };
}

/** A cluster of a pre-filled layout with stores: the store holding it (none: the control repository), its instances. */
export interface PrefillCluster {
  id: string;
  store?: string;
  instances: number;
}

export interface PrefilledStores {
  /** The control repository (catalog, registry; the instances of clusters without a store). */
  controlDir: string;
  /** Each store's bare repository, by name. */
  storeDirs: Map<string, string>;
  /** Placement (service, plan `small`, cluster) on each cluster, by id. */
  placements: Map<string, SamplePlacement>;
}

/** Id of the i-th instance pre-filled on `clusterId` (a DNS-1123 label, so its key is the id). */
export function prefillClusterInstanceId(clusterId: string, i: number): string {
  return `prefill-${clusterId}-${i}`;
}

/**
 * Creates `<dir>/control.git` (the sample catalog and a registry of `clusters`, each naming its
 * store) and `<dir>/<store>.git` for every store the clusters name. Each cluster's namespace
 * manifest and `instances` provisioned instances (`prefill-<cluster>-0` ...) go into its store, in
 * one commit per repository; clusters without a store into the control repository, as one commit
 * on top of the seed. Every repository has `http.receivepack` on, to be served over smart HTTP.
 */
export async function prefillStores(dir: string, clusters: readonly PrefillCluster[]): Promise<PrefilledStores> {
  const holder = (c: PrefillCluster): string => c.store ?? "control";
  const repos = [...new Set(["control", ...clusters.map(holder)])];
  const dirOf = (name: string): string => path.join(dir, `${name}.git`);
  for (const name of repos) {
    await git(dir, ["init", "-q", "--bare", "-b", "main", dirOf(name)]);
    await git(dirOf(name), ["config", "http.receivepack", "true"]);
  }
  const described = clusterFiles(clusters.map((c) => ({ id: c.id, ...(c.store !== undefined ? { spec: { store: c.store } } : {}) })));
  const seed = new Map(Object.entries(await sampleCatalogFiles()));
  for (const c of clusters) seed.set(clusterRegistryPath(c.id), described[clusterRegistryPath(c.id)]!);
  await fastImport(dirOf("control"), "seed: the sample catalog and the registry\n", undefined, [seed]);

  const scratch = await mkdtemp(path.join(dir, ".prefill-"));
  let placements: SamplePlacement[];
  try {
    placements = await samplePlacements(dirOf("control"), scratch, clusters.map((c) => c.id));
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  const at = new Date(PREFILL_TIME * 1000).toISOString();
  for (const name of repos) {
    const held = clusters.map((c, i) => ({ c, placement: placements[i]! })).filter(({ c }) => holder(c) === name);
    if (held.length === 0) continue;
    const chunks = function* (): Generator<Map<string, string>> {
      for (const { c, placement } of held) {
        yield new Map([[clusterNamespacePath(c.id), described[clusterNamespacePath(c.id)]!]]);
        yield* range(c.instances, provisionFilesByTemplate(placement, at, (i) => prefillClusterInstanceId(c.id, i)));
      }
    };
    const total = held.reduce((n, { c }) => n + c.instances, 0);
    const message = `prefill: ${total} provisioned instances on ${held.map(({ c }) => c.id).join(", ")}\n`;
    await fastImport(dirOf(name), message, name === "control" ? "refs/heads/main^0" : undefined, chunks());
  }
  return {
    controlDir: dirOf("control"),
    storeDirs: new Map(repos.filter((name) => name !== "control").map((name) => [name, dirOf(name)])),
    placements: new Map(placements.map((p) => [p.cluster.id, p])),
  };
}

/**
 * Rendering a provision takes about a millisecond, too slow for 100k instances. Every pre-filled
 * instance differs from the others by its id only, so one provision is rendered with a marker id
 * and the marker replaced; every 997th instance is rendered for real and must come out the same.
 */
function provisionFilesByTemplate(placement: SamplePlacement, at: string, idOf: (i: number) => string): (i: number) => Map<string, string> {
  const marker = "prefillmarker";
  const template = [...provisionFiles(placement, marker, `${marker}-op`, at)];
  const recordPath = instanceRecordPath(marker);
  const manifestDir = instanceManifestDir(placement.cluster.id, marker);
  return (i) => {
    const id = idOf(i);
    const files = new Map<string, string>();
    for (const [file, content] of template) {
      const target = file === recordPath
        ? instanceRecordPath(id)
        : `${instanceManifestDir(placement.cluster.id, id)}/${file.slice(manifestDir.length + 1).replaceAll(marker, id)}`;
      files.set(target, content.replaceAll(marker, id));
    }
    if (i % 997 === 0) {
      const real = provisionFiles(placement, id, `${id}-op`, at);
      if (JSON.stringify([...real]) !== JSON.stringify([...files])) {
        throw new Error(`pre-fill template differs from a real render for ${id}`);
      }
    }
    return files;
  };
}

function* range(count: number, filesOf: (i: number) => Map<string, string>): Generator<Map<string, string>> {
  for (let i = 0; i < count; i++) yield filesOf(i);
}

/**
 * One commit on `refs/heads/main` of the bare `remoteDir` through `git fast-import`: on top of
 * `from` (a root commit when undefined), adding every file of `chunks`.
 */
async function fastImport(remoteDir: string, message: string, from: string | undefined, chunks: Iterable<Map<string, string>>): Promise<void> {
  const child = spawn("git", ["fast-import", "--quiet", "--done"], {
    cwd: remoteDir,
    env: { ...process.env, GIT_DIR: remoteDir },
    stdio: ["pipe", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, "exit") as Promise<[number | null]>;
  const input = child.stdin;
  const write = async (chunk: string): Promise<void> => {
    if (!input.write(chunk)) await once(input, "drain");
  };
  // `data <bytes>` counts bytes, not characters.
  const data = (content: string): string => `data ${Buffer.byteLength(content)}\n${content}\n`;
  const { name, email } = PREFILL_AUTHOR;
  await write(`commit refs/heads/main\ncommitter ${name} <${email}> ${PREFILL_TIME} +0000\n`);
  await write(data(message));
  if (from !== undefined) await write(`from ${from}\n`);
  for (const files of chunks) {
    let chunk = "";
    for (const [file, content] of files) chunk += `M 100644 inline ${file}\n${data(content)}`;
    await write(chunk);
  }
  await write("\ndone\n");
  input.end();
  const [code] = await exited;
  if (code !== 0) throw new Error(`git fast-import exited with ${String(code)}: ${stderr}`);
}

async function git(cwd: string, args: string[]): Promise<string> {
  const child = spawn("git", args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr.on("data", (c: Buffer) => (err += c.toString()));
  const [code] = (await once(child, "exit")) as [number | null];
  if (code !== 0) throw new Error(`git ${args.join(" ")} exited with ${String(code)}: ${err}`);
  return out;
}
