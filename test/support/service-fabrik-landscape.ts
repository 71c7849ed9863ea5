/**
 * A running Service Fabrik landscape (v0.27.1) in API-server doubles, shaped as its code wrote it
 * (notes: ../shared/notes/service-fabrik.md, "Migration facts"):
 * - master: per instance the SFServiceInstance its broker created in `sf-<id>` (or a shared
 *   namespace): labels plan_id, service_id, platform, organization_guid, space_guid, `state`
 *   (the broker's, stale: in_queue) and `interoperator.servicefabrik.io/lastoperation`;
 *   finalizers `broker.servicefabrik.io` and `interoperator.servicefabrik.io`; spec camelCased at
 *   the top level only (context keeps organization_guid); status.state, status.resources (the
 *   objects the provisioner applied, replicated up); SFServiceBindings labelled `instance_guid`;
 *   the Deployments of its controllers in `interoperator`;
 * - each sister: replicas of those resources (their own uids), the Namespaces, and the objects
 *   the provisioner applied: rendered by the plan's own templates (Go, through the broker's
 *   engine, with SF's values: the SFServiceInstance as read), the namespace forced to the
 *   instance's, label OWNER_INTEROPERATOR_NAMESPACE, an owner reference to the sister's
 *   SFServiceInstance (no controller, no blockOwnerDeletion) and, per bind, a further one to the
 *   SFServiceBinding, whose bind template's change is merged in (DeepUpdate: nothing removed).
 */
import { createHash, randomUUID } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { PassThrough } from "node:stream";
import { stringify } from "yaml";
import { runImportCommand } from "../../src/cli/import.js";
import { loadCatalog, type Plan, type Service } from "../../src/catalog/index.js";
import { render } from "../../src/render/index.js";
import { startHarness, type Harness } from "./broker-harness.js";
import { tempDirTree } from "./dir-tree.js";
import { startKubeApiServer, type KubeApiServer, type KubeObject } from "./kube-api-server.js";
import { trackedTempDir } from "./processes.js";
import { startSisterCluster, type SisterCluster } from "./sister-cluster.js";

export const SF_INSTANCE = { group: "osb.servicefabrik.io", version: "v1alpha1", kind: "SFServiceInstance", plural: "sfserviceinstances", namespaced: true };
export const SF_BINDING = { group: "osb.servicefabrik.io", version: "v1alpha1", kind: "SFServiceBinding", plural: "sfservicebindings", namespaced: true };
export const SF_CLUSTER = { group: "resource.servicefabrik.io", version: "v1alpha1", kind: "SFCluster", plural: "sfclusters", namespaced: true };
export const DEPLOYMENT = { group: "apps", version: "v1", kind: "Deployment", plural: "deployments", namespaced: true };
export const SF_NAMESPACE = "interoperator";
const SF_API = "osb.servicefabrik.io/v1alpha1";

const SAMPLES = new URL("../../src/catalog/testdata/service-fabrik/", import.meta.url);
export const SF_SERVICE_ID = "24731fb8-7b84-5f57-914f-c3d55d793dd4";
export const SF_PLAN_ID = "39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88";

/** Service Fabrik's sample SFService and SFPlan (gotemplate) as catalog files, and as loaded. */
export async function sampleServiceFabrikCatalog(): Promise<{ files: Record<string, string>; service: Service; plan: Plan }> {
  const files = {
    "catalog/sfservice-postgresql.yaml": await readFile(new URL("sfservice-postgresql.yaml", SAMPLES), "utf8"),
    "catalog/sfplan-postgresql-v9.6-xxsmall.yaml": await readFile(new URL("sfplan-postgresql-v9.6-xxsmall.yaml", SAMPLES), "utf8"),
  };
  const tree = await tempDirTree();
  try {
    await tree.write(files);
    const service = (await loadCatalog(tree.tree)).catalog.serviceById(SF_SERVICE_ID)!;
    return { files, service, plan: service.plans.find((p) => p.id === SF_PLAN_ID)! };
  } finally {
    await tree.remove();
  }
}

/** The import command's configuration flags: a config file on `remoteUrl` and the master's kubeconfig file, in `dir`. */
export async function importArgs(dir: string, master: KubeApiServer, remoteUrl: string): Promise<string[]> {
  const masterKubeconfig = path.join(dir, "master.kubeconfig");
  await writeFile(masterKubeconfig, master.kubeconfig(), { mode: 0o600 });
  const configFile = path.join(dir, "cli.yaml");
  await writeFile(configFile, stringify({ dataDir: path.join(dir, "cli-data"), git: { remote: remoteUrl } }));
  return ["--config", configFile, "--master-kubeconfig", masterKubeconfig];
}

