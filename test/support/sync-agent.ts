/**
 * A sync agent double playing Argo CD (an Application with automated sync and prune) or Flux (a
 * Kustomization with prune) for one cluster directory: it applies `clusters/<id>/` at a commit
 * of the bare remote to a test Kubernetes API server, prunes the broker's objects that left Git,
 * and writes the sync object's status the way the real controllers do:
 *
 * - Argo CD (controller/appcontroller.go, controller/sync.go, gitops-engine pkg/sync): a sync is an
 *   operation: the Application's `operation` is set, status.operationState is replaced whole by
 *   {phase Running, operation, startedAt} (NewOperationState), then by the result {phase
 *   Succeeded / Failed, message, finishedAt, syncResult {revision, resources[]}} and `operation`
 *   is cleared. Every resource is applied that can be: one refused at apply time (`rejectWith`,
 *   e.g. an admission webhook) is SyncFailed and fails the operation ("one or more objects failed
 *   to apply, reason: ...") while the others are Synced; a sync refused as a whole (`failWith`,
 *   e.g. the dry run) applies nothing. Then the refresh (CompareAppState): status.sync {status,
 *   revision}, status.resources[] (Synced / OutOfSync against that revision, requiresPruning, and
 *   the health of each only with `persistResourceHealth`; resourceHealthSource appTree otherwise,
 *   the default since 3.0), status.health.status (the worst of the resources', postgresql judged by
 *   Argo CD's acid.zalan.do/postgresql health.lua: Running Healthy, Creating/Updating or no status
 *   Progressing, anything else Degraded), status.reconciledAt, status.history (the last ten
 *   successful syncs only). Auto-sync does not try a revision whose sync failed again: it sets
 *   the SyncError condition "Failed last sync attempt to [<rev>]: <message>" instead. The
 *   Application's syncPolicy.retry.limit is 0 (retries are not modelled).
 * - Flux: status.lastAppliedRevision (`main@sha1:<sha>`, or `main/<sha>` as before Flux 2.1),
 *   lastAttemptedRevision, observedGeneration, and the Ready condition.
 *
 * It works on the server's store directly (as a controller next to the API server would), so the
 * API requests the server records are the broker's alone.
 *
 * Started, it polls every `intervalMs` (Argo CD's timeout.reconciliation is 180 s; a Flux
 * GitRepository's spec.interval) through the injected `delay`, and is told about a push the ways
 * the real controllers are:
 * - Argo CD: the `argocd.argoproj.io/refresh` annotation on the Application (the controller
 *   refreshes, auto-sync applies the new revision, the annotation is removed), and the API server's
 *   /api/webhook taking a GitHub push event (util/webhook/webhook.go: X-GitHub-Event push or ping,
 *   X-Hub-Signature-256 checked when `webhook.secret` is set, repository.html_url matched against
 *   the Application's repoURL the way GetWebURLRegex does, ref against targetRevision,
 *   commits[].added/modified/removed against `argocd.argoproj.io/manifest-generate-paths`), which
 *   sets that annotation.
 * - Flux: `reconcile.fluxcd.io/requestedAt` on the GitRepository (it fetches; a new artifact
 *   makes the Kustomization apply it) or on the Kustomization (it re-applies the artifact it has:
 *   the source does not fetch), each recorded in status.lastHandledReconcileAt; and a
 *   notification-controller Receiver at /hook/<sha256(token+name+namespace)> of type generic,
 *   generic-hmac (X-Signature: sha256=<HMAC of the body>) or github (X-Hub-Signature-256,
 *   X-GitHub-Event in spec.events), which annotates the GitRepository.
 *
 * Why a double when the real agents run in the tests (ADR 0035): it fails on demand (`failWith`,
 * `rejectWith`, `hold`), polls on an injected clock, and serves thousands of clusters from one
 * process, none of which the real controllers do. What it copies is checked against them:
 * test/real-agents/flux.test.ts and test/real-agents/argocd.test.ts run the same lifecycle,
 * failure and nudges through real Flux and Argo CD, on the statuses they really write.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { parse } from "yaml";
import { git, remoteHead } from "./git-fixtures.js";
import { filesAt } from "./git-objects.js";
import type { KubeApiServer, KubeObject, ObjectRef } from "./kube-api-server.js";

export const APPLICATION = { group: "argoproj.io", version: "v1alpha1", kind: "Application", plural: "applications", namespaced: true };
export const KUSTOMIZATION = { group: "kustomize.toolkit.fluxcd.io", version: "v1", kind: "Kustomization", plural: "kustomizations", namespaced: true };
export const GIT_REPOSITORY = { group: "source.toolkit.fluxcd.io", version: "v1", kind: "GitRepository", plural: "gitrepositories", namespaced: true };

const REFRESH = "argocd.argoproj.io/refresh";
const MANIFEST_GENERATE_PATHS = "argocd.argoproj.io/manifest-generate-paths";
const REQUESTED_AT = "reconcile.fluxcd.io/requestedAt";
/** The GitRepository the Kustomization's sourceRef names. */
const SOURCE_NAME = "gitops";

