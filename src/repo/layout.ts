import { createHash } from "node:crypto";
import { InvalidArgumentError } from "../errors/index.js";

/**
 * Layout of the GitOps repository (documented in repo-layout/README.md, ADR 0002).
 *
 *   catalog/**\/*.yaml                              services and plans (SFService / SFPlan)
 *   registry/clusters/<cluster-id>.yaml            cluster registry
 *   instances/<ab>/<cd>/<instance-key>/instance.yaml                 instance record
 *   instances/<ab>/<cd>/<instance-key>/bindings/<binding-key>.yaml   binding records
 *   clusters/<cluster-id>/namespace.yaml                            the cluster's instance namespace
 *   clusters/<cluster-id>/instances/<ab>/<cd>/<instance-key>/*.yaml  rendered manifests
 *   clusters/<cluster-id>/instances/<ab>/<cd>/<instance-key>/bindings/<binding-key>/*.yaml
 *   .../<instance-key>/sensitive/secret-<name>.yaml, .../bindings/<binding-key>/sensitive/secret-<name>.yaml
 *                                                   SOPS-encrypted Secrets of sensitive parameters (ADR 0007)
 *   overrides/<instance-key>/*.yaml                 manual overrides (humans write, the broker reads)
 *   quota/*.yaml                                    quotas per organization, space or subaccount (humans write)
 *
 * `<ab>/<cd>` are the first four hex digits of sha256(instance-key): two levels of 256-way
 * fan-out keep every tree on the path of one operation small, whatever the number of instances.
 */

export const CATALOG_DIR = "catalog";
export const CLUSTER_REGISTRY_DIR = "registry/clusters";
export const INSTANCES_DIR = "instances";
export const CLUSTERS_DIR = "clusters";
export const OVERRIDES_DIR = "overrides";
export const QUOTA_DIR = "quota";
/** The store name of the control repository (`git.remote`), where clusters without `spec.store` live (ADR 0027). */
export const CONTROL_STORE = "control";

/** How messages name a store: `store <name>`, or the control repository. */
export function storeLabel(store: string): string {
  return store === CONTROL_STORE ? "the control repository" : `store ${store}`;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function isDns1123Label(s: string): boolean {
  return s.length > 0 && s.length <= 63 && DNS1123_LABEL.test(s);
}

/**
 * Stable Kubernetes-safe key of an OSB id: the id itself when it is a DNS-1123 label, else the
 * sha224 hex of the id (as Service Fabrik did). Never contains `/` or `..`.
 */
export function keyOf(id: string): string {
  return isDns1123Label(id) ? id : createHash("sha224").update(id, "utf8").digest("hex");
}

/** Recent keys' fan-out: one operation asks for the same instance's paths a dozen times. */
const fanOuts = new Map<string, string>();

function fanOut(key: string): string {
  let dirs = fanOuts.get(key);
  if (dirs === undefined) {
    const h = createHash("sha256").update(key, "utf8").digest("hex");
    dirs = `${h.slice(0, 2)}/${h.slice(2, 4)}`;
    if (fanOuts.size >= 1024) fanOuts.clear();
    fanOuts.set(key, dirs);
  }
  return dirs;
}

export function instanceRecordDir(instanceId: string): string {
  const key = keyOf(instanceId);
  return `${INSTANCES_DIR}/${fanOut(key)}/${key}`;
}

export function instanceRecordPath(instanceId: string): string {
  return `${instanceRecordDir(instanceId)}/instance.yaml`;
}

export function bindingRecordPath(instanceId: string, bindingId: string): string {
  return `${instanceRecordDir(instanceId)}/bindings/${keyOf(bindingId)}.yaml`;
}

export function clusterDir(clusterId: string): string {
  assertClusterId(clusterId);
  return `${CLUSTERS_DIR}/${clusterId}`;
}

export function clusterNamespacePath(clusterId: string): string {
  return `${clusterDir(clusterId)}/namespace.yaml`;
}

export function instanceManifestDir(clusterId: string, instanceId: string): string {
  const key = keyOf(instanceId);
  return `${clusterDir(clusterId)}/instances/${fanOut(key)}/${key}`;
}

export function bindingManifestDir(clusterId: string, instanceId: string, bindingId: string): string {
  return `${instanceManifestDir(clusterId, instanceId)}/bindings/${keyOf(bindingId)}`;
}

/** Sub-directory of an instance's (or binding's) manifest directory holding its SOPS-encrypted Secrets. */
export const SENSITIVE_DIR = "sensitive";

/** The file of the encrypted Secret `secretName` in `manifestDir` (instanceManifestDir or bindingManifestDir). */
export function sensitiveSecretPath(manifestDir: string, secretName: string): string {
  return `${manifestDir}/${SENSITIVE_DIR}/secret-${secretName}.yaml`;
}

/** `overrides/<key>`: no fan-out, humans write few of them and find them by key. */
export function overridesDir(instanceId: string): string {
  return `${OVERRIDES_DIR}/${keyOf(instanceId)}`;
}

export function clusterRegistryPath(clusterId: string): string {
  assertClusterId(clusterId);
  return `${CLUSTER_REGISTRY_DIR}/${clusterId}.yaml`;
}

export function assertClusterId(clusterId: string): void {
  if (!isDns1123Label(clusterId)) {
    throw new InvalidArgumentError(`cluster id ${JSON.stringify(clusterId)} is not a DNS-1123 label`);
  }
}