/** `gitops-broker import <args>` in process: its exit code and what it printed (stdout and stderr). */
export async function runImport(args: readonly string[]): Promise<{ code: number; out: string }> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on("data", (c: Buffer) => chunks.push(c));
  const code = await runImportCommand([...args], { stdout: out, stderr: out });
  return { code, out: Buffer.concat(chunks).toString("utf8") };
}

/**
 * A landscape to import: a master and sister clusters `east` and `west` (doubles serving Service
 * Fabrik's kinds, registered in `mode`, default commit), seeded with `instances` on Service Fabrik's sample
 * plan, and the real broker on a GitOps remote over smart HTTP holding that catalog and registry.
 * `args`: the import command's flags for them.
 */
export interface ImportLandscape {
  master: KubeApiServer;
  east: SisterCluster;
  west: SisterCluster;
  h: Harness;
  args: string[];
  close(): Promise<void>;
}

export async function startImportLandscape(prefix: string, instances: SfInstanceSpec[], options: { renderOnce?: boolean; mode?: "commit" | "live" } = {}): Promise<ImportLandscape> {
  const { mode = "commit", ...seed } = options;
  const root = await trackedTempDir(prefix);
  const master = await startKubeApiServer();
  registerServiceFabrik(master);
  // The sisters' own sync agents are not used: tests sync the harness's remote with agents of their own.
  const east = await startSisterCluster({ id: "east", sync: "argocd", remoteDir: path.join(root, "unused.git"), dir: root });
  const west = await startSisterCluster({ id: "west", sync: "argocd", remoteDir: path.join(root, "unused.git"), dir: root });
  registerServiceFabrik(east.server);
  registerServiceFabrik(west.server);
  const { files, service, plan } = await sampleServiceFabrikCatalog();
  await seedLandscape({ master, sisters: { east: east.server, west: west.server }, service, plan, instances, ...seed });
  const h = await startHarness({
    files: { ...files, "registry/clusters/east.yaml": east.registryEntry({ mode }), "registry/clusters/west.yaml": west.registryEntry({ mode }) },
  });
  const args = await importArgs(root, master, h.remoteUrl);
  return {
    master,
    east,
    west,
    h,
    args,
    async close() {
      await h.close();
      await east.close();
      await west.close();
      await master.close();
    },
  };
}

/** Serves Service Fabrik's kinds (and Deployments) on a double. */
export function registerServiceFabrik(server: KubeApiServer): void {
  for (const rt of [SF_INSTANCE, SF_BINDING, SF_CLUSTER, DEPLOYMENT]) server.registerResource(rt);
}

export interface SfBindingSpec {
  id: string;
  state?: string;
}

export interface SfInstanceSpec {
  id: string;
  /** SF's spec.clusterId. */
  clusterId: string;
  state?: string;
  /** Default `sf-<id>`. */
  namespace?: string;
  /** Default the plan's id. */
  planId?: string;
  bindings?: SfBindingSpec[];
  /** Fields the live object carries that the templates no longer render (DeepUpdate never removed one). */
  drift?: Record<string, unknown>;
  /** status.resources names its object under another name than the templates render. */
  renamed?: boolean;
  parameters?: Record<string, unknown>;
}

export interface Landscape {
  /** The objects the provisioner applied, by instance id. */
  applied: Map<string, KubeObject[]>;
}

const ORG = "org-guid-1";
const SPACE = "space-guid-1";

/**
 * The Kubernetes name Service Fabrik's broker gives an OSB id (its getKubernetesName, written
 * here from its rule): the id when it is a DNS-1123 subdomain of at most 253 characters, else
 * the sha224 hex of the id.
 */
export function sfName(id: string): string {
  const subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
  return id.length <= 253 && subdomain.test(id) ? id : createHash("sha224").update(id, "utf8").digest("hex");
}

