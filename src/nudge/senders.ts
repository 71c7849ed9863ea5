import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { ClusterEntry, NudgeDecl, SecretValueRef, SyncRef } from "../catalog/index.js";
import { KubeApiError, NudgeError } from "../errors/index.js";
import { createKubeApi, createResourceFinder, objectPath, type FindResource, type KubeApi, type KubeConfigFor, type KubeRequest, type SecretKeyReader } from "../kube/index.js";
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
  let kube: KubeApi;
  try {
    kube = createKubeApi({ kubeConfig: kc, timeoutMs: deps.timeoutMs });
  } catch (error) {
    throw kubeFailure(entry, `cannot annotate ${sync.kind} ${sync.namespace}/${sync.name}`, error);
  }
  const api: ObjectApi = { api: kube, find: createResourceFinder(kube) };
  return sync.kind === "flux" ? annotateFlux(entry, sync, api, deps) : annotateArgo(entry, sync, api);
}

/** A client of the sync object's cluster, and where it serves a kind. */
interface ObjectApi {
  api: KubeApi;
  find: FindResource;
}

/** One request about one object; its failures are NudgeErrors saying `what`. */
async function objectCall<T>(entry: ClusterEntry, { api, find }: ObjectApi, ref: Ref, what: string, request: Omit<KubeRequest, "path" | "what">): Promise<T> {
  let info;
  try {
    info = await find(ref.apiVersion, ref.kind);
  } catch (error) {
    throw kubeFailure(entry, what, error);
  }
  if (info === undefined) throw new NudgeError(entry.id, `${what}: the cluster does not serve ${ref.apiVersion} ${ref.kind}`, { status: 404 });
  try {
    return (await api.request<T>({ ...request, path: objectPath(ref.apiVersion, info, ref.namespace, ref.name), what })).body;
  } catch (error) {
    throw kubeFailure(entry, what, error);
  }
}

async function annotateArgo(entry: ClusterEntry, sync: SyncRef, api: ObjectApi): Promise<string> {
  await annotate(entry, api, { apiVersion: APPLICATION, kind: "Application", name: sync.name, namespace: sync.namespace }, ARGOCD_REFRESH, "normal");
  return `annotated Application ${sync.namespace}/${sync.name} ${ARGOCD_REFRESH}=normal`;
}

/**
 * Flux: the source (the GitRepository fetches; kustomize-controller watches its sources, and the
 * new artifact makes the Kustomization reconcile at once). The Kustomization itself is annotated
 * only when it has no source to fetch: annotated together with the source, it reconciled the
 * artifact the source still had first (a full server-side dry run of the cluster's directory) and
 * the new one after that, later (seen with real kustomize-controller, ADR 0035). `flux reconcile
 * kustomization --with-source` avoids that by waiting for the source before annotating.
 */
async function annotateFlux(entry: ClusterEntry, sync: SyncRef, api: ObjectApi, deps: SendDeps): Promise<string> {
  const ks: Ref = { apiVersion: KUSTOMIZATION, kind: "Kustomization", name: sync.name, namespace: sync.namespace };
  const kustomization = await objectCall<KubernetesObject & { spec?: { sourceRef?: SourceRefDoc } }>(entry, api, ks, `cannot read Kustomization ${ks.namespace}/${ks.name}`, { method: "GET" });
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
  if (done.length === 0) {
    await annotate(entry, api, ks, FLUX_REQUESTED_AT, at);
    done.push(`Kustomization ${ks.namespace}/${ks.name}`);
  }
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
  const read = <T>(ref: Ref): Promise<T> => objectCall<T>(entry, api, ref, `cannot read ${ref.kind} ${ref.namespace}/${ref.name}`, { method: "GET" });
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
async function annotate(entry: ClusterEntry, api: ObjectApi, ref: Ref, key: string, value: string): Promise<void> {
  const body = { metadata: { annotations: { [key]: value } } };
  const request = { method: "PATCH", body, contentType: "application/merge-patch+json", query: { fieldManager: "gitops-broker" } } as const;
  await objectCall(entry, api, ref, `cannot annotate ${ref.kind} ${ref.namespace}/${ref.name}`, request);
}

/** A failure to talk to the cluster, as a NudgeError saying what was tried. */
function kubeFailure(entry: ClusterEntry, what: string, error: unknown): NudgeError {
  const status = error instanceof KubeApiError ? error.status : undefined;
  const text = error instanceof Error ? error.message : String(error);
  return new NudgeError(entry.id, text.startsWith(`${what}: `) ? text : `${what}: ${text}`, status === undefined ? {} : { status }, { cause: error });
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
