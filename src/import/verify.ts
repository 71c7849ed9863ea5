import { parse } from "yaml";
import type { TreeReader } from "../gitwriter/index.js";
import { createFoldCache, foldInstances, instanceManifestDir, SENSITIVE_DIR, type BindingRecord, type FoldSpec } from "../repo/index.js";
import {
  bindingIdOf,
  bindingInstanceOf,
  identityKey,
  identityOf,
  identityText,
  instanceIdOf,
  isServiceFabrikFinalizer,
  isServiceFabrikOwner,
  matchBindings,
  serviceFabrikName,
  SF_BINDING_KIND,
  SF_INSTANCE_KIND,
  SF_OSB_API_VERSION,
  type ClusterClient,
  type KubeObject,
  type ObjectIdentity,
} from "./landscape.js";
import type { ImportPlan, NotImported } from "./plan-import.js";

/**
 * The hand-over's verification, made from its own reads only: what the GitOps repository holds
 * as imported (its remote tip, fetched after the hand-over), and a fresh full list of every kind
 * concerned on the master and on each cluster that holds an imported instance (never the lists
 * the import planned from). It finds:
 * - every object an imported instance's manifests name that is owned by a Service Fabrik resource
 *   (must be none: else deleting Service Fabrik deletes it);
 * - Service Fabrik's controllers still running (must be none);
 * - what stays with Service Fabrik: each SFServiceInstance and SFServiceBinding still on the
 *   master (or a sister's replica of an imported one) that is not being deleted without its
 *   finalizers (handed over: the garbage collector finishes it), with the plan's reason where it
 *   gave one.
 */

export interface VerifyInputs {
  master: ClusterClient;
  /** A registry cluster's client by its id; undefined: the import cannot reach it. */
  cluster: (clusterId: string) => Promise<ClusterClient | undefined>;
  /** The remote's tip, fetched after the hand-over. */
  tip: TreeReader;
  /** Service Fabrik's namespace (its controllers' Deployments) on every cluster. */
  namespace: string;
  /** The reasons the plan gave for what it did not import: labels only, what is left comes from the lists. */
  plan?: Pick<ImportPlan, "refused" | "skipped" | "bindings">;
}

export interface Verification {
  /** What was listed: the master and each cluster, with its API server. */
  listed: string[];
  /** In the GitOps repository: imported instances and bindings, and the objects their manifests name. */
  imported: { instances: number; bindings: number; objects: number };
  /** Imported objects owned by a Service Fabrik resource, with the owner. */
  stillOwned: string[];
  /** Imported objects missing on their cluster. */
  absent: string[];
  /** Deployments of Service Fabrik's namespace with replicas > 0. */
  running: string[];
  /** What stays with Service Fabrik, with why. */
  left: { instances: NotImported[]; bindings: NotImported[] };
}

interface ImportedInstance {
  instanceId: string;
  clusterId: string;
  /** Deprovisioned through the broker since. */
  deleted: boolean;
  /** Every binding imported, unbound through the broker since or not. */
  bindingIds: string[];
  /** Those not unbound. */
  live: number;
}

const hasImport = (ops: readonly { action: string }[] | undefined) => (ops ?? []).some((o) => o.action === "import");

/** The instance records with an `import` entry (deprovisioned since or not), and their imported bindings. */
const IMPORTED: FoldSpec<ImportedInstance[]> = {
  empty: [],
  readsBindings: true,
  ofRecord(record, bindings = []) {
    if (!hasImport(record.operations)) return [];
    const imported = bindings.map((text) => parse(text) as BindingRecord | null).filter((b): b is BindingRecord => b !== null && hasImport(b.status?.operations));
    return [{ instanceId: record.instanceId, clusterId: record.clusterId, deleted: record.deleted, bindingIds: imported.map((b) => b.spec.bindingId), live: imported.filter((b) => !b.status.deleted).length }];
  },
  merge: (parts) => parts.flat(),
};

