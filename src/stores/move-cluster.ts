import { isMap, parseDocument } from "yaml";
import { ClusterMoveConflictError, ClusterMoveRefusedError } from "../errors/index.js";
import type { CommitSpec, Draft, GitWriter, TreeReader } from "../gitwriter/index.js";
import {
  clusterDir,
  clusterRegistryPath,
  createFoldCache,
  foldInstances,
  instanceRecordDir,
  moveFencePath,
  moveFenceYaml,
  readMoveFences,
  storeLabel,
  type FoldSpec,
} from "../repo/index.js";
import type { StoreSet } from "./store-set.js";
import { CONTROL, type StoreName } from "./types.js";

/**
 * `gitops-broker move-cluster` (ADR 0027, docs/stores.md): a cluster's instance records and
 * manifests go from the store they are in to another, one commit in one repository at a time,
 * in an order that loses no acknowledged operation:
 *
 *   1. copy     into the target: every file of the cluster as the source's tip has it
 *   2. fence    in the source: `moved/<id>.yaml` state moving (operations on the cluster there
 *               answer 503 from now on)
 *   3. catch up into the target: what changed in the source between the copy and the fence
 *   4. fence    in the source: state moved (operations there go to the target from now on)
 *   5. switch   in the control repository: the registry entry's spec.store
 *   (then, once the agents are re-pointed: `--finish`)
 *   6. remove   from the source: the cluster's files (the fence stays)
 *
 * Every step is idempotent, so a move that stopped half-way is resumed by running it again.
 */

export interface MovePlan {
  clusterId: string;
  from: StoreName;
  to: StoreName;
  /** Instances of the cluster in the source (deleted records included). */
  instances: number;
  files: number;
  bytes: number;
  /** Where the move stands: what a run does next. */
  stage: "copy" | "switch" | "finish" | "done";
}

export interface MoveStep {
  step: "copy" | "fence" | "catch-up" | "switch" | "remove";
  store: StoreName;
  commit: string | null;
  files: number;
}

type Files = Map<string, Uint8Array>;

const INSTANCES_OF: (clusterId: string) => FoldSpec<string[]> = (clusterId) => ({
  empty: [],
  ofRecord: (record) => (record.clusterId === clusterId ? [record.instanceId] : []),
  merge: (parts) => parts.flat(),
});

async function walk(tree: TreeReader, dir: string, into: Files): Promise<void> {
  for (const entry of (await tree.list(dir)) ?? []) {
    const path = `${dir}/${entry.name}`;
    if (entry.type === "tree") await walk(tree, path, into);
    else into.set(path, (await tree.readFile(path))!);
  }
}

/** Every file of a cluster in one store's tree: its directory and its instances' record directories. */
export async function clusterFiles(tree: TreeReader, clusterId: string): Promise<{ files: Files; instances: string[] }> {
  const instances = await foldInstances(tree, INSTANCES_OF(clusterId), createFoldCache(10_000));
  const files: Files = new Map();
  await walk(tree, clusterDir(clusterId), files);
  for (const id of instances) await walk(tree, instanceRecordDir(id), files);
  return { files, instances };
}

const same = (a: Uint8Array | null | undefined, b: Uint8Array | null | undefined): boolean =>
  a === b || (a != null && b != null && Buffer.from(a).equals(Buffer.from(b)));

function spec(step: string, clusterId: string, from: StoreName, to: StoreName): CommitSpec {
  return {
    subject: `move cluster ${clusterId} from ${storeLabel(from)} to ${storeLabel(to)}: ${step}`,
    trailers: { "Move-Cluster": clusterId, "Move-From": from, "Move-To": to },
  };
}

/** The registry entry of `clusterId` with spec.store set to `to` (removed for the control repository), comments kept. */
async function switchedRegistry(tree: TreeReader, clusterId: string, to: StoreName): Promise<string> {
  const file = clusterRegistryPath(clusterId);
  const text = await tree.readText(file);
  if (text === null) throw new ClusterMoveRefusedError(`${file} does not exist`);
  const doc = parseDocument(text);
  if (doc.get("kind") !== "Cluster") throw new ClusterMoveRefusedError(`${file}: only a gitops-broker.io Cluster names a store (spec.store); convert the SFCluster first`);
  const specNode = doc.get("spec");
  if (to === CONTROL) {
    if (isMap(specNode)) specNode.delete("store");
  } else if (isMap(specNode)) {
    specNode.set("store", to);
  } else {
    doc.set("spec", { store: to });
  }
  return doc.toString();
}

export interface MoveClusterOptions {
  stores: StoreSet;
  /** The registry as served now (the cluster's current spec.store). */
  clusters: () => readonly { id: string; store?: string | undefined }[];
  clusterId: string;
  to: StoreName;
}