/** Why the agent looked at Git. */
export type SyncTrigger = "poll" | "refresh" | "source-requested" | "kustomization-requested";

/** One request to the agent's webhook endpoint and its answer. */
export interface WebhookRequest {
  path: string;
  status: number;
  /** Why it was refused or ignored, when it was. */
  reason?: string;
}

const MANAGED_BY = "app.kubernetes.io/managed-by";

export interface SyncAgentOptions {
  kind: "argocd" | "flux";
  /** Name and namespace of the Application / Kustomization. */
  name: string;
  namespace: string;
  clusterId: string;
  /** The bare remote the manifests are read from. */
  remoteDir: string;
  branch?: string;
  /** The cluster the manifests are applied to; the sync object lives there too unless `syncServer`. */
  server: KubeApiServer;
  syncServer?: KubeApiServer;
  /** Flux revision format: `sha1` (main@sha1:<sha>, the default) or `slash` (main/<sha>). */
  fluxRevisionFormat?: "sha1" | "slash";
  now?: () => Date;
  /** The poll's wait (default setTimeout); must reject or resolve early when `signal` aborts. */
  delay?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Application spec.source.repoURL (default file://<remoteDir>): what a push event must name. */
  repoURL?: string;
  /** Argo CD's webhook.github.secret (argocd-secret); without it signatures are not checked. */
  webhookSecret?: string;
  /** The Flux Receiver (its Secret's `token`), served by `listen()` for kind flux. */
  receiver?: { type: "generic" | "generic-hmac" | "github"; token: string; name?: string; events?: string[] };
  /** Application metadata.annotations[argocd.argoproj.io/manifest-generate-paths]. */
  manifestGeneratePaths?: string;
  /** Argo CD's controller.resource.health.persist: the health of each resource in status.resources[] (default false, as since 3.0). */
  persistResourceHealth?: boolean;
}

export interface SyncAgent {
  /** Applies the cluster directory at `commit` (default: the branch tip); resolves with the commit. */
  sync(commit?: string): Promise<string>;
  /** Every sync from now on fails with `message` (nothing applied) until called with undefined. */
  failWith(message: string | undefined): void;
  /**
   * Argo CD: from now on the objects `reject` returns a message for are refused at apply time
   * (as an admission webhook would): the others are applied, the sync fails (undefined: none).
   */
  rejectWith(reject: ((object: KubeObject) => string | undefined) | undefined): void;
  /**
   * Argo CD: syncs from now on stop after writing their Running operation state until the
   * returned function is called (what the controller shows while a sync runs).
   */
  hold(): () => void;
  /** The commit applied last (undefined before the first successful sync). */
  readonly applied: string | undefined;
  /** Syncs the branch tip whenever it differs from what is applied, and re-assesses health, every `intervalMs`; honours the annotations meanwhile. */
  start(intervalMs?: number): void;
  /** Why each look at Git happened, in order (polls that found nothing new included). */
  readonly triggers: readonly SyncTrigger[];
  /**
   * Serves Argo CD's /api/webhook or the Flux Receiver on 127.0.0.1 (port 0); resolves with the
   * URL to POST to. Requests are handled only while the agent is started, like the controllers.
   */
  listen(): Promise<string>;
  readonly webhookRequests: readonly WebhookRequest[];
  stop(): Promise<void>;
}

const sleepFor = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });

const refOf = (o: KubeObject): ObjectRef => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name!, ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}) });
const keyOf = (r: ObjectRef) => `${r.apiVersion} ${r.kind} ${r.namespace ?? ""} ${r.name}`;
/** Seconds precision, as both controllers write their times. */
const rfc3339 = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, "Z");

/** JSON with sorted keys: what decides whether an apply changes anything. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** The part of an object an apply sets: everything but status and server-managed metadata. */
function desiredPart(o: KubeObject): string {
  const { status: _status, metadata, ...rest } = o;
  const { name, namespace, labels, annotations } = metadata;
  return canonical({ ...rest, metadata: { name, namespace, labels, annotations } });
}

function pruneDisabled(o: KubeObject): boolean {
  const a = o.metadata.annotations ?? {};
  return a["argocd.argoproj.io/sync-options"]?.includes("Prune=false") === true || a["kustomize.toolkit.fluxcd.io/prune"] === "disabled";
}

