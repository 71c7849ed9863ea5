import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { KubernetesObject, KubernetesObjectApi } from "@kubernetes/client-node";
import type { ClusterEntry, NudgeDecl, SecretValueRef, SyncRef } from "../catalog/index.js";
import { NudgeError } from "../errors/index.js";
import { loadClientNode, type ClientNode } from "../kube/index.js";
import type { KubeConfigFor, SecretKeyReader } from "../status-watcher/index.js";
import { githubPushEvent, repositoryNames, sha256Signature, type NudgeRange } from "./push-event.js";

/** The annotation Flux's controllers reconcile on when its value changes (fluxcd/pkg meta.ReconcileRequestAnnotation). */
export const FLUX_REQUESTED_AT = "reconcile.fluxcd.io/requestedAt";
/** The annotation Argo CD's application controller refreshes on, then removes. */
export const ARGOCD_REFRESH = "argocd.argoproj.io/refresh";

const APPLICATION = "argoproj.io/v1alpha1";
const KUSTOMIZATION = "kustomize.toolkit.fluxcd.io/v1";
const ARTIFACT_GENERATOR = "source.extensions.fluxcd.io/v1beta1";
/** A Kustomization's sourceRef names a kind; its apiVersion is optional there. */
const SOURCE_API_VERSIONS: Record<string, string> = {
  GitRepository: "source.toolkit.fluxcd.io/v1",
  OCIRepository: "source.toolkit.fluxcd.io/v1",
  Bucket: "source.toolkit.fluxcd.io/v1",
  ExternalArtifact: "source.toolkit.fluxcd.io/v1",
};

export interface SendDeps {
  kubeConfigFor: KubeConfigFor;
  readSecret: SecretKeyReader;
  /** The broker's git remote: the repository a push event names unless the cluster says otherwise. */
  remoteUrl: string;
  /** Each store's remote URL, by store name: the repository a push event names for a push to a store. */
  storeRemotes?: ReadonlyMap<string, string>;
  /** User-Agent and pusher of webhook requests, e.g. gitops-broker/0.1.0. */
  userAgent: string;
  now: () => Date;
  fetch: typeof fetch;
  timeoutMs: number;
}

/** Sends one nudge; rejects with NudgeError. Resolves with what was done, for the log. */
export async function sendNudge(entry: ClusterEntry, sync: SyncRef, nudge: NudgeDecl, range: NudgeRange, deps: SendDeps): Promise<string> {
  if (nudge.via === "webhook") return sendWebhook(entry, nudge, range, deps);
  const kc = await deps.kubeConfigFor(sync.kubeconfig ?? entry.kubeconfig, entry).catch((error: unknown) => {
    throw new NudgeError(entry.id, `cannot load the kubeconfig of ${sync.kind} ${sync.namespace}/${sync.name}: ${message(error)}`, {}, { cause: error });
  });
  const k8s = await loadClientNode().catch((error: unknown) => {
    throw kubeFailure(entry, `cannot annotate ${sync.kind} ${sync.namespace}/${sync.name}`, error);
  });
  const api: ObjectApi = { k8s, api: kc.makeApiClient(k8s.KubernetesObjectApi) };
  return sync.kind === "flux" ? annotateFlux(entry, sync, api, deps) : annotateArgo(entry, sync, api);
}

/** A client of the sync object's cluster, with the module it came from. */
interface ObjectApi {
  k8s: ClientNode;
  api: KubernetesObjectApi;
}

async function annotateArgo(entry: ClusterEntry, sync: SyncRef, api: ObjectApi): Promise<string> {
  await annotate(entry, api, { apiVersion: APPLICATION, kind: "Application", name: sync.name, namespace: sync.namespace }, ARGOCD_REFRESH, "normal");
  return `annotated Application ${sync.namespace}/${sync.name} ${ARGOCD_REFRESH}=normal`;
}

/**
 * Flux: the source first (the GitRepository fetches, and a new artifact makes the Kustomization
 * reconcile), then the Kustomization itself (`flux reconcile kustomization --with-source`).
 * Annotating the Kustomization alone would re-apply the artifact the source already had.
 */
