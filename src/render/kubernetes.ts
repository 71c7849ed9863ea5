/** Kubernetes naming rules and scopes the renderer checks rendered objects against. */

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** Name part of a qualified name (label and annotation keys) and a label value. */
const QUALIFIED_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
/** Kinds are CamelCase identifiers; this also keeps `/` and `.` out of file names. */
const KIND = /^[A-Za-z][A-Za-z0-9]*$/;
/** `[group/]version`: a DNS subdomain, then a DNS-1035 label (`v1`, `v1beta1`). */
const API_VERSION = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[a-z]([-a-z0-9]*[a-z0-9])?$/;

export function isDns1123Label(s: string): boolean {
  return s.length <= 63 && DNS1123_LABEL.test(s);
}

export function isDns1123Subdomain(s: string): boolean {
  return s.length <= 253 && DNS1123_SUBDOMAIN.test(s);
}

export function isKind(s: string): boolean {
  return KIND.test(s);
}

export function isApiVersion(s: string): boolean {
  return API_VERSION.test(s);
}

/** Why `key` is not a valid label/annotation key (`[prefix/]name`), or undefined when it is. */
export function qualifiedNameProblem(key: string): string | undefined {
  const slash = key.indexOf("/");
  const prefix = slash === -1 ? undefined : key.slice(0, slash);
  const name = slash === -1 ? key : key.slice(slash + 1);
  if (prefix !== undefined && !isDns1123Subdomain(prefix)) return `key prefix ${JSON.stringify(prefix)} is not a DNS-1123 subdomain`;
  if (name.length > 63 || !QUALIFIED_NAME.test(name)) {
    return `key ${JSON.stringify(key)} is not a qualified name (at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric, with an optional DNS prefix and '/')`;
  }
  return undefined;
}

export function isLabelValue(s: string): boolean {
  return s === "" || (s.length <= 63 && QUALIFIED_NAME.test(s));
}

/** API group of an apiVersion: `""` for the core group (`v1`). */
export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf("/");
  return slash === -1 ? "" : apiVersion.slice(0, slash);
}

/**
 * Cluster-scoped kinds the renderer knows, as `group/Kind`. Every other kind is treated as
 * namespaced and gets the default namespace; a cluster-scoped custom kind missing here would
 * get one too, which is why the list names the group and not just the kind.
 */
const CLUSTER_SCOPED = new Set([
  "/Namespace",
  "/Node",
  "/PersistentVolume",
  "rbac.authorization.k8s.io/ClusterRole",
  "rbac.authorization.k8s.io/ClusterRoleBinding",
  "apiextensions.k8s.io/CustomResourceDefinition",
  "storage.k8s.io/StorageClass",
  "storage.k8s.io/CSIDriver",
  "storage.k8s.io/CSINode",
  "storage.k8s.io/VolumeAttachment",
  "scheduling.k8s.io/PriorityClass",
  "admissionregistration.k8s.io/ValidatingWebhookConfiguration",
  "admissionregistration.k8s.io/MutatingWebhookConfiguration",
  "admissionregistration.k8s.io/ValidatingAdmissionPolicy",
  "admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding",
  "apiregistration.k8s.io/APIService",
  "networking.k8s.io/IngressClass",
  "node.k8s.io/RuntimeClass",
  "snapshot.storage.k8s.io/VolumeSnapshotClass",
]);

export function isClusterScoped(group: string, kind: string): boolean {
  return CLUSTER_SCOPED.has(`${group}/${kind}`);
}
