/**
 * A Service Fabrik landscape on REAL kube-apiservers (test/support/real-kube.ts), shaped as
 * test/support/service-fabrik-landscape.ts shapes it in the doubles, then created on the real
 * servers: Service Fabrik's master, which is also its sister cluster `west` (Service Fabrik lets
 * the master run instances), and the sister `east` on a second control plane. Each server gets
 * the CRDs of Service Fabrik's kinds and postgresql (test/support/crds), and, when asked,
 * kube-controller-manager's garbage collector. The GitOps remote (catalog: Service Fabrik's
 * sample plan; registry: `east` and `west` with kubeconfig files) is a bare repository served
 * over smart HTTP; `args` are the import command's configuration flags for it.
 *
 *   const land = await startRealLandscape("sf-real-", specs, { controllerManager: true });
 *   await runProcess(process.execPath, [BIN, "import", "service-fabrik", ...land.args, "--yes"]);
 *   land.applied.get("sf-0001")   // the objects the provisioner applied, as created (uids)
 *
 * Thousands of instances: the objects are created `concurrency` requests at a time; the
 * provision template is rendered once per namespace pattern (seedLandscape's `renderOnce`).
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { stringify } from "yaml";
import { createBareRemote } from "./git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "./git-http-server.js";
import { startKubeApiServer, type KubeApiServer, type KubeObject as DoubleObject } from "./kube-api-server.js";
import { POSTGRESQL } from "./postgres-operator.js";
import { trackedTempDir } from "./processes.js";
import { startRealKube, type KubeObject, type RealKube } from "./real-kube.js";
import { registerServiceFabrik, sampleServiceFabrikCatalog, seedLandscape, SF_NAMESPACE, type SfInstanceSpec } from "./service-fabrik-landscape.js";

const CRDS = path.resolve(import.meta.dirname, "crds");
export const SF_CRD_NAMES = ["sfserviceinstances.osb.servicefabrik.io", "sfservicebindings.osb.servicefabrik.io"];
const CRD_FILES = ["postgresqls.acid.zalan.do.yaml", ...SF_CRD_NAMES.map((n) => `${n}.yaml`)].map((f) => path.join(CRDS, f));

/** Service Fabrik's cluster ids: `west` is the master itself. */
export type SisterId = "east" | "west";

export interface RealLandscape {
  /** Service Fabrik's master, and its sister `west`. */
  master: RealKube;
  /** The sister `east`. */
  east: RealKube;
  /** The server of a sister. */
  sister(id: SisterId): RealKube;
  /** The objects the provisioner applied, by instance id, as the real servers stored them. */
  applied: Map<string, KubeObject[]>;
  /** The GitOps remote's directory and its smart-HTTP server. */
  remoteDir: string;
  git: GitHttpServer;
  /** `--config FILE --master-kubeconfig FILE`. */
  args: string[];
  /** Another GitOps remote on the same server, as the first was made (its own CLI data directory): its directory and the import's flags. */
  remote(name: string): Promise<{ dir: string; args: string[] }>;
  /** How long creating the landscape on the real servers took (after they were ready), and how many objects. */
  created: { ms: number; objects: number };
  close(): Promise<void>;
}

/** Drops what the double assigned (uid, resourceVersion, creationTimestamp): the real server assigns its own. */
function fresh(o: DoubleObject): KubeObject {
  const { uid: _u, resourceVersion: _r, creationTimestamp: _c, generation: _g, ...metadata } = o.metadata as Record<string, unknown>;
  return { ...(o as KubeObject), metadata: { ...metadata, name: String(o.metadata.name) } };
}

const OSB = "osb.servicefabrik.io/v1alpha1";

/**
 * Copies a double's landscape onto a real server, in the order owners need: Namespaces, Service
 * Fabrik's Deployments, its resources (status included), then the objects they own with each
 * owner reference's uid turned into the real one, and the bind responses' Secrets. `uids` maps
 * the double's uids to the real ones (shared by both servers: a replica's uid is its own).
 */
