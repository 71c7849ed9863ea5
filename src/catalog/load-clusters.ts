import type { Problem } from "../errors/index.js";
import type { TreeReader } from "../gitwriter/index.js";
import { CLUSTER_REGISTRY_DIR } from "../repo/index.js";
import { isRecord, listYamlFiles, parseYamlFile, schemaProblems, type YamlDocument } from "./documents.js";
import { documentValidators } from "./repo-schemas.js";

export const DEFAULT_INSTANCE_NAMESPACE = "gitops-broker-instances";

/** How the broker reaches a cluster's API (to watch status). Never a kubeconfig stored in Git. */
export type KubeconfigRef =
  /** A file on the broker's host (e.g. a mounted Secret). */
  | { path: string }
  /** A Secret the broker reads from its own cluster; `namespace` undefined: the broker's namespace. */
  | { secretRef: { name: string; key: string; namespace?: string } };

/** The Argo CD Application or Flux Kustomization that syncs a cluster directory. */
export interface SyncRef {
  kind: "argocd" | "flux";
  name: string;
  namespace: string;
  /** Where that object lives, when not on the target cluster. */
  kubeconfig?: KubeconfigRef;
  /** How the agent is told about a push (`spec.sync.nudge`); undefined: it polls. */
  nudge?: NudgeDecl;
}

/** A secret value by reference: a file on the broker's host, or a key of a Secret of its cluster. */
export type SecretValueRef = { path: string } | { secretRef: { name: string; key: string; namespace?: string } };

/** `spec.sync.nudge`, defaults applied (ADR 0014). */
export type NudgeDecl =
  | { via: "annotation"; minIntervalMs: number }
  | {
      via: "webhook";
      url: string;
      /** github: a GitHub push event (Argo CD, Flux Receiver type github); generic(-hmac): a Flux Receiver. */
      payload: "github" | "generic" | "generic-hmac";
      secret?: SecretValueRef;
      /** The repository URL named in a push event; undefined: the broker's git remote. */
      repoURL?: string;
      minIntervalMs: number;
    };

/** `spec.encryption`: SOPS with age recipients. */
export interface EncryptionDecl {
  sops: { age: string[] };
}

/** What a cluster declares of itself for helm charts' `.Capabilities`. */
export interface ClusterCapabilities {
  kubeVersion?: string;
  apiVersions?: string[];
}

/** One cluster of the registry (registry/clusters/<id>.yaml). */
export interface ClusterEntry {
  /** metadata.name: a DNS-1123 label, also the file name and the clusters/<id>/ directory. */
  id: string;
  /** Namespace the instances' resources go into. */
  namespace: string;
  /** False: no new instances are placed on it (existing ones stay). */
  schedulable: boolean;
  /** `spec.store`: the store holding its instances and manifests (ADR 0027); undefined: the control repository. */
  store?: string;
  /** metadata.labels with spec.labels merged over them, for cluster selection. */
  labels: Record<string, string>;
  capacity?: { maxInstances?: number; resources?: Record<string, string | number> };
  kubeconfig?: KubeconfigRef;
  /** Status mode for instances on this cluster; undefined: the broker's default. */
  statusMode?: "commit" | "live";
  /** The Argo CD Application / Flux Kustomization syncing clusters/<id>/, read in live mode. */
  sync?: SyncRef;
  /** How sensitive parameters are encrypted for this cluster; none: they are refused (ADR 0007). */
  encryption?: EncryptionDecl;
  /**
   * `spec.kubeVersion` / `spec.apiVersions`: the helm engine's `.Capabilities` for this cluster
   * (as `helm template --kube-version/--api-versions`); undefined: Helm's defaults.
   */
  capabilities?: ClusterCapabilities;
  /** Repo-relative file it was loaded from. */
  file: string;
  /** The document as written. */
  raw: Record<string, unknown>;
}

/**
 * Reads `registry/clusters/*.{yaml,yml}`: one `Cluster` (gitops-broker.io/v1alpha1) or
 * Service Fabrik `SFCluster` per file, named after its id. Files with problems are left out.
 * Result in id order.
 */
