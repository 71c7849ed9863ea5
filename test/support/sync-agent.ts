/**
 * A sync agent double playing Argo CD (an Application with automated sync and prune) or Flux (a
 * Kustomization with prune) for one cluster directory: it applies `clusters/<id>/` at a commit
 * of the bare remote to a test Kubernetes API server, prunes the broker's objects that left Git,
 * and writes the sync object's status the way the real controllers do:
 *
 * - Argo CD: status.sync {status, revision}, status.health.status (Progressing until every
 *   applied postgresql is Running, else Healthy), status.reconciledAt, status.operationState
 *   {phase, message, startedAt, finishedAt, operation.sync.revision, syncResult.revision},
 *   status.history (the last ten successful deployments).
 * - Flux: status.lastAppliedRevision (`main@sha1:<sha>`, or `main/<sha>` as before Flux 2.1),
 *   lastAttemptedRevision, observedGeneration, and the Ready condition.
 *
 * It works on the server's store directly (as a controller next to the API server would), so the
 * API requests the server records are the broker's alone.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { parse } from "yaml";
import { git } from "./git-fixtures.js";
import { filesAt } from "./git-objects.js";
import type { KubeApiServer, KubeObject, ObjectRef } from "./kube-api-server.js";

export const APPLICATION = { group: "argoproj.io", version: "v1alpha1", kind: "Application", plural: "applications", namespaced: true };
export const KUSTOMIZATION = { group: "kustomize.toolkit.fluxcd.io", version: "v1", kind: "Kustomization", plural: "kustomizations", namespaced: true };

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
}

export interface SyncAgent {
  /** Applies the cluster directory at `commit` (default: the branch tip); resolves with the commit. */
  sync(commit?: string): Promise<string>;
  /** Every sync from now on fails with `message` (nothing applied) until called with undefined. */
  failWith(message: string | undefined): void;
  /** The commit applied last (undefined before the first successful sync). */
  readonly applied: string | undefined;
  /** Syncs the branch tip whenever it differs from what is applied, and re-assesses health, every `intervalMs`. */
  start(intervalMs?: number): void;
  stop(): Promise<void>;
}

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
  let applied: string | undefined;
  let failure: string | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  function syncObject(): KubeObject {
    const existing = syncServer.store.get(syncRef);
    if (existing) return existing;
    const spec =
      options.kind === "argocd"
        ? {
            project: "default",
            source: { repoURL: `file://${remoteDir}`, targetRevision: branch, path: `clusters/${clusterId}`, directory: { recurse: true } },
            destination: { name: clusterId },
            syncPolicy: { automated: { prune: true } },
          }
        : { interval: "1m", path: `./clusters/${clusterId}`, prune: true, sourceRef: { kind: "GitRepository", name: "gitops" } };
    return syncServer.store.upsert({ apiVersion: syncRef.apiVersion, kind: syncRef.kind, metadata: { name: syncRef.name, namespace: syncRef.namespace }, spec });
  }

  function health(): string {
    const postgresqls = kinds.has("acid.zalan.do/v1 postgresql") ? server.store.list("acid.zalan.do/v1", "postgresql") : [];
    const running = (o: KubeObject) => (o.status as { PostgresClusterStatus?: string } | undefined)?.PostgresClusterStatus === "Running";
    return postgresqls.filter((o) => o.metadata.labels?.[MANAGED_BY] === "gitops-broker").every(running) ? "Healthy" : "Progressing";
  }

  function writeStatus(commit: string, error: string | undefined): void {
    const object = syncObject();
    const t = rfc3339(now());
    const previous = (object.status ?? {}) as Record<string, unknown>;
    let status: Record<string, unknown>;
    if (options.kind === "argocd") {
      const operationState = {
        phase: error ? "Failed" : "Succeeded",
        message: error ?? "successfully synced (all tasks run)",
        startedAt: t,
        finishedAt: t,
        operation: { sync: { revision: commit } },
        syncResult: { revision: commit },
      };
      const history = (previous.history ?? []) as Array<Record<string, unknown>>;
      status = error
        ? { ...previous, sync: { status: "OutOfSync", revision: commit }, reconciledAt: t, operationState }
        : {
            sync: { status: "Synced", revision: commit },
            health: { status: health() },
            reconciledAt: t,
            operationState,
            history: [...history, { id: history.length, revision: commit, deployedAt: t }].slice(-10),
          };
    } else {
      const revision = options.fluxRevisionFormat === "slash" ? `${branch}/${commit}` : `${branch}@sha1:${commit}`;
      const ready = error
        ? { type: "Ready", status: "False", reason: "ReconciliationFailed", message: error, lastTransitionTime: t }
        : { type: "Ready", status: "True", reason: "ReconciliationSucceeded", message: `Applied revision: ${revision}`, lastTransitionTime: t };
      status = {
        ...previous,
        observedGeneration: object.metadata.generation,
        lastAttemptedRevision: revision,
        ...(error ? {} : { lastAppliedRevision: revision }),
        conditions: [ready],
      };
    }
    syncServer.store.upsert({ ...object, status });
  }

  async function apply(commit: string): Promise<void> {
    const files = await filesAt(remoteDir, commit, `clusters/${clusterId}`);
    const desired = [...files.values()].map((text) => parse(text) as KubeObject);
    const wanted = new Set(desired.map((o) => keyOf(refOf(o))));
    for (const object of desired) {
      kinds.set(`${object.apiVersion} ${object.kind}`, { apiVersion: object.apiVersion, kind: object.kind });
      const current = server.store.get(refOf(object));
      if (current && desiredPart(current) === desiredPart(object)) continue;
      server.store.upsert(current ? { ...object, ...(current.status === undefined ? {} : { status: current.status }) } : object);
    }
    for (const { apiVersion, kind } of kinds.values()) {
      for (const live of server.store.list(apiVersion, kind)) {
        if (live.metadata.labels?.[MANAGED_BY] !== "gitops-broker" || pruneDisabled(live)) continue;
        if (!wanted.has(keyOf(refOf(live)))) server.store.delete(refOf(live));
      }
    }
  }

  async function sync(commit?: string): Promise<string> {
    const target = commit ?? (await git(["rev-parse", `refs/heads/${branch}`], remoteDir)).trim();
    if (failure === undefined) {
      await apply(target);
      applied = target;
    }
    writeStatus(target, failure);
    return target;
  }

  /** Argo CD re-assesses health on every reconciliation; only a change is written. */
  function assessHealth(): void {
    if (options.kind !== "argocd" || applied === undefined) return;
    const object = syncObject();
    const status = (object.status ?? {}) as { health?: { status?: string } };
    const current = health();
    if (status.health?.status === current) return;
    syncServer.store.upsert({ ...object, status: { ...status, health: { status: current }, reconciledAt: rfc3339(now()) } });
  }

  async function loop(intervalMs: number): Promise<void> {
    while (!stopped) {
      const tip = (await git(["rev-parse", `refs/heads/${branch}`], remoteDir)).trim();
      if (tip !== applied) await sync(tip);
      else assessHealth();
      await sleep(intervalMs);
    }
  }

  // The Application / Kustomization exists before its first sync (an ApplicationSet, a bootstrap).
  syncObject();
  return {
    sync,
    failWith(message) {
      failure = message;
    },
    get applied() {
      return applied;
    },
    start(intervalMs = 25) {
      stopped = false;
      running ??= loop(intervalMs).finally(() => (running = undefined));
    },
    async stop() {
      stopped = true;
      await running;
    },
  };
}