export function createSyncAgent(options: SyncAgentOptions): SyncAgent {
  const { server, remoteDir, clusterId } = options;
  const syncServer = options.syncServer ?? server;
  const branch = options.branch ?? "main";
  const now = options.now ?? (() => new Date());
  const syncRef: ObjectRef =
    options.kind === "argocd"
      ? { apiVersion: "argoproj.io/v1alpha1", kind: "Application", name: options.name, namespace: options.namespace }
      : { apiVersion: "kustomize.toolkit.fluxcd.io/v1", kind: "Kustomization", name: options.name, namespace: options.namespace };
  /** Kinds ever applied: where pruning looks. */
  const kinds = new Map<string, { apiVersion: string; kind: string }>();
  const delay = options.delay ?? sleepFor;
  const repoURL = options.repoURL ?? `file://${remoteDir}`;
  const sourceRef: ObjectRef = { apiVersion: "source.toolkit.fluxcd.io/v1", kind: "GitRepository", name: SOURCE_NAME, namespace: options.namespace };
  let applied: string | undefined;
  /** Flux: the revision the GitRepository fetched last (its artifact). */
  let artifact: string | undefined;
  let failure: string | undefined;
  let reject: ((object: KubeObject) => string | undefined) | undefined;
  let held: Promise<void> | undefined;
  /** Argo CD: the revision of the last sync attempt, when it failed (auto-sync does not try it again). */
  let failedAttempt: string | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const triggers: SyncTrigger[] = [];
  const webhookRequests: WebhookRequest[] = [];
  let httpServer: http.Server | undefined;
  /** Aborts the poll's wait: an annotation to honour, or stop(). */
  let wake: AbortController | undefined;
  let unsubscribe: (() => void) | undefined;

  function syncObject(): KubeObject {
    const existing = syncServer.store.get(syncRef);
    if (existing) return existing;
    const spec =
      options.kind === "argocd"
        ? {
            project: "default",
            source: { repoURL, targetRevision: branch, path: `clusters/${clusterId}`, directory: { recurse: true } },
            destination: { name: clusterId },
            syncPolicy: { automated: { prune: true }, retry: { limit: 0 } },
          }
        : { interval: "1m", path: `./clusters/${clusterId}`, prune: true, sourceRef: { kind: "GitRepository", name: SOURCE_NAME } };
    const annotations = options.manifestGeneratePaths === undefined ? {} : { annotations: { [MANIFEST_GENERATE_PATHS]: options.manifestGeneratePaths } };
    return syncServer.store.upsert({ apiVersion: syncRef.apiVersion, kind: syncRef.kind, metadata: { name: syncRef.name, namespace: syncRef.namespace, ...annotations }, spec });
  }

  /** Flux's GitRepository, when the server serves the kind. */
  function sourceObject(): KubeObject | undefined {
    let existing: KubeObject | undefined;
    try {
      existing = syncServer.store.get(sourceRef);
    } catch {
      return undefined; // GitRepository not registered on this server
    }
    if (existing) return existing;
    return syncServer.store.upsert({
      apiVersion: sourceRef.apiVersion,
      kind: sourceRef.kind,
      metadata: { name: SOURCE_NAME, namespace: sourceRef.namespace },
      spec: { interval: "1m", url: repoURL, ref: { branch } },
    });
  }

  const requestOf = (o: KubeObject | undefined) => o?.metadata.annotations?.[REQUESTED_AT];
  const handledOf = (o: KubeObject | undefined) => (o?.status as { lastHandledReconcileAt?: string } | undefined)?.lastHandledReconcileAt;

  /** What the controllers would act on now, besides the poll. */
  function requested(): SyncTrigger | undefined {
    if (options.kind === "argocd") return syncServer.store.get(syncRef)?.metadata.annotations?.[REFRESH] ? "refresh" : undefined;
    const source = sourceObject();
    if (source && requestOf(source) !== undefined && requestOf(source) !== handledOf(source)) return "source-requested";
    const ks = syncServer.store.get(syncRef);
    if (requestOf(ks) !== undefined && requestOf(ks) !== handledOf(ks)) return "kustomization-requested";
    return undefined;
  }

  /** The remote's branch tip, polled every few ms: no process per poll. */
  const tipOf = (): Promise<string> => remoteHead(remoteDir, branch);

  /** Flux source-controller: fetch, record the artifact (and the request handled). */
  async function fetchSource(handled: boolean): Promise<string> {
    const tip = await tipOf();
    artifact = tip;
    const source = sourceObject();
    if (source) {
      const revision = options.fluxRevisionFormat === "slash" ? `${branch}/${tip}` : `${branch}@sha1:${tip}`;
      const previous = (source.status ?? {}) as Record<string, unknown>;
      const status = { ...previous, artifact: { revision }, ...(handled ? { lastHandledReconcileAt: requestOf(source) } : {}) };
      syncServer.store.upsert({ ...source, status });
    }
    return tip;
  }

  function markHandled(ref: ObjectRef): void {
    const object = syncServer.store.get(ref);
    if (!object) return;
    syncServer.store.upsert({ ...object, status: { ...((object.status ?? {})), lastHandledReconcileAt: requestOf(object) } });
  }

  /** One look at Git, as the trigger says. */
  async function reconcile(trigger: SyncTrigger): Promise<void> {
    triggers.push(trigger);
    if (options.kind === "argocd") {
      const tip = await tipOf();
      if (tip === failedAttempt) {
        await compare(tip);
        refresh(tip, { type: "SyncError", message: `Failed last sync attempt to [${tip}]: ${operationMessage()}` });
      } else if (tip !== applied) await sync(tip);
      else await reassess();
      if (trigger === "refresh") {
        // The application controller removes the annotation once it refreshed.
        const object = syncObject();
        const annotations = { ...object.metadata.annotations };
        delete annotations[REFRESH];
        syncServer.store.upsert({ ...object, metadata: { ...object.metadata, annotations } });
      }
      return;
    }
    if (trigger === "kustomization-requested") {
      // Re-applies the artifact it has: the source does not fetch for this.
      await sync(artifact ?? (await fetchSource(false)));
      markHandled(syncRef);
      return;
    }
    const tip = await fetchSource(trigger === "source-requested");
    if (tip !== applied) await sync(tip);
  }

  /** Argo CD's health of a live object: acid.zalan.do/postgresql's health.lua; undefined for kinds without a check here. */
  function healthOf(o: KubeObject): string | undefined {
    if (o.apiVersion !== "acid.zalan.do/v1" || o.kind !== "postgresql") return undefined;
    const phase = (o.status as { PostgresClusterStatus?: string } | undefined)?.PostgresClusterStatus;
    if (phase === undefined) return "Progressing";
    if (phase === "Running") return "Healthy";
    return phase === "Creating" || phase === "Updating" ? "Progressing" : "Degraded";
  }

  async function desiredAt(commit: string): Promise<KubeObject[]> {
    const files = await filesAt(remoteDir, commit, `clusters/${clusterId}`);
    return [...files.values()].map((text) => parse(text) as KubeObject);
  }

  /** What the broker applied earlier and Git no longer has (auto-sync prunes it). */
  function prunable(desired: KubeObject[]): KubeObject[] {
    const wanted = new Set(desired.map((o) => keyOf(refOf(o))));
    const out: KubeObject[] = [];
    for (const { apiVersion, kind } of kinds.values()) {
      for (const live of server.store.list(apiVersion, kind)) {
        if (live.metadata.labels?.[MANAGED_BY] !== "gitops-broker" || pruneDisabled(live)) continue;
        if (!wanted.has(keyOf(refOf(live)))) out.push(live);
      }
    }
    return out;
  }

  const groupOf = (apiVersion: string) => (apiVersion.includes("/") ? apiVersion.slice(0, apiVersion.lastIndexOf("/")) : "");
  const versionOf = (apiVersion: string) => apiVersion.slice(apiVersion.lastIndexOf("/") + 1);
  const resourceOf = (o: KubeObject) => ({ group: groupOf(o.apiVersion), version: versionOf(o.apiVersion), kind: o.kind, namespace: o.metadata.namespace ?? "", name: o.metadata.name! });
  const WORSE = ["Healthy", "Suspended", "Progressing", "Missing", "Degraded", "Unknown"];

  /**
   * Argo CD's refresh: compares the live objects with `revision` and writes sync, resources,
   * health and the SyncError condition (only when something changed, as persistAppStatus does).
   */
  let lastCompared: { revision: string; desired: KubeObject[] } | undefined;
  async function compare(revision: string): Promise<void> {
    if (lastCompared?.revision !== revision) lastCompared = { revision, desired: await desiredAt(revision) };
  }
  function refresh(revision: string, condition?: { type: string; message: string }, afterOperation = false): void {
    if (options.kind !== "argocd" || lastCompared?.revision !== revision) return;
    const desired = lastCompared.desired;
    const resources: Array<Record<string, unknown>> = [];
    let appHealth = "Healthy";
    for (const object of desired) {
      kinds.set(`${object.apiVersion} ${object.kind}`, { apiVersion: object.apiVersion, kind: object.kind });
      const live = server.store.get(refOf(object));
      const synced = live !== undefined && desiredPart(live) === desiredPart(object);
      const health = live === undefined ? "Missing" : healthOf(live);
      resources.push({ ...resourceOf(object), status: synced ? "Synced" : "OutOfSync", ...(options.persistResourceHealth && health ? { health: { status: health } } : {}) });
      // Missing resources do not affect the application's health (OutOfSync says it).
      if (live !== undefined && health !== undefined && WORSE.indexOf(health) > WORSE.indexOf(appHealth)) appHealth = health;
    }
    const prune = prunable(desired);
    for (const live of prune) resources.push({ ...resourceOf(live), status: "OutOfSync", requiresPruning: true });
    resources.sort((a, b) => (`${String(a.group)}/${String(a.kind)}/${String(a.namespace)}/${String(a.name)}` < `${String(b.group)}/${String(b.kind)}/${String(b.namespace)}/${String(b.name)}` ? -1 : 1));
    const object = syncObject();
    const previous = (object.status ?? {}) as Record<string, unknown>;
    const status: Record<string, unknown> = {
      ...previous,
      sync: { status: resources.every((r) => r.status === "Synced") ? "Synced" : "OutOfSync", revision },
      health: { status: appHealth },
      resources,
      resourceHealthSource: options.persistResourceHealth ? "inline" : "appTree",
    };
    const others = ((previous.conditions ?? []) as Array<{ type: string }>).filter((c) => c.type !== "SyncError");
    const conditions = condition ? [...others, { ...condition, lastTransitionTime: rfc3339(now()) }] : others;
    if (conditions.length > 0) status.conditions = conditions;
    else delete status.conditions;
    const { reconciledAt: _r, ...before } = previous;
    const { reconciledAt: _n, ...after } = status;
    // The refresh a completed operation requests compares with the latest: reconciledAt moves.
    if (!afterOperation && canonical(before) === canonical(after) && previous.reconciledAt !== undefined) return;
    syncServer.store.upsert({ ...object, status: { ...status, reconciledAt: rfc3339(now()) } });
  }

  function operationMessage(): string {
    const state = (syncObject().status as { operationState?: { message?: string } } | undefined)?.operationState;
    return state?.message ?? "";
  }

  /** Argo CD: auto-sync sets the operation, the controller replaces operationState with a new Running one. */
  function startOperation(commit: string): { operation: Record<string, unknown>; startedAt: string } {
    const operation = { sync: { revision: commit, prune: true }, initiatedBy: { automated: true }, retry: { limit: 0 } };
    const startedAt = rfc3339(now());
    const object = syncObject();
    syncServer.store.upsert({ ...object, operation, status: { ...((object.status ?? {}) as Record<string, unknown>), operationState: { phase: "Running", operation, startedAt } } });
    return { operation, startedAt };
  }

  /** Argo CD: the sync context applies each object it can; results per resource, in order. */
  function applyArgo(desired: KubeObject[]): { results: Array<Record<string, unknown>>; failures: string[] } {
    const results: Array<Record<string, unknown>> = [];
    const failures: string[] = [];
    // Prune first; then create/update.
    for (const live of prunable(desired)) {
      server.store.delete(refOf(live));
      results.push({ ...resourceOf(live), status: "Pruned", message: "pruned", syncPhase: "Sync", hookPhase: "Succeeded" });
    }
    for (const object of desired) {
      kinds.set(`${object.apiVersion} ${object.kind}`, { apiVersion: object.apiVersion, kind: object.kind });
      const refused = reject?.(object);
      if (refused !== undefined) {
        failures.push(refused);
        results.push({ ...resourceOf(object), status: "SyncFailed", message: refused, syncPhase: "Sync", hookPhase: "Failed" });
        continue;
      }
      const current = server.store.get(refOf(object));
      const unchanged = current !== undefined && desiredPart(current) === desiredPart(object);
      if (!unchanged) server.store.upsert(current ? { ...object, ...(current.status === undefined ? {} : { status: current.status }) } : object);
      const verb = unchanged ? "unchanged" : current ? "configured" : "created";
      results.push({ ...resourceOf(object), status: "Synced", message: `${object.kind.toLowerCase()}/${object.metadata.name} ${verb}`, syncPhase: "Sync", hookPhase: "Running" });
    }
    return { results, failures };
  }

  async function syncArgo(target: string): Promise<void> {
    const { operation, startedAt } = startOperation(target);
    if (held) await held;
    const desired = await desiredAt(target);
    lastCompared = { revision: target, desired };
    let phase: string;
    let message: string;
    let resources: Array<Record<string, unknown>> = [];
    if (failure !== undefined) {
      [phase, message] = ["Failed", failure];
    } else {
      const { results, failures } = applyArgo(desired);
      resources = results;
      [phase, message] = failures.length > 0 ? ["Failed", `one or more objects failed to apply, reason: ${failures.join(",")}`] : ["Succeeded", "successfully synced (all tasks run)"];
    }
    const t = rfc3339(now());
    const object = syncObject();
    const previous = (object.status ?? {}) as Record<string, unknown>;
    const history = (previous.history ?? []) as Array<Record<string, unknown>>;
    const operationState = { phase, message, startedAt, finishedAt: t, operation, syncResult: { revision: target, resources } };
    const { operation: _done, ...rest } = object;
    syncServer.store.upsert({
      ...rest,
      status: {
        ...previous,
        operationState,
        ...(phase === "Succeeded" ? { history: [...history, { id: history.length, revision: target, deployedAt: t, deployStartedAt: startedAt }].slice(-10) } : {}),
      },
    });
    if (phase === "Succeeded") {
      applied = target;
      failedAttempt = undefined;
    } else {
      failedAttempt = target;
    }
    // A completed operation requests a refresh.
    refresh(target, undefined, true);
  }

  function writeFluxStatus(commit: string, error: string | undefined): void {
    const object = syncObject();
    const t = rfc3339(now());
    const previous = (object.status ?? {}) as Record<string, unknown>;
    const revision = options.fluxRevisionFormat === "slash" ? `${branch}/${commit}` : `${branch}@sha1:${commit}`;
    const ready = error
      ? { type: "Ready", status: "False", reason: "ReconciliationFailed", message: error, lastTransitionTime: t }
      : { type: "Ready", status: "True", reason: "ReconciliationSucceeded", message: `Applied revision: ${revision}`, lastTransitionTime: t };
    const status = {
      ...previous,
      observedGeneration: object.metadata.generation,
      lastAttemptedRevision: revision,
      ...(error ? {} : { lastAppliedRevision: revision }),
      conditions: [ready],
    };
    syncServer.store.upsert({ ...object, status });
  }

  async function apply(commit: string): Promise<void> {
    const desired = await desiredAt(commit);
    for (const object of desired) {
      kinds.set(`${object.apiVersion} ${object.kind}`, { apiVersion: object.apiVersion, kind: object.kind });
      const current = server.store.get(refOf(object));
      if (current && desiredPart(current) === desiredPart(object)) continue;
      server.store.upsert(current ? { ...object, ...(current.status === undefined ? {} : { status: current.status }) } : object);
    }
    for (const live of prunable(desired)) server.store.delete(refOf(live));
  }

  async function sync(commit?: string): Promise<string> {
    const target = commit ?? (await git(["rev-parse", `refs/heads/${branch}`], remoteDir)).trim();
    if (options.kind === "argocd") {
      await syncArgo(target);
      return target;
    }
    if (failure === undefined) {
      await apply(target);
      applied = target;
    }
    writeFluxStatus(target, failure);
    return target;
  }

  /** Argo CD re-assesses health on every reconciliation; only a change is written. */
  async function reassess(): Promise<void> {
    if (options.kind !== "argocd" || applied === undefined) return;
    const revision = lastCompared?.revision ?? applied;
    await compare(revision);
    refresh(revision);
  }

  /**
   * Polls every `intervalMs`; an annotation to honour ends the wait early, and the next poll is
   * `intervalMs` after that reconciliation (both controllers requeue after a reconcile).
   */
  async function loop(intervalMs: number): Promise<void> {
    let trigger: SyncTrigger = "poll";
    while (!stopped) {
      await reconcile(trigger);
      const pending = requested();
      if (pending !== undefined) {
        trigger = pending;
        continue;
      }
      if (stopped) return;
      wake = new AbortController();
      await delay(intervalMs, wake.signal).catch(() => undefined);
      const woken = wake.signal.aborted;
      wake = undefined;
      trigger = (woken ? requested() : undefined) ?? "poll";
      if (woken && trigger === "poll") {
        // Woken for nothing to do (stop(), or an annotation already handled): wait a full interval again.
        if (stopped) return;
        continue;
      }
    }
  }

  // The Application / Kustomization (and its GitRepository) exist before the first sync (an ApplicationSet, a bootstrap).
  syncObject();
  if (options.kind === "flux") sourceObject();

  /** The controllers' informers: an annotation change wakes the loop (never handled inside the store's callback). */
  function watchAnnotations(): () => void {
    return syncServer.store.subscribe((_type, object) => {
      const mine = (object.kind === syncRef.kind && object.metadata.name === syncRef.name) || (object.kind === sourceRef.kind && object.metadata.name === sourceRef.name);
      if (mine && object.metadata.namespace === syncRef.namespace && requested() !== undefined) wake?.abort();
    });
  }

  async function handleWebhook(req: http.IncomingMessage, body: Buffer): Promise<{ status: number; reason?: string }> {
    if (req.method !== "POST") return { status: 405, reason: "method not allowed" };
    if (running === undefined) return { status: 503, reason: "controller not running" };
    const path = (req.url ?? "").split("?")[0]!;
    return options.kind === "argocd" ? argocdWebhook(req, path, body) : fluxReceiver(req, path, body);
  }

  /** Argo CD's /api/webhook, GitHub branch (go-playground/webhooks github.Parse, then HandleEvent). */
  function argocdWebhook(req: http.IncomingMessage, path: string, body: Buffer): { status: number; reason?: string } {
    if (path !== "/api/webhook") return { status: 404, reason: "not found" };
    const event = header(req, "x-github-event");
    if (event === undefined) return { status: 400, reason: "Unknown webhook event" };
    if (event !== "push" && event !== "ping") return { status: 400, reason: `event not defined to be parsed: ${event}` };
    if (options.webhookSecret !== undefined) {
      const signature = header(req, "x-hub-signature-256");
      if (signature === undefined) return { status: 400, reason: "missing X-Hub-Signature-256 Header" };
      if (!hmacMatches(options.webhookSecret, body, signature, "sha256")) return { status: 400, reason: "HMAC verification failed" };
    }
    let payload: GithubPush;
    try {
      payload = JSON.parse(body.toString("utf8")) as GithubPush;
    } catch {
      return { status: 400, reason: "error parsing payload" };
    }
    if (event === "ping") return { status: 200, reason: "ping" };
    const webURL = payload.repository?.html_url;
    if (typeof webURL !== "string") return { status: 200, reason: "ignored: no repository.html_url" };
    const revision = parseRevision(payload.ref ?? "");
    const touchedHead = payload.repository?.default_branch === revision;
    const changed = (payload.commits ?? []).flatMap((c) => [...(c.added ?? []), ...(c.modified ?? []), ...(c.removed ?? [])]);
    const app = syncObject();
    const source = (app.spec as { source: { repoURL: string; targetRevision?: string; path: string } }).source;
    if (!webUrlRegex(webURL)?.test(source.repoURL)) return { status: 200, reason: `ignored: ${source.repoURL} is not ${webURL}` };
    if (!revisionHasChanged(source.targetRevision ?? "", revision, touchedHead)) return { status: 200, reason: `ignored: revision ${revision}` };
    if (!filesHaveChanged(refreshPaths(app, source.path), changed)) return { status: 200, reason: "ignored: no changed file under the refresh paths" };
    // argo.RefreshApp: a merge patch of the refresh annotation.
    syncServer.store.upsert({ ...app, metadata: { ...app.metadata, annotations: { ...app.metadata.annotations, [REFRESH]: "normal" } } });
    return { status: 200 };
  }

  /** notification-controller's receiver handler: find the Receiver by path, validate by type, annotate its resources. */
  function fluxReceiver(req: http.IncomingMessage, path: string, body: Buffer): { status: number; reason?: string } {
    const receiver = options.receiver;
    if (receiver === undefined || path !== receiverPath()) return { status: 404, reason: "no receiver" };
    const refuse = (reason: string) => ({ status: 400, reason });
    switch (receiver.type) {
      case "generic":
        break;
      case "generic-hmac": {
        const signature = header(req, "x-signature");
        if (signature === undefined || !validSignature(receiver.token, body, signature)) return refuse("unable to validate HMAC signature");
        break;
      }
      case "github": {
        const signature = header(req, "x-hub-signature-256") ?? header(req, "x-hub-signature");
        if (signature === undefined || !validSignature(receiver.token, body, signature)) return refuse("the GitHub signature header is invalid");
        const event = header(req, "x-github-event") ?? "";
        if (receiver.events && receiver.events.length > 0 && !receiver.events.some((e) => e.toLowerCase() === event.toLowerCase())) {
          return refuse(`the GitHub event '${event}' is not authorised`);
        }
        try {
          JSON.parse(body.toString("utf8"));
        } catch {
          return refuse("unable to parse GitHub payload");
        }
        break;
      }
    }
    const source = sourceObject();
    if (!source) return refuse("unable to read GitRepository");
    const at = new Date().toISOString();
    syncServer.store.upsert({ ...source, metadata: { ...source.metadata, annotations: { ...source.metadata.annotations, [REQUESTED_AT]: at } } });
    return { status: 200 };
  }

  function receiverPath(): string {
    const r = options.receiver!;
    return `/hook/${createHash("sha256").update(`${r.token}${r.name ?? "gitops-broker"}${options.namespace}`).digest("hex")}`;
  }

  return {
    sync,
    failWith(message) {
      failure = message;
    },
    rejectWith(predicate) {
      reject = predicate;
    },
    hold() {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      held = gate;
      return () => {
        if (held === gate) held = undefined;
        release();
      };
    },
    get applied() {
      return applied;
    },
    start(intervalMs = 25) {
      stopped = false;
      unsubscribe ??= watchAnnotations();
      running ??= loop(intervalMs).finally(() => (running = undefined));
    },
    triggers,
    webhookRequests,
    async listen() {
      if (httpServer === undefined) {
        httpServer = http.createServer((req, res) => {
          const chunks: Buffer[] = [];
          req.on("data", (c: Buffer) => chunks.push(c));
          req.on("end", () => {
            void handleWebhook(req, Buffer.concat(chunks)).then(({ status, reason }) => {
              webhookRequests.push({ path: (req.url ?? "").split("?")[0]!, status, ...(reason ? { reason } : {}) });
              res.writeHead(status, { "content-type": "text/plain" }).end(status === 200 ? "" : (reason ?? ""));
            });
          });
        });
        httpServer.listen(0, "127.0.0.1");
        await once(httpServer, "listening");
      }
      const base = `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}`;
      return options.kind === "argocd" ? `${base}/api/webhook` : `${base}${options.receiver ? receiverPath() : "/hook/none"}`;
    },
    async stop() {
      stopped = true;
      wake?.abort();
      await running;
      unsubscribe?.();
      unsubscribe = undefined;
      if (httpServer) {
        const closing = new Promise((resolve) => httpServer!.close(resolve));
        httpServer.closeAllConnections();
        await closing;
        httpServer = undefined;
      }
    },
  };
}