async function annotateFlux(entry: ClusterEntry, sync: SyncRef, api: ObjectApi, deps: SendDeps): Promise<string> {
  const ks: Ref = { apiVersion: KUSTOMIZATION, kind: "Kustomization", name: sync.name, namespace: sync.namespace };
  let kustomization: KubernetesObject & { spec?: { sourceRef?: { kind?: string; name?: string; namespace?: string; apiVersion?: string } } };
  try {
    kustomization = await api.api.read({ apiVersion: ks.apiVersion, kind: ks.kind, metadata: { name: ks.name, namespace: ks.namespace } });
  } catch (error) {
    throw kubeFailure(entry, `cannot read Kustomization ${ks.namespace}/${ks.name}`, error);
  }
  const sourceRef = kustomization.spec?.sourceRef;
  const at = deps.now().toISOString();
  const done: string[] = [];
  if (sourceRef?.kind && sourceRef.name) {
    const apiVersion = sourceRef.apiVersion ?? SOURCE_API_VERSIONS[sourceRef.kind];
    if (apiVersion === undefined) throw new NudgeError(entry.id, `Kustomization ${ks.namespace}/${ks.name}: unknown source kind ${sourceRef.kind}`);
    const source: Ref = { apiVersion, kind: sourceRef.kind, name: sourceRef.name, namespace: sourceRef.namespace ?? ks.namespace };
    // An ArtifactGenerator's artifact fetches nothing itself: its Git sources are what to annotate.
    const fetching = source.kind === "ExternalArtifact" ? await generatorSources(entry, api, source) : [source];
    for (const ref of fetching) {
      await annotate(entry, api, ref, FLUX_REQUESTED_AT, at);
      done.push(`${ref.kind} ${ref.namespace}/${ref.name}`);
    }
  }
  await annotate(entry, api, ks, FLUX_REQUESTED_AT, at);
  done.push(`Kustomization ${ks.namespace}/${ks.name}`);
  return `annotated ${done.join(" and ")} ${FLUX_REQUESTED_AT}=${at}`;
}

interface Ref {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string;
}

type SourceRefDoc = { apiVersion?: string; kind?: string; name?: string; namespace?: string };

/**
 * The sources an ExternalArtifact is generated from, when an ArtifactGenerator (Flux 2.7's
 * source-watcher) made it: its `spec.sources` of a kind source-controller fetches. The artifact
 * changes once they fetch; a Kustomization annotated alone would re-apply the old one.
 */
async function generatorSources(entry: ClusterEntry, api: ObjectApi, artifact: Ref): Promise<Ref[]> {
  const read = async <T>(ref: Ref): Promise<T> => {
    try {
      return (await api.api.read({ apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name, namespace: ref.namespace } })) as T;
    } catch (error) {
      throw kubeFailure(entry, `cannot read ${ref.kind} ${ref.namespace}/${ref.name}`, error);
    }
  };
  const external = await read<{ spec?: { sourceRef?: SourceRefDoc } }>(artifact);
  const owner = external.spec?.sourceRef;
  if (owner?.kind !== "ArtifactGenerator" || !owner.name) return [artifact];
  const generator: Ref = { apiVersion: owner.apiVersion ?? ARTIFACT_GENERATOR, kind: "ArtifactGenerator", name: owner.name, namespace: owner.namespace ?? artifact.namespace };
  const spec = (await read<{ spec?: { sources?: SourceRefDoc[] } }>(generator)).spec;
  const sources = (spec?.sources ?? []).flatMap((src): Ref[] => {
    const apiVersion = src.kind === undefined ? undefined : SOURCE_API_VERSIONS[src.kind];
    return src.name && src.kind && src.kind !== "ExternalArtifact" && apiVersion ? [{ apiVersion, kind: src.kind, name: src.name, namespace: src.namespace ?? generator.namespace }] : [];
  });
  if (sources.length === 0) throw new NudgeError(entry.id, `ArtifactGenerator ${generator.namespace}/${generator.name} names no GitRepository, OCIRepository or Bucket to fetch`);
  return sources;
}

