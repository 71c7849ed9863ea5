import { sensitiveParameters, type ClusterEntry, type ParametersSchemaKey, type Plan } from "../catalog/index.js";
import { BadRequestError, InternalError } from "../errors/index.js";
import type { Draft } from "../gitwriter/index.js";
import { SENSITIVE_DIR, keyOf, sensitiveSecretPath, type SensitiveParameterRefs } from "../repo/index.js";
import { encryptYaml } from "../sops/index.js";

/**
 * Sensitive parameters (writeOnly / format: password) never reach Git in plaintext (ADR 0007).
 * On a cluster that declares `spec.encryption.sops.age`, the values a request carries are written
 * as one SOPS-encrypted Secret per operation, in the `sensitive/` directory of the instance's (or
 * binding's) manifests, keyed by their path (`adminPassword`, `users.0.password`); the record
 * keeps, per key, the name of the Secret holding the latest value (SensitiveParameterRefs). On any
 * other cluster such a request is refused. The broker cannot decrypt what it wrote: a value lives
 * in its Secret until a later request replaces it.
 */

/** The sensitive values of one request, by Secret key, and the age recipients to encrypt them for. */
export interface SensitiveValues {
  values: Record<string, string>;
  recipients: readonly string[];
}

/** A Secret key segment: Secret keys allow [-._a-zA-Z0-9]; '.' is kept as the path separator. */
const SEGMENT = /^[-_a-zA-Z0-9]+$/;

/** The Secret key of a value below `parameters`: its keys and indexes joined with '.'. */
export function secretKeyOf(at: readonly (string | number)[]): string {
  return at.join(".");
}

/** The Secret keys a request's sensitive values would be stored under, sorted. */
export function sensitiveKeys(plan: Plan, which: ParametersSchemaKey, parameters: unknown): string[] {
  return sensitiveParameters(plan, which, parameters)
    .map((f) => secretKeyOf(f.at))
    .sort();
}

function valueAt(parameters: unknown, at: readonly (string | number)[]): unknown {
  let node = parameters;
  for (const s of at) node = (node as Record<string | number, unknown>)[s];
  return node;
}

/**
 * The sensitive values in `parameters` (undefined: none), checked inside the queued operation once
 * the instance's cluster is known (for a provision: after placement). Answers 400 before anything
 * is written when the cluster declares no encryption, or when a value's path cannot be a Secret key.
 */
export function sensitiveValues(
  clusters: readonly ClusterEntry[],
  plan: Plan,
  which: ParametersSchemaKey,
  parameters: Record<string, unknown> | undefined,
  clusterId: string,
): SensitiveValues | undefined {
  const found = sensitiveParameters(plan, which, parameters);
  if (found.length === 0) return undefined;
  const cluster = clusters.find((c) => c.id === clusterId);
  if (!cluster?.encryption) {
    const what = `${found.map((f) => `${f.path} is marked ${f.marker}`).join(", ")} in plan ${plan.name}`;
    throw new BadRequestError(`${what}: sensitive parameters cannot be stored in Git unless cluster ${clusterId} declares how to encrypt them`);
  }
  const values: Record<string, string> = {};
  for (const f of found) {
    const key = secretKeyOf(f.at);
    if (f.at.length === 0 || !f.at.every((s) => SEGMENT.test(String(s))) || key.length > 253) {
      throw new BadRequestError(
        `${f.path} is marked ${f.marker} in plan ${plan.name}, but cannot be stored: it becomes the key ${JSON.stringify(key)} of an encrypted Secret, ` +
          "so every key on its path must consist of letters, digits, '-' and '_'",
      );
    }
    const value = valueAt(parameters, f.at);
    values[key] = typeof value === "string" ? value : JSON.stringify(value);
  }
  return { values, recipients: cluster.encryption.sops.age };
}

/**
 * The refs an update keeps: OSB updates replace top-level parameters, so the values stored under
 * a top-level key the update sets are gone, whether or not it sends sensitive values for it.
 */
export function keptRefs(previous: SensitiveParameterRefs | undefined, replacedTopLevel: Iterable<string>): SensitiveParameterRefs {
  const replaced = new Set(replacedTopLevel);
  return Object.fromEntries(Object.entries(previous ?? {}).filter(([key]) => !replaced.has(key.split(".", 1)[0]!)));
}

/** The manifest directory, object metadata and operation the encrypted Secret belongs to. */
export interface SealTarget {
  /** instanceManifestDir or bindingManifestDir. */
  dir: string;
  namespace: string;
  labels: Record<string, string>;
  instanceId: string;
  operationId: string;
  /** The operation's time (RFC 3339): the Secret's sops `lastmodified`. */
  at: string;
}

/**
 * Writes `sensitive` (if any) as the Secret `<instance-key>-sensitive-<operation-key>` of
 * `target.dir`, then removes the Secrets of that directory no ref names any more. Returns the
 * refs to record (`previous` but for the replaced top-level keys, plus this Secret's keys,
 * sorted), undefined when there are none. Touches nothing when there were and are none.
 */
export async function sealSensitiveValues(
  draft: Draft,
  target: SealTarget,
  sensitive: SensitiveValues | undefined,
  previous?: SensitiveParameterRefs,
  replacedTopLevel: Iterable<string> = [],
): Promise<SensitiveParameterRefs | undefined> {
  if (!sensitive && Object.keys(previous ?? {}).length === 0) return undefined;
  const refs = keptRefs(previous, replacedTopLevel);
  if (sensitive) {
    const name = `${keyOf(target.instanceId)}-sensitive-${keyOf(target.operationId)}`;
    const secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name, namespace: target.namespace, labels: target.labels },
      type: "Opaque",
      stringData: sensitive.values,
    };
    let text: string;
    try {
      text = await encryptYaml(secret, { recipients: sensitive.recipients, now: new Date(target.at) });
    } catch (e) {
      throw new InternalError(`cannot encrypt the sensitive parameters of instance ${target.instanceId}`, { cause: e });
    }
    draft.write(sensitiveSecretPath(target.dir, name), text);
    for (const key of Object.keys(sensitive.values)) refs[key] = name;
  }
  const named = new Set(Object.values(refs).map((name) => sensitiveSecretPath(target.dir, name)));
  for (const entry of (await draft.list(`${target.dir}/${SENSITIVE_DIR}`)) ?? []) {
    const path = `${target.dir}/${SENSITIVE_DIR}/${entry.name}`;
    if (!named.has(path)) draft.remove(path);
  }
  const keys = Object.keys(refs).sort();
  return keys.length > 0 ? Object.fromEntries(keys.map((k) => [k, refs[k]!])) : undefined;
}