interface GithubPush {
  ref?: string;
  repository?: { html_url?: string; default_branch?: string };
  commits?: Array<{ added?: string[]; modified?: string[]; removed?: string[] }>;
}

function header(req: http.IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function hmacMatches(secret: string, body: Buffer, signature: string, algorithm: "sha1" | "sha256" | "sha512"): boolean {
  const expected = `${algorithm}=${createHmac(algorithm, secret).update(body).digest("hex")}`;
  return expected.length === signature.length && timingSafeEqual(Buffer.from(expected), Buffer.from(signature));
}

/** go-github ValidateSignature: `sha1=`, `sha256=` or `sha512=` and the hex HMAC of the body. */
function validSignature(secret: string, body: Buffer, signature: string): boolean {
  const algorithm = signature.split("=", 1)[0];
  return (algorithm === "sha1" || algorithm === "sha256" || algorithm === "sha512") && hmacMatches(secret, body, signature, algorithm);
}

/** webhook.ParseRevision: the last part of `refs/heads/<name>` split in three. */
function parseRevision(ref: string): string {
  const parts = ref.split("/");
  return parts.length <= 3 ? parts[parts.length - 1]! : parts.slice(2).join("/");
}

/** GetWebURLRegex: protocol, user, ssh. subdomain and port optional, `:` or `/`, the path, `.git` optional. */
function webUrlRegex(webURL: string): RegExp | undefined {
  let url: URL;
  try {
    url = new URL(webURL);
  } catch {
    return undefined;
  }
  const quote = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const user = "[\\w\\.][\\w\\.-]{0,30}[\\w\\.\\$-]?";
  return new RegExp(`^((https?|ssh)://)?(${user}@)?((alt)?ssh\\.)?${quote(url.hostname)}(:\\d+)?[:/]${quote(url.pathname.slice(1))}(\\.git)?$`, "i");
}

/** sourceRevisionHasChanged */
function revisionHasChanged(targetRevision: string, revision: string, touchedHead: boolean): boolean {
  const target = parseRevision(targetRevision);
  if (target === "HEAD" || target === "") return touchedHead;
  if (targetRevision.startsWith("refs/heads/") || targetRevision.startsWith("refs/tags/")) return revision === target;
  return targetRevision === revision;
}

/** GetAppRefreshPaths: `;`-separated; absolute from the repository root, else under the source path. */
function refreshPaths(app: KubeObject, sourcePath: string): string[] {
  const value = app.metadata.annotations?.[MANIFEST_GENERATE_PATHS];
  if (!value) return [];
  return value.split(";").filter((item) => item !== "").map((item) => {
    if (item.startsWith("/")) return item.slice(1);
    const joined = `${sourcePath}/${item}`.split("/").filter((p) => p !== "" && p !== ".");
    const out: string[] = [];
    for (const part of joined) {
      if (part === "..") out.pop();
      else out.push(part);
    }
    return out.join("/");
  });
}

/** AppFilesHaveChanged (without its glob matching): no changed files or no refresh paths means refresh. */
function filesHaveChanged(paths: string[], changed: string[]): boolean {
  if (changed.length === 0 || paths.length === 0) return true;
  return changed.some((f) => paths.some((p) => f === p || f.startsWith(`${p}/`) || p === ""));
}