async function copyOnto(double: KubeApiServer, kube: RealKube, uids: Map<string, string>, concurrency: number): Promise<{ applied: KubeObject[]; count: number }> {
  const all = (apiVersion: string, kind: string) => double.store.list(apiVersion, kind);
  const sf = [...all(OSB, "SFServiceInstance"), ...all(OSB, "SFServiceBinding")];
  const owned = all(POSTGRESQL.group + "/" + POSTGRESQL.version, POSTGRESQL.kind);
  const secrets = all("v1", "Secret");
  const namespaces = new Set([SF_NAMESPACE, ...[...sf, ...owned, ...secrets].map((o) => String(o.metadata.namespace))]);
  await kube.createMany([...namespaces].map((name) => ({ apiVersion: "v1", kind: "Namespace", metadata: { name } })), { concurrency });
  const deployments = all("apps/v1", "Deployment").map((d) => {
    const labels = { app: String(d.metadata.name) };
    return {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: String(d.metadata.name), namespace: String(d.metadata.namespace) },
      spec: { replicas: 2, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: "manager", image: "servicefabrikjenkins/service-fabrik-interoperator:0.27.1" }] } } },
    };
  });
  await kube.createMany(deployments, { concurrency });
  const created = await kube.createMany(sf.map(fresh), { concurrency });
  sf.forEach((o, i) => uids.set(String(o.metadata.uid), String(created[i]!.metadata.uid)));
  const objects = owned.map((o) => {
    const object = fresh(o);
    const owners = (object.metadata.ownerReferences ?? []) as { uid: string }[];
    object.metadata.ownerReferences = owners.map((r) => ({ ...r, uid: uids.get(r.uid) ?? `no real uid for ${r.uid}` }));
    return object;
  });
  const applied = await kube.createMany(objects, { concurrency });
  await kube.createMany(secrets.map(fresh), { concurrency });
  return { applied, count: namespaces.size + deployments.length + sf.length + objects.length + secrets.length };
}

/**
 * Shapes the landscape in doubles as Service Fabrik's code wrote it (`west` is the master's own
 * double) and creates it on the real servers. The applied objects are keyed by their instance: the `sf-<id>` namespace, or
 * the name `sapcp-<id>` the sample plan renders in a shared namespace.
 */
async function shapeAndCreate(master: RealKube, east: RealKube, instances: SfInstanceSpec[], concurrency: number) {
  const shapedMaster = await startKubeApiServer({ resources: [POSTGRESQL] });
  const shapedEast = await startKubeApiServer({ resources: [POSTGRESQL] });
  try {
    const { files, service, plan } = await sampleServiceFabrikCatalog();
    for (const s of [shapedMaster, shapedEast]) registerServiceFabrik(s);
    await seedLandscape({ master: shapedMaster, sisters: { east: shapedEast, west: shapedMaster }, service, plan, instances, renderOnce: true });
    const started = performance.now();
    const uids = new Map<string, string>();
    // Side by side: east's objects refer to east's replicas only, the master's to the master's resources.
    const [onMaster, onEast] = await Promise.all([copyOnto(shapedMaster, master, uids, concurrency), copyOnto(shapedEast, east, uids, concurrency)]);
    const created = { ms: performance.now() - started, objects: onMaster.count + onEast.count };
    const ids = new Set(instances.map((s) => s.id));
    const applied = new Map<string, KubeObject[]>();
    for (const o of [...onMaster.applied, ...onEast.applied]) {
      const byNamespace = String(o.metadata.namespace).replace(/^sf-/, "");
      const id = ids.has(byNamespace) ? byNamespace : o.metadata.name.replace(/^(old-)?sapcp-/, "");
      applied.set(id, [...(applied.get(id) ?? []), o]);
    }
    return { files, created, applied };
  } finally {
    await shapedMaster.close();
    await shapedEast.close();
  }
}