export async function loadClusters(tree: TreeReader): Promise<{ clusters: ClusterEntry[]; problems: Problem[] }> {
  const files = await listYamlFiles(tree, CLUSTER_REGISTRY_DIR, false);
  const loaded = await Promise.all(files.map((file) => loadClusterFile(tree, file)));
  const problems = loaded.flatMap((l) => l.problems);
  const clusters = loaded.flatMap((l) => (l.cluster && l.problems.length === 0 ? [l.cluster] : []));

  const byId = new Map<string, ClusterEntry[]>();
  for (const c of clusters) byId.set(c.id, [...(byId.get(c.id) ?? []), c]);
  const duplicated = new Set<string>();
  for (const [id, group] of byId) {
    if (group.length < 2) continue;
    duplicated.add(id);
    for (const c of group) {
      const others = group.filter((o) => o !== c).map((o) => o.file);
      problems.push({ file: c.file, path: "metadata.name", message: `duplicate cluster id "${id}" (also in ${others.join(", ")})` });
    }
  }
  return {
    clusters: clusters.filter((c) => !duplicated.has(c.id)).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
    problems,
  };
}

async function loadClusterFile(tree: TreeReader, file: string): Promise<{ cluster?: ClusterEntry; problems: Problem[] }> {
  const text = await tree.readText(file);
  if (text === null) return { problems: [{ file, path: "", message: "cannot be read" }] };
  const { docs, problems } = parseYamlFile(file, text);
  if (problems.length > 0) return { problems };
  const [doc, ...rest] = docs;
  if (!doc) return { problems: [{ file, path: "", message: "is empty (expected a Cluster document)" }] };
  if (rest.length > 0) return { problems: [{ file, path: "", message: "must hold exactly one cluster document" }] };
  if (!isRecord(doc.value)) return { problems: [{ file, path: "", message: "must be a mapping (a Cluster document)" }] };

  const kind = doc.value.kind;
  const validate = kind === "Cluster" ? documentValidators.cluster : kind === "SFCluster" ? documentValidators.sfCluster : undefined;
  if (!validate) {
    return {
      problems: [{ file, path: "kind", message: `${JSON.stringify(kind ?? null)} is not a cluster registry entry (expected Cluster or SFCluster)` }],
    };
  }
  const found = schemaProblems(validate, doc, file);
  if (found.length > 0) return { problems: found };

  const cluster = kind === "Cluster" ? fromCluster(doc, file) : fromSfCluster(doc, file);
  const nudgeProblem = nudgeDocProblem((doc.value as unknown as ClusterDoc).spec?.sync?.nudge);
  if (nudgeProblem) return { problems: [{ file, ...nudgeProblem }] };
  const nudge = cluster.sync?.nudge;
  if (cluster.sync?.kind === "argocd" && nudge?.via === "webhook" && nudge.payload !== "github") {
    return { problems: [{ file, path: "spec.sync.nudge.payload", message: `Argo CD's webhook takes a Git host's push event: "github", not ${JSON.stringify(nudge.payload)}` }] };
  }
  if (nudge?.via === "webhook" && nudge.payload === "generic-hmac" && nudge.secret === undefined) {
    return { problems: [{ file, path: "spec.sync.nudge.secret", message: "payload generic-hmac signs with the Receiver's token: set secret (a path or a secretRef)" }] };
  }
  const base = file.slice(file.lastIndexOf("/") + 1).replace(/\.ya?ml$/, "");
  if (base !== cluster.id) {
    return { problems: [{ file, path: "metadata.name", message: `must equal the file name (${base}): the file is registry/clusters/<cluster-id>.yaml` }] };
  }
  return { cluster, problems: [] };
}

interface ClusterDoc {
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: {
    namespace?: string;
    schedulable?: boolean;
    store?: string;
    labels?: Record<string, string>;
    capacity?: { maxInstances?: number; resources?: Record<string, string | number> };
    kubeconfig?: KubeconfigDoc;
    status?: { mode?: "commit" | "live" };
    sync?: { kind: "argocd" | "flux"; name: string; namespace?: string; kubeconfig?: KubeconfigDoc; nudge?: NudgeDoc };
    encryption?: EncryptionDecl;
    secretRef?: string;
    kubeVersion?: string;
    apiVersions?: string[];
  };
}

