import {
  appliedResources,
  identityKey,
  identityOf,
  isServiceFabrikFinalizer,
  isServiceFabrikOwner,
  SF_BINDING_KIND,
  SF_INSTANCE_KIND,
  SF_OSB_API_VERSION,
  specOf,
  type ClusterClient,
  type KubeObject,
  type Landscape,
  type ObjectIdentity,
} from "./landscape.js";
import type { HandOverSubject } from "./plan-import.js";

/**
 * Handing the imported objects over from Service Fabrik (v0.27.1): its provisioner made the
 * sister's SFServiceInstance an owner of every object it applied (controllerutil.SetOwnerReference,
 * no `controller`), each bind added its SFServiceBinding as a further owner, and its broker and
 * controllers hold their resources with finalizers. Deleting Service Fabrik's resources, or its
 * CRDs, lets the garbage collector delete every database unless, in this order:
 *   1. its controllers are stopped (every Deployment in its namespace scaled to 0), so nothing
 *      re-adds a reference or acts on a deletion;
 *   2. its owner references are removed from the imported objects;
 *   3. its finalizers are removed from its resources (master and sister replicas);
 *   4. its resources are deleted with `propagationPolicy: Orphan`.
 * Without `perform` the steps are only listed (what is already done is not listed again); with it
 * they are made, each one reported, and the first failure stops the steps after it. Whether it
 * worked is for verify.ts to say, from lists of its own.
 */

export interface HandOverStep {
  step: 1 | 2 | 3 | 4;
  /** The cluster (SF id, or `master`) and its API server. */
  cluster: string;
  /** What to do, as a kubectl command line. */
  command: string;
  error?: string;
}

export interface HandOverReport {
  steps: HandOverStep[];
  performed: boolean;
}

export interface HandOverInputs {
  master: ClusterClient;
  sister: (sfClusterId: string) => Promise<ClusterClient | undefined>;
  subjects: readonly HandOverSubject[];
  /** The live objects the import read: whose owner references step 2 removes. */
  landscape: Pick<Landscape, "live" | "instances">;
  /** Service Fabrik's namespace on every cluster (its Helm release's, default `interoperator`). */
  namespace: string;
  perform: boolean;
}

const DEPLOYMENT = { apiVersion: "apps/v1", kind: "Deployment" };

function resourceArg(ref: ObjectIdentity): string {
  const group = ref.apiVersion.includes("/") ? ref.apiVersion.slice(0, ref.apiVersion.indexOf("/")) : "";
  return `${ref.kind.toLowerCase()}${group ? `.${group}` : ""} ${ref.name}`;
}
const kubectl = (c: ClusterClient, ref: ObjectIdentity, verb: string) => `kubectl --server ${c.server}${ref.namespace ? ` -n ${ref.namespace}` : ""} ${verb} ${resourceArg(ref)}`;
const patchArg = (p: unknown) => `--type merge -p '${JSON.stringify(p)}'`;
const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));

interface Cluster {
  label: string;
  client: ClusterClient;
}