export async function startRealLandscape(
  prefix: string,
  instances: SfInstanceSpec[],
  options: { controllerManager?: boolean; concurrency?: number } = {},
): Promise<RealLandscape> {
  const { concurrency = 16 } = options;
  const root = await trackedTempDir(prefix);
  const [master, east] = await Promise.all([startRealKube(), startRealKube()]);
  const closing: { close(): Promise<void> }[] = [master, east];
  try {
    await Promise.all([master.installCrds(CRD_FILES), east.installCrds(CRD_FILES)]);
    const { files, created, applied } = await shapeAndCreate(master, east, instances, concurrency);
    // After the CRDs (the collector learns the kinds discovery serves when it starts) and the
    // objects (it reads them in its first lists instead of one event at a time).
    if (options.controllerManager) await Promise.all([master.startControllerManager(), east.startControllerManager()]);
    const kubeconfigs = { master: path.join(root, "master.kubeconfig"), east: path.join(root, "east.kubeconfig") };
    await writeFile(kubeconfigs.master, master.kubeconfig(), { mode: 0o600 });
    await writeFile(kubeconfigs.east, east.kubeconfig(), { mode: 0o600 });
    const entry = (id: SisterId, kubeconfig: string) =>
      stringify({ apiVersion: "gitops-broker.io/v1alpha1", kind: "Cluster", metadata: { name: id }, spec: { namespace: "gitops-broker-instances", kubeconfig: { path: kubeconfig }, status: { mode: "commit" } } });
    const remotes = path.join(root, "remotes");
    const remoteFiles = { ...files, "registry/clusters/east.yaml": entry("east", kubeconfigs.east), "registry/clusters/west.yaml": entry("west", kubeconfigs.master) };
    const git = await startGitHttpServer({ root: remotes });
    closing.unshift(git);
    const remote: RealLandscape["remote"] = async (name) => {
      const dir = await createBareRemote(remotes, `${name}.git`, remoteFiles);
      const configFile = path.join(root, `${name}.yaml`);
      await writeFile(configFile, stringify({ dataDir: path.join(root, `${name}-data`), git: { remote: git.url(`${name}.git`) } }));
      return { dir, args: ["--config", configFile, "--master-kubeconfig", kubeconfigs.master] };
    };
    const first = await remote("gitops");
    return {
      master,
      east,
      sister: (id) => (id === "east" ? east : master),
      applied,
      remoteDir: first.dir,
      git,
      args: first.args,
      remote,
      created,
      async close() {
        for (const c of closing) await c.close();
      },
    };
  } catch (error) {
    for (const c of closing) await c.close();
    throw error;
  }
}

/**
 * Creates a double's one-server landscape (a master that is its own sister) on `kube` one object
 * at a time, in the order owners need: the Namespaces of Service Fabrik and of its instances, its
 * resources (status included; their uids are the real server's), then the postgresqls they own
 * with each owner reference's uid turned into the real one. For a few instances; startRealLandscape
 * copies thousands, Deployments and Secrets included.
 */
export async function copyServiceFabrikOnto(shaped: KubeApiServer, kube: RealKube): Promise<void> {
  const instances = shaped.store.list(OSB, "SFServiceInstance");
  for (const name of new Set([SF_NAMESPACE, ...instances.map((o) => o.metadata.namespace!)])) await kube.apply({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
  const uids = new Map<string, string>();
  for (const kind of ["SFServiceInstance", "SFServiceBinding"]) {
    for (const o of shaped.store.list(OSB, kind)) {
      const { status, ...rest } = fresh(o);
      const created = await kube.apply(rest, "service-fabrik-broker");
      await kube.patchStatus(created, status as Record<string, unknown>);
      uids.set(o.metadata.uid!, String(created.metadata.uid));
    }
  }
  for (const o of shaped.store.list(`${POSTGRESQL.group}/${POSTGRESQL.version}`, POSTGRESQL.kind)) {
    const object = fresh(o);
    object.metadata.ownerReferences = ((object.metadata.ownerReferences ?? []) as { uid: string }[]).map((r) => ({ ...r, uid: uids.get(r.uid)! }));
    await kube.apply(object, "interoperator");
  }
}