function sfInstanceCr(spec: SfInstanceSpec, service: Service, plan: Plan): KubeObject {
  const namespace = spec.namespace ?? `sf-${sfName(spec.id)}`;
  const planId = spec.planId ?? plan.id;
  return {
    apiVersion: SF_API,
    kind: "SFServiceInstance",
    metadata: {
      name: sfName(spec.id),
      namespace,
      labels: {
        plan_id: planId,
        service_id: service.id,
        platform: "cloudfoundry",
        organization_guid: ORG,
        space_guid: SPACE,
        state: "in_queue",
        "interoperator.servicefabrik.io/lastoperation": "in_queue",
      },
      annotations: { "interoperator.servicefabrik.io/planhash": "0f3c" },
      finalizers: ["broker.servicefabrik.io", "interoperator.servicefabrik.io"],
    },
    spec: {
      instanceId: spec.id,
      serviceId: service.id,
      planId,
      clusterId: spec.clusterId,
      organizationGuid: ORG,
      spaceGuid: SPACE,
      context: { platform: "cloudfoundry", organization_guid: ORG, space_guid: SPACE },
      parameters: spec.parameters ?? {},
    },
  };
}

/**
 * An SFServiceBinding as Service Fabrik's putBinding created it: named by the binding's Kubernetes
 * name, `spec.id` the id as the platform sent it, `spec.instanceId` and the `instance_guid` label
 * the instance's Kubernetes name (not its id); its CRD keeps no `bindingId`.
 */
function sfBindingCr(b: SfBindingSpec, instance: KubeObject): KubeObject {
  const spec = instance.spec as Record<string, unknown>;
  return {
    apiVersion: SF_API,
    kind: "SFServiceBinding",
    metadata: {
      name: sfName(b.id),
      namespace: instance.metadata.namespace,
      labels: { instance_guid: instance.metadata.name!, state: "in_queue" },
      finalizers: ["broker.servicefabrik.io", "interoperator.servicefabrik.io"],
    },
    spec: {
      id: b.id,
      instanceId: instance.metadata.name,
      serviceId: spec.serviceId,
      planId: spec.planId,
      bindResource: { app_guid: `app-${b.id}` },
      context: { platform: "cloudfoundry", organization_guid: ORG, space_guid: SPACE },
      parameters: {},
    },
  };
}

const refOf = (o: KubeObject) => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name!, namespace: o.metadata.namespace });
const owner = (o: KubeObject) => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name!, uid: o.metadata.uid! });

/**
 * Writes the landscape into the doubles: `master` and the sisters by SF cluster id (a cluster id
 * without a sister, as one missing from the registry, gets only the master's resources). Renders
 * with the broker's Go engine, as the provisioner rendered.
 */