export async function handOver(inputs: HandOverInputs): Promise<HandOverReport> {
  const { perform } = inputs;
  const report: HandOverReport = { steps: [], performed: perform };
  const clusters = new Map<string, Cluster>([["master", { label: "master", client: inputs.master }]]);
  const sisters = new Map<string, ClusterClient>();
  const handed = new Set(inputs.subjects.map((s) => s.sfClusterId));
  // Controllers are stopped on every sister the master names; only the handed-over instances' must be reachable.
  const named = inputs.landscape.instances.map((i) => specOf(i).clusterId).filter((id): id is string => typeof id === "string" && id !== "");
  for (const id of new Set([...handed, ...named])) {
    const client = handed.has(id) ? await inputs.sister(id) : await inputs.sister(id).catch(() => undefined);
    if (!client) continue;
    sisters.set(id, client);
    // SF's cluster "1" is the master itself: one cluster, one set of steps.
    if (![...clusters.values()].some((c) => c.client.server === client.server)) clusters.set(id, { label: `cluster ${id}`, client });
  }
  let failed = false;
  const act = async (step: HandOverStep, run: () => Promise<void>) => {
    report.steps.push(step);
    if (!perform || failed) return;
    try {
      await run();
    } catch (e) {
      step.error = errorText(e);
      failed = true;
    }
  };

  // 1. Stop the controllers.
  const deployments = async () => {
    const out: { cluster: Cluster; object: KubeObject }[] = [];
    for (const cluster of clusters.values()) {
      const inNamespace = (d: KubeObject) => (d.metadata.namespace === inputs.namespace ? d : undefined);
      for (const d of await cluster.client.list(DEPLOYMENT.apiVersion, DEPLOYMENT.kind, inNamespace)) out.push({ cluster, object: { ...d, ...DEPLOYMENT } });
    }
    return out;
  };
  const replicas = (d: KubeObject) => (d.spec as { replicas?: number } | undefined)?.replicas ?? 1;
  for (const { cluster, object } of await deployments()) {
    if (replicas(object) === 0) continue;
    const ref = identityOf(object);
    await act({ step: 1, cluster: cluster.label, command: kubectl(cluster.client, ref, "scale --replicas=0") }, () => cluster.client.mergePatch(ref, { spec: { replicas: 0 } }));
  }

  // 2. Owner references off the imported objects.
  for (const subject of inputs.subjects) {
    const client = sisters.get(subject.sfClusterId);
    const live = inputs.landscape.live.get(subject.sfClusterId);
    if (!client || !live) continue;
    const refs = new Map<string, ObjectIdentity>();
    for (const ref of [...appliedResources(subject.instance), ...subject.bindings.flatMap(appliedResources)]) refs.set(identityKey(ref), ref);
    for (const [key, ref] of refs) {
      const object = live.get(key);
      const owners = object?.metadata.ownerReferences ?? [];
      if (!owners.some(isServiceFabrikOwner)) continue;
      const kept = owners.filter((o) => !isServiceFabrikOwner(o));
      const patch = { metadata: { ownerReferences: kept.length > 0 ? kept : null } };
      await act({ step: 2, cluster: `cluster ${subject.sfClusterId}`, command: `${kubectl(client, ref, "patch")} ${patchArg(patch)}` }, () => client.mergePatch(ref, patch));
    }
  }

  // 3 and 4. Finalizers off Service Fabrik's resources, then delete them orphaning their dependents:
  // bindings before instances, each sister's replicas before the master's.
  const wanted = new Set(inputs.subjects.flatMap((s) => [s.instance, ...s.bindings].map((o) => `${o.kind} ${o.metadata.namespace ?? ""}/${o.metadata.name ?? ""}`)));
  const resources: { cluster: Cluster; object: KubeObject }[] = [];
  const ordered = [...clusters.values()].filter((c) => c.label !== "master").concat(clusters.get("master")!);
  for (const kind of [SF_BINDING_KIND, SF_INSTANCE_KIND]) {
    for (const cluster of ordered) {
      // Who each is and its finalizers: all steps 3 and 4 read of thousands of resources.
      const named = ({ metadata: { name, namespace, finalizers } }: KubeObject): KubeObject | undefined =>
        wanted.has(`${kind} ${namespace ?? ""}/${name ?? ""}`) ? { apiVersion: SF_OSB_API_VERSION, kind, metadata: { name, ...(namespace ? { namespace } : {}), ...(finalizers ? { finalizers } : {}) } } : undefined;
      for (const object of await cluster.client.list(SF_OSB_API_VERSION, kind, named)) resources.push({ cluster, object });
    }
  }
  for (const { cluster, object } of resources) {
    const finalizers = object.metadata.finalizers ?? [];
    if (!finalizers.some(isServiceFabrikFinalizer)) continue;
    const kept = finalizers.filter((f) => !isServiceFabrikFinalizer(f));
    const patch = { metadata: { finalizers: kept.length > 0 ? kept : null } };
    const ref = identityOf(object);
    await act({ step: 3, cluster: cluster.label, command: `${kubectl(cluster.client, ref, "patch")} ${patchArg(patch)}` }, () => cluster.client.mergePatch(ref, patch));
  }
  for (const { cluster, object } of resources) {
    const ref = identityOf(object);
    await act({ step: 4, cluster: cluster.label, command: kubectl(cluster.client, ref, "delete --cascade=orphan") }, () => cluster.client.deleteOrphan(ref));
  }

  return report;
}