/** A JSON merge patch of one annotation (no read-modify-write, no conflict). */
async function annotate(entry: ClusterEntry, { k8s, api }: ObjectApi, ref: Ref, key: string, value: string): Promise<void> {
  const patch = { apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name, namespace: ref.namespace, annotations: { [key]: value } } };
  try {
    await api.patch(patch, undefined, undefined, "gitops-broker", undefined, k8s.PatchStrategy.MergePatch);
  } catch (error) {
    throw kubeFailure(entry, `cannot annotate ${ref.kind} ${ref.namespace}/${ref.name}`, error);
  }
}

function kubeFailure(entry: ClusterEntry, what: string, error: unknown): NudgeError {
  const code = (error as { code?: unknown }).code;
  const status = typeof code === "number" ? code : undefined;
  const body = (error as { body?: unknown }).body;
  const reason = typeof body === "string" ? safeJson(body)?.message : undefined;
  const detail = status === undefined ? message(error) : `HTTP ${status}${typeof reason === "string" ? `: ${reason}` : ""}`;
  return new NudgeError(entry.id, `${what}: ${detail}`, status === undefined ? {} : { status }, { cause: error });
}

async function sendWebhook(entry: ClusterEntry, nudge: Extract<NudgeDecl, { via: "webhook" }>, range: NudgeRange, deps: SendDeps): Promise<string> {
  const secret = nudge.secret ? await readSecretValue(entry, nudge.secret, deps) : undefined;
  const pushedTo = (range.store !== undefined ? deps.storeRemotes?.get(range.store) : undefined) ?? deps.remoteUrl;
  const repository = repositoryNames(nudge.repoURL ?? pushedTo);
  const body = JSON.stringify(githubPushEvent(range, repository, deps.userAgent));
  const headers: Record<string, string> = { "content-type": "application/json", "user-agent": deps.userAgent };
  if (nudge.payload === "github") {
    headers["x-github-event"] = "push";
    headers["x-github-delivery"] = randomUUID();
    if (secret !== undefined) headers["x-hub-signature-256"] = sha256Signature(secret, body);
  } else if (nudge.payload === "generic-hmac") {
    headers["x-signature"] = sha256Signature(secret!, body);
  }
  let response: Response;
  try {
    response = await deps.fetch(nudge.url, { method: "POST", headers, body, signal: AbortSignal.timeout(deps.timeoutMs), redirect: "error" });
  } catch (error) {
    throw new NudgeError(entry.id, `webhook ${redact(nudge.url)} not reached: ${message(error)}`, {}, { cause: error });
  }
  const text = await response.text().catch(() => "");
  if (!response.ok) {
    const said = text.trim().slice(0, 200);
    throw new NudgeError(entry.id, `webhook ${redact(nudge.url)} answered ${response.status}${said ? `: ${said}` : ""}`, { status: response.status });
  }
  return `${nudge.payload} push event for ${range.tip.slice(0, 12)} (${range.commits.length} commits) to ${redact(nudge.url)}: ${response.status}`;
}

/** Read at each nudge (rotation needs no restart); a trailing newline of a file is not part of it. */
async function readSecretValue(entry: ClusterEntry, ref: SecretValueRef, deps: SendDeps): Promise<Buffer> {
  try {
    if ("path" in ref) return Buffer.from((await readFile(ref.path, "utf8")).replace(/\r?\n$/, ""), "utf8");
    return await deps.readSecret(ref.secretRef, `cluster ${entry.id}`, "webhook secret");
  } catch (error) {
    const where = "path" in ref ? `file ${ref.path}` : `Secret ${ref.secretRef.namespace ?? "(broker's namespace)"}/${ref.secretRef.name}`;
    throw new NudgeError(entry.id, `cannot read the webhook secret (${where}): ${message(error)}`, {}, { cause: error });
  }
}

/** A URL for the log: without credentials, and without a Flux receiver's path digest (it is a bearer token). */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    const path = u.pathname.replace(/\/hook\/[^/]+/, "/hook/…");
    return `${u.protocol}//${u.host}${path}`;
  } catch {
    return "(invalid URL)";
  }
}

function message(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
    return `${error.message}${cause}`;
  }
  return String(error);
}

function safeJson(text: string): { message?: unknown } | undefined {
  try {
    return JSON.parse(text) as { message?: unknown };
  } catch {
    return undefined;
  }
}