/** The objects named by the manifests under `dir` (the broker's own encrypted Secrets left out). */
async function namedObjects(tree: TreeReader, dir: string, out: ObjectIdentity[]): Promise<void> {
  for (const entry of (await tree.list(dir)) ?? []) {
    const path = `${dir}/${entry.name}`;
    if (entry.type === "tree") {
      if (entry.name !== SENSITIVE_DIR) await namedObjects(tree, path, out);
      continue;
    }
    if (!entry.name.endsWith(".yaml")) continue;
    const o = parse((await tree.readText(path)) ?? "") as Partial<KubeObject> | null;
    if (typeof o?.apiVersion !== "string" || typeof o.kind !== "string" || typeof o.metadata?.name !== "string") continue;
    out.push({ apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, ...(typeof o.metadata.namespace === "string" ? { namespace: o.metadata.namespace } : {}) });
  }
}

/** Deleted with its dependents orphaned and none of Service Fabrik's finalizers left: the garbage collector finishes it. */
const handedOver = (o: KubeObject) => o.metadata.deletionTimestamp !== undefined && !(o.metadata.finalizers ?? []).some(isServiceFabrikFinalizer);

const resourceText = (o: KubeObject) => `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ""}${o.metadata.name ?? ""}`;

/** One full list per API server and kind, whatever asks for it. */
function freshLists() {
  const lists = new Map<string, Promise<KubeObject[]>>();
  return (client: ClusterClient, apiVersion: string, kind: string): Promise<KubeObject[]> => {
    const key = `${client.server} ${apiVersion} ${kind}`;
    let list = lists.get(key);
    if (!list) {
      list = client.list(apiVersion, kind).then((items) => items.map((o) => ({ ...o, apiVersion, kind })));
      lists.set(key, list);
    }
    return list;
  };
}

export async function verifyHandOver(inputs: VerifyInputs): Promise<Verification> {
  const list = freshLists();
  const records = await foldInstances(inputs.tip, IMPORTED, createFoldCache(1024));
  const live = records.filter((r) => !r.deleted);
  const v: Verification = {
    listed: [`the master (${inputs.master.server})`],
    imported: { instances: live.length, bindings: live.reduce((n, r) => n + r.live, 0), objects: 0 },
    stillOwned: [],
    absent: [],
    running: [],
    left: { instances: [], bindings: [] },
  };
  const clusters = new Map<string, ClusterClient>();
  const byCluster = new Map<string, ObjectIdentity[]>();
  for (const r of live) {
    let objects = byCluster.get(r.clusterId);
    if (!objects) byCluster.set(r.clusterId, (objects = []));
    await namedObjects(inputs.tip, instanceManifestDir(r.clusterId, r.instanceId), objects);
  }
  for (const [clusterId, objects] of [...byCluster].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const client = await inputs.cluster(clusterId);
    if (!client) {
      v.stillOwned.push(`cluster ${clusterId}: not reachable by the import, its ${objects.length} imported object(s) unchecked`);
      continue;
    }
    clusters.set(clusterId, client);
    v.listed.push(`cluster ${clusterId} (${client.server})`);
    v.imported.objects += objects.length;
    await checkOwners(list, client, clusterId, objects, v);
  }
  const sisters = [...clusters].filter(([, c]) => c.server !== inputs.master.server).map(([id, c]): [string, ClusterClient] => [`cluster ${id}`, c]);
  for (const [label, client] of [["master", inputs.master] as [string, ClusterClient], ...sisters]) {
    for (const d of await list(client, "apps/v1", "Deployment")) {
      const replicas = (d.spec as { replicas?: number } | undefined)?.replicas ?? 1;
      if (d.metadata.namespace === inputs.namespace && replicas !== 0) v.running.push(`${label}: Deployment ${d.metadata.namespace}/${d.metadata.name ?? ""} has ${replicas} replica(s)`);
    }
  }
  await leftWithServiceFabrik(inputs, list, records, sisters, v);
  v.stillOwned = [...new Set(v.stillOwned)];
  return v;
}