/** Where the cluster is and what a run would do; refuses what cannot be moved. */
export async function planMove(options: MoveClusterOptions): Promise<MovePlan> {
  const { stores, clusterId, to } = options;
  const entry = options.clusters().find((c) => c.id === clusterId);
  if (!entry) throw new ClusterMoveRefusedError(`cluster ${clusterId} is not in the registry`);
  if (!stores.names.includes(to)) throw new ClusterMoveRefusedError(`store ${to} is not configured (stores: ${stores.names.join(", ")})`);
  await stores.refresh();
  const named = entry.store ?? CONTROL;
  let from = named;
  let stage: MovePlan["stage"] = "copy";
  if (named === to) {
    // Switched already: the source is the store whose fence sends the cluster here.
    const sources: StoreName[] = [];
    for (const name of stores.names) {
      if (name !== to && (await readMoveFences(stores.writer(name).snapshot())).get(clusterId)?.to === to) sources.push(name);
    }
    if (sources.length === 0) throw new ClusterMoveConflictError(`cluster ${clusterId} is in ${storeLabel(to)} already`);
    from = sources[0]!;
    stage = "finish";
  }
  const { files, instances } = await clusterFiles(stores.writer(from).snapshot(), clusterId);
  if (stage === "finish" && files.size === 0) stage = "done";
  let bytes = 0;
  for (const content of files.values()) bytes += content.length;
  return { clusterId, from, to, instances: instances.length, files: files.size, bytes, stage };
}

/** Steps 1-5 (see above). */
export async function moveCluster(options: MoveClusterOptions, onStep: (step: MoveStep) => void = () => undefined): Promise<MovePlan> {
  const plan = await planMove(options);
  if (plan.stage !== "copy") return plan;
  const { stores, clusterId, to } = options;
  const { from } = plan;
  const source = stores.writer(from);
  const target = stores.writer(to);

  // 1. copy
  const first = (await clusterFiles(source.snapshot(), clusterId)).files;
  const copied = await target.submit(async (draft) => {
    let n = 0;
    for (const [path, content] of first) {
      const there = await draft.readFile(path);
      if (same(there, content)) continue;
      if (there !== null) throw new ClusterMoveConflictError(`${storeLabel(to)} already holds ${path} with other content: not overwritten`);
      draft.write(path, content);
      n++;
    }
    return { commit: draft.changed ? spec("copy", clusterId, from, to) : null, result: n };
  });
  onStep({ step: "copy", store: to, commit: copied.commit, files: copied.result });

  // 2. fence (moving): one small file, so that it lands between the serving brokers' pushes.
  // The tree of its commit is the cluster's last state in the source: no write to the cluster
  // lands there after it (an operation re-run on a tip with the fence answers 503).
  const fenced = await source.submit(async (draft) => {
    draft.write(moveFencePath(clusterId), moveFenceYaml({ clusterId, to, state: "moving" }));
    return { commit: draft.changed ? spec("fence", clusterId, from, to) : null, result: undefined };
  });
  onStep({ step: "fence", store: from, commit: fenced.commit, files: 1 });
  const atFence = fenced.commit === null ? source.snapshot() : await source.readerAt(fenced.commit);
  if (!atFence) throw new ClusterMoveConflictError(`the fence commit ${fenced.commit} is missing from the local repository of ${from}`);

  // 3. catch up
  const final = (await clusterFiles(atFence, clusterId)).files;
  const caught = await target.submit(async (draft) => {
    let n = 0;
    for (const [path, content] of final) {
      if (same(await draft.readFile(path), content)) continue;
      draft.write(path, content);
      n++;
    }
    for (const path of first.keys()) {
      if (!final.has(path) && (await draft.oid(path)) !== null) {
        draft.remove(path);
        n++;
      }
    }
    return { commit: draft.changed ? spec("catch up", clusterId, from, to) : null, result: n };
  });
  onStep({ step: "catch-up", store: to, commit: caught.commit, files: caught.result });

  // 4. fence (moved)
  const moved = await source.submit(async (draft: Draft) => {
    draft.write(moveFencePath(clusterId), moveFenceYaml({ clusterId, to, state: "moved" }));
    return { commit: draft.changed ? spec("fence", clusterId, from, to) : null, result: undefined };
  });
  onStep({ step: "fence", store: from, commit: moved.commit, files: 1 });

  // 5. switch the registry
  const control: GitWriter = stores.writer(CONTROL);
  const switched = await control.submit(async (draft) => {
    draft.write(clusterRegistryPath(clusterId), await switchedRegistry(draft, clusterId, to));
    return { commit: draft.changed ? spec("registry", clusterId, from, to) : null, result: undefined };
  });
  onStep({ step: "switch", store: CONTROL, commit: switched.commit, files: 1 });
  return { ...plan, stage: "finish" };
}

/** Step 6: the cluster's files leave the source (its fence stays, for brokers that have not read the registry yet). */
export async function finishMove(options: MoveClusterOptions, onStep: (step: MoveStep) => void = () => undefined): Promise<MovePlan> {
  const plan = await planMove(options);
  if (plan.stage === "copy") throw new ClusterMoveConflictError(`cluster ${options.clusterId} has not been moved to ${options.to} yet: run the move first`);
  if (plan.stage === "done") return plan;
  const { stores, clusterId } = options;
  const removed = await stores.writer(plan.from).submit(async (draft) => {
    const { files } = await clusterFiles(draft, clusterId);
    const fence = (await readMoveFences(draft)).get(clusterId);
    if (fence?.state !== "moved" || fence.to !== options.to) throw new ClusterMoveConflictError(`${plan.from} has no finished move of cluster ${clusterId} to ${options.to}`);
    for (const path of files.keys()) draft.remove(path);
    return { commit: draft.changed ? spec("remove", clusterId, plan.from, options.to) : null, result: files.size };
  });
  onStep({ step: "remove", store: plan.from, commit: removed.commit, files: removed.result });
  return { ...plan, stage: "done" };
}