export async function seedLandscape(options: {
  master: KubeApiServer;
  sisters: Record<string, KubeApiServer>;
  service: Service;
  plan: Plan;
  instances: SfInstanceSpec[];
  /**
   * Thousands of instances: the provision template is rendered once per namespace pattern and the
   * instance's name substituted (it reads only `.instance.metadata.name` and the plan), and each
   * bind's user is merged as the sample bind template sets it; exact for the sample plan.
   */
  renderOnce?: boolean;
}): Promise<Landscape> {
  const { master, sisters, service, plan } = options;
  const once = new Map<string, string>();
  const provisioned = async (cr: KubeObject, namespace: string): Promise<KubeObject[]> => {
    const values = { service: service.raw, plan: plan.raw, instance: cr, bindings: [] };
    if (!options.renderOnce) return (await render({ action: "provision", templates: plan.templates, values, defaultNamespace: namespace, labels: {}, planName: plan.name })).map((m) => structuredClone(m.object) as KubeObject);
    const name = cr.metadata.name!;
    const key = namespace === `sf-${name}` ? "sf-*" : namespace;
    let text = once.get(key);
    if (text === undefined) {
      const probe = { ...cr, metadata: { ...cr.metadata, name: "x0x0x0" } };
      const ms = await render({ action: "provision", templates: plan.templates, values: { ...values, instance: probe }, defaultNamespace: key === "sf-*" ? "sf-x0x0x0" : namespace, labels: {}, planName: plan.name });
      text = JSON.stringify(ms.map((m) => m.object));
      once.set(key, text);
    }
    return JSON.parse(text.replaceAll("x0x0x0", name)) as KubeObject[];
  };
  const applied = new Map<string, KubeObject[]>();
  for (const server of [master, ...Object.values(sisters)]) {
    server.store.upsert({ apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "interoperator-provisioner", namespace: SF_NAMESPACE, uid: randomUUID() }, spec: { replicas: 2 } });
  }
  master.store.upsert({ apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "interoperator-broker", namespace: SF_NAMESPACE, uid: randomUUID() }, spec: { replicas: 2 } });
  for (const spec of options.instances) {
    const state = spec.state ?? "succeeded";
    const cr = sfInstanceCr(spec, service, plan);
    const namespace = cr.metadata.namespace!;
    const sister = sisters[spec.clusterId];
    const objects: KubeObject[] = [];
    const bindingCrs = (spec.bindings ?? []).map((b) => ({ b, cr: sfBindingCr(b, cr) }));
    if (sister && (state === "succeeded" || state === "in progress" || state === "failed")) {
      sister.store.upsert({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
      // A master that is its own sister (SFCluster "1") holds one resource: stored now, so owners carry its uid.
      const replica = sister.store.upsert(structuredClone(cr));
      if (sister === master) cr.metadata.uid = replica.metadata.uid;
      for (const object of await provisioned(cr, namespace)) {
        object.metadata.namespace = namespace;
        if (spec.renamed) object.metadata.name = `old-${object.metadata.name}`;
        object.metadata.labels = { ...object.metadata.labels, OWNER_INTEROPERATOR_NAMESPACE: SF_NAMESPACE };
        object.metadata.ownerReferences = [owner(sister.store.get(refOf(replica)) ?? replica)];
        if (spec.drift) object.spec = { ...(object.spec as object), ...spec.drift };
        objects.push(object);
      }
      for (const { b, cr: bcr } of bindingCrs) {
        if ((b.state ?? "succeeded") !== "succeeded") continue;
        const breplica = sister.store.upsert(structuredClone(bcr));
        if (sister === master) bcr.metadata.uid = breplica.metadata.uid;
        const postgresql = objects.find((o) => o.kind === "postgresql");
        const bindValues = { service: service.raw, plan: plan.raw, instance: cr, bindings: [], binding: bcr, postgresql: structuredClone(postgresql) };
        const bound = options.renderOnce && postgresql
          ? [{ kind: postgresql.kind, name: postgresql.metadata.name!, object: { spec: { users: { [bcr.metadata.name!]: ["superuser"] } } } }]
          : await render({ action: "bind", templates: plan.templates, values: bindValues, defaultNamespace: namespace, labels: {}, planName: plan.name });
        for (const m of bound) {
          const target = objects.find((o) => o.kind === m.kind && o.metadata.name === m.name);
          if (!target) continue;
          // DeepUpdate: the bind's users merged in, nothing removed; the binding a further owner.
          const users = ((m.object.spec as { users?: Record<string, unknown> }).users ?? {});
          (target.spec as { users: Record<string, unknown> }).users = { ...(target.spec as { users: Record<string, unknown> }).users, ...users };
          target.metadata.ownerReferences = [...(target.metadata.ownerReferences as never[]), owner(sister.store.get(refOf(breplica)) ?? breplica)];
        }
        bcr.status = { state: "succeeded", response: { secretRef: `sf-${bcr.metadata.name!}` }, resources: postgresql ? [{ apiVersion: postgresql.apiVersion, kind: postgresql.kind, name: postgresql.metadata.name, namespace }] : [] };
        if (sister !== master) sister.store.upsert({ ...(sister.store.get(refOf(breplica)) ?? breplica), status: bcr.status });
      }
      for (const o of objects) sister.store.upsert(o);
      cr.status = { state, resources: objects.map((o) => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, namespace })), dashboardUrl: "" };
      if (sister !== master) sister.store.upsert({ ...(sister.store.get(refOf(replica)) ?? replica), status: cr.status });
    } else {
      cr.status = { state };
    }
    master.store.upsert(cr);
    for (const { b, cr: bcr } of bindingCrs) {
      bcr.status ??= { state: b.state ?? "succeeded" };
      if (b.state !== undefined && b.state !== "succeeded") bcr.status = { state: b.state };
      master.store.upsert(bcr);
      // The bind response, credentials included, stays where SF put it: a Secret on the master.
      // Its replicator makes the master's SFServiceBinding the Secret's owner.
      if ((b.state ?? "succeeded") === "succeeded") {
        const stored = master.store.get(refOf(bcr))!;
        master.store.upsert({
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: `sf-${bcr.metadata.name!}`, namespace, ownerReferences: [owner(stored)] },
          data: { response: Buffer.from('{"credentials":{"password":"s3cret"}}').toString("base64") },
        });
      }
    }
    applied.set(spec.id, objects);
  }
  return { applied };
}