function fromCluster(doc: YamlDocument, file: string): ClusterEntry {
  const { metadata, spec = {} } = doc.value as ClusterDoc;
  const entry: ClusterEntry = {
    id: metadata.name,
    namespace: spec.namespace ?? DEFAULT_INSTANCE_NAMESPACE,
    schedulable: spec.schedulable ?? true,
    labels: { ...metadata.labels, ...spec.labels },
    file,
    raw: doc.value as Record<string, unknown>,
  };
  if (spec.store !== undefined) entry.store = spec.store;
  if (spec.capacity) entry.capacity = { ...spec.capacity };
  const kubeconfig = kubeconfigRef(spec.kubeconfig);
  if (kubeconfig) entry.kubeconfig = kubeconfig;
  if (spec.status?.mode) entry.statusMode = spec.status.mode;
  if (spec.kubeVersion !== undefined || spec.apiVersions !== undefined) {
    entry.capabilities = {
      ...(spec.kubeVersion !== undefined ? { kubeVersion: spec.kubeVersion } : {}),
      ...(spec.apiVersions !== undefined ? { apiVersions: [...spec.apiVersions] } : {}),
    };
  }
  if (spec.encryption) entry.encryption = { sops: { age: [...spec.encryption.sops.age] } };
  if (spec.sync) {
    const { kind, name, namespace } = spec.sync;
    const sync: SyncRef = { kind, name, namespace: namespace ?? (kind === "argocd" ? "argocd" : "flux-system") };
    const syncKubeconfig = kubeconfigRef(spec.sync.kubeconfig);
    if (syncKubeconfig) sync.kubeconfig = syncKubeconfig;
    if (spec.sync.nudge) sync.nudge = nudgeDecl(kind, spec.sync.nudge);
    entry.sync = sync;
  }
  return entry;
}

type KubeconfigDoc = { path?: string; secretRef?: { name: string; key?: string; namespace?: string } };

interface NudgeDoc {
  via: "annotation" | "webhook";
  url?: string;
  payload?: "github" | "generic" | "generic-hmac";
  secret?: KubeconfigDoc;
  repoURL?: string;
  minIntervalSeconds?: number;
}

const DEFAULT_NUDGE_INTERVAL_SECONDS = 1;

/** What the schema cannot say precisely: which fields go with which `via`. */
function nudgeDocProblem(doc: NudgeDoc | undefined): { path: string; message: string } | undefined {
  if (doc === undefined) return undefined;
  if (doc.via === "webhook" && doc.url === undefined) return { path: "spec.sync.nudge.url", message: "is required with via: webhook" };
  if (doc.via === "annotation") {
    const extra = (["url", "payload", "secret", "repoURL"] as const).find((k) => doc[k] !== undefined);
    if (extra) return { path: `spec.sync.nudge.${extra}`, message: "is for via: webhook (via: annotation sets an annotation through the kubeconfig)" };
  }
  return undefined;
}

function nudgeDecl(kind: SyncRef["kind"], doc: NudgeDoc): NudgeDecl {
  const minIntervalMs = Math.round((doc.minIntervalSeconds ?? DEFAULT_NUDGE_INTERVAL_SECONDS) * 1000);
  if (doc.via === "annotation") return { via: "annotation", minIntervalMs };
  const secret: SecretValueRef | undefined =
    doc.secret?.path !== undefined ? { path: doc.secret.path } : doc.secret?.secretRef ? { secretRef: { key: "token", ...doc.secret.secretRef } } : undefined;
  const payload = doc.payload ?? (kind === "argocd" ? "github" : secret ? "generic-hmac" : "generic");
  return {
    via: "webhook",
    url: doc.url!,
    payload,
    ...(secret ? { secret } : {}),
    ...(doc.repoURL !== undefined ? { repoURL: doc.repoURL } : {}),
    minIntervalMs,
  };
}

function kubeconfigRef(k: KubeconfigDoc | undefined): KubeconfigRef | undefined {
  if (k?.path !== undefined) return { path: k.path };
  if (k?.secretRef) return { secretRef: { key: "kubeconfig", ...k.secretRef } };
  return undefined;
}

/** Service Fabrik: the kubeconfig is key `kubeconfig` of Secret spec.secretRef in the SFCluster's namespace. */
function fromSfCluster(doc: YamlDocument, file: string): ClusterEntry {
  const { metadata, spec } = doc.value as ClusterDoc & { spec: { secretRef: string } };
  const secretRef: { name: string; key: string; namespace?: string } = { name: spec.secretRef, key: "kubeconfig" };
  if (metadata.namespace !== undefined) secretRef.namespace = metadata.namespace;
  return {
    id: metadata.name,
    namespace: DEFAULT_INSTANCE_NAMESPACE,
    schedulable: true,
    labels: { ...metadata.labels },
    kubeconfig: { secretRef },
    file,
    raw: doc.value as Record<string, unknown>,
  };
}