async function checkOwners(list: ReturnType<typeof freshLists>, client: ClusterClient, clusterId: string, objects: ObjectIdentity[], v: Verification): Promise<void> {
  const kinds = new Map(objects.map((o) => [`${o.apiVersion} ${o.kind}`, o]));
  const live = new Map<string, KubeObject>();
  for (const { apiVersion, kind } of kinds.values()) {
    for (const o of await list(client, apiVersion, kind)) live.set(identityKey(identityOf(o)), o);
  }
  for (const ref of objects) {
    const object = live.get(identityKey(ref));
    if (!object) {
      v.absent.push(`${identityText(ref)} on cluster ${clusterId}`);
      continue;
    }
    for (const owner of (object.metadata.ownerReferences ?? []).filter(isServiceFabrikOwner)) {
      v.stillOwned.push(`${identityText(ref)} on cluster ${clusterId} is owned by ${owner.kind} ${owner.name}`);
    }
  }
}

/** Service Fabrik's resources still on the master (and sisters' replicas of imported instances), each with why it stays. */
async function leftWithServiceFabrik(
  inputs: VerifyInputs,
  list: ReturnType<typeof freshLists>,
  records: readonly ImportedInstance[],
  sisters: readonly [string, ClusterClient][],
  v: Verification,
): Promise<void> {
  const imported = new Map(records.map((r) => [r.instanceId, r]));
  // A binding names its instance by Service Fabrik's Kubernetes name; the instance may be gone from the master.
  const bySfName = new Map(records.map((r) => [serviceFabrikName(r.instanceId), r.instanceId]));
  const instanceReason = new Map([...(inputs.plan?.refused ?? []), ...(inputs.plan?.skipped ?? [])].map((n) => [n.instanceId, n]));
  const bindingReason = new Map([...(inputs.plan?.bindings.refused ?? []), ...(inputs.plan?.bindings.skipped ?? [])].map((n) => [n.bindingId ?? "", n]));
  // SF's cluster "1" is the master itself: listed once.
  const sources: [string, ClusterClient][] = [["the master", inputs.master], ...sisters];
  for (const [where, client] of sources) {
    const onMaster = client === inputs.master;
    const instances = await list(client, SF_OSB_API_VERSION, SF_INSTANCE_KIND);
    const bindings = await list(client, SF_OSB_API_VERSION, SF_BINDING_KIND);
    for (const o of instances) {
      const instanceId = instanceIdOf(o);
      if (handedOver(o)) continue;
      if (imported.has(instanceId)) {
        v.left.instances.push({ instanceId, reason: `imported, but its ${resourceText(o)} on ${where} is not handed over (it still holds its finalizers or is not deleted): run the hand-over again` });
      } else if (onMaster) {
        v.left.instances.push(instanceReason.get(instanceId) ?? { instanceId, reason: "not imported: not in this run's plan (listed after the import read the master)" });
      }
    }
    const { byInstance, orphans } = matchBindings(instances, bindings);
    const instanceOf = new Map<KubeObject, string>();
    for (const [i, bs] of byInstance) for (const b of bs) instanceOf.set(b, instanceIdOf(i));
    for (const b of orphans) instanceOf.set(b, bySfName.get(bindingInstanceOf(b)) ?? bindingInstanceOf(b));
    for (const b of bindings) {
      const instanceId = instanceOf.get(b) ?? "";
      const bindingId = bindingIdOf(b);
      if (handedOver(b)) continue;
      if (imported.get(instanceId)?.bindingIds.includes(bindingId)) {
        v.left.bindings.push({ instanceId, bindingId, reason: `imported, but its ${resourceText(b)} on ${where} is not handed over (it still holds its finalizers or is not deleted): run the hand-over again` });
      } else if (onMaster) {
        v.left.bindings.push(bindingReason.get(bindingId) ?? { instanceId, bindingId, reason: "not imported: not in this run's plan" });
      }
    }
  }
}
