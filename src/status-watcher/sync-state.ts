import type { KubernetesObject } from "@kubernetes/client-node";
import type { SyncRef } from "../catalog/index.js";

/**
 * What the Argo CD Application or Flux Kustomization of a cluster says about delivery: which
 * commit is applied, whether the last attempt failed, and whether its health can be trusted yet.
 */
export interface SyncObservation {
  /** "Argo CD application east" / "Flux Kustomization west": for descriptions. */
  subject: string;
  /** The commit whose `clusters/<id>/` is applied on the cluster; undefined before the first sync. */
  appliedRevision?: string;
  /** Why the last sync failed (Argo CD phase Failed/Error or an *Error condition; Flux Ready=False): its message. */
  error?: string;
  /** Why the applied state is not settled yet (a sync running, health not re-assessed since it). */
  settling?: string;
  /** Argo CD health Healthy; Flux Ready=True. */
  healthy: boolean;
  /** The health as reported, for descriptions ("health Progressing: ..."). */
  health?: string;
  /**
   * Flux with `wait: true` / health checks: the revision whose objects were applied but whose
   * health check failed (lastAttemptedRevision with reason HealthCheckFailed). Flux does not
   * advance lastAppliedRevision then; the broker judges each instance by its own objects.
   */
  appliedUnhealthy?: string;
  /**
   * Argo CD: the sync status of each resource against `revision` (status.resources[] of the last
   * comparison, at status.sync.revision), and its health when Argo CD persists it in the
   * Application (`resourceHealthSource` inline; since 3.0 the default keeps it in the app tree).
   * A sync that failed on one resource still applied the others: Argo CD says which.
   */
  resources?: ResourceStates;
}

export interface ResourceStates {
  revision: string;
  /** Keys (`resourceKey`) of the resources whose live state matches `revision`. */
  synced: ReadonlySet<string>;
  /** Health by key; undefined when Argo CD does not persist it in the Application. */
  health?: ReadonlyMap<string, string>;
}

/** `group/kind/namespace/name` ("" for the core group and cluster-scoped objects). */
export function resourceKey(ref: { apiVersion?: string; group?: string; kind?: string; namespace?: string; name?: string }): string {
  const group = ref.group ?? (ref.apiVersion?.includes("/") ? ref.apiVersion.slice(0, ref.apiVersion.lastIndexOf("/")) : "");
  return `${group}/${ref.kind ?? ""}/${ref.namespace ?? ""}/${ref.name ?? ""}`;
}

export const SYNC_RESOURCES = {
  argocd: { apiVersion: "argoproj.io/v1alpha1", plural: "applications" },
  flux: { apiVersion: "kustomize.toolkit.fluxcd.io/v1", plural: "kustomizations" },
} as const;

export function syncSubject(ref: SyncRef): string {
  return ref.kind === "argocd" ? `Argo CD application ${ref.name}` : `Flux Kustomization ${ref.name}`;
}

/** The collection of the sync object (watched in its namespace). */
export function syncCollectionPath(ref: SyncRef): string {
  const { apiVersion, plural } = SYNC_RESOURCES[ref.kind];
  return `/apis/${apiVersion}/namespaces/${ref.namespace}/${plural}`;
}

/** `previous`: the observation of the sync object before this change (a Flux failure outlives Ready=Unknown). */
export function observeSync(ref: SyncRef, object: KubernetesObject, previous?: SyncObservation): SyncObservation {
  return ref.kind === "argocd" ? observeArgoCd(syncSubject(ref), object, previous) : observeFlux(syncSubject(ref), object, previous);
}

type Loose = Record<string, unknown>;
const field = (value: unknown, key: string): unknown => (typeof value === "object" && value !== null ? (value as Loose)[key] : undefined);
const text = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined);
const SHA = /^[0-9a-f]{40}$/;

function observeArgoCd(subject: string, app: KubernetesObject, previous: SyncObservation | undefined): SyncObservation {
  const status = field(app, "status");
  const sync = field(status, "sync");
  const op = field(status, "operationState");
  const phase = text(field(op, "phase"));
  const healthStatus = text(field(field(status, "health"), "status"));
  const observation: SyncObservation = { subject, healthy: healthStatus === "Healthy" };
  if (healthStatus) observation.health = withMessage(`health ${healthStatus}`, field(field(status, "health"), "message"));

  // Synced: the live state matches sync.revision. Otherwise the last successful sync says what
  // was applied: operationState when it succeeded, else the newest entry of the deploy history.
  const synced = text(field(sync, "status")) === "Synced" ? text(field(sync, "revision")) : undefined;
  const history = field(status, "history");
  const deployed = Array.isArray(history) ? text(field(history[history.length - 1], "revision")) : undefined;
  const applied = synced ?? (phase === "Succeeded" ? text(field(field(op, "syncResult"), "revision")) : deployed);
  if (applied !== undefined && SHA.test(applied)) observation.appliedRevision = applied;

  const finishedAt = Date.parse(text(field(op, "finishedAt")) ?? "");
  // The application controller keeps a failed attempt that will be retried as Running with its
  // finishedAt set and the reason in the message ("<reason>. Retrying attempt #1 at 3:04PM.").
  const retrying = phase === "Running" && Number.isFinite(finishedAt);
  if (phase === "Failed" || phase === "Error" || retrying) {
    observation.error = text(field(op, "message")) ?? `sync phase ${phase}`;
  } else {
    const conditions = field(status, "conditions");
    const failing = Array.isArray(conditions) ? (conditions as unknown[]).find((c) => /Error$/.test(text(field(c, "type")) ?? "")) : undefined;
    if (failing !== undefined) observation.error = withMessage(String(field(failing, "type")), field(failing, "message"));
    // A new operation (the next commit, a retry starting) replaces operationState whole: Running,
    // no message, no result. The failure it follows stands until a sync succeeds or applies.
    else if ((phase === "Running" || phase === "Terminating") && previous?.error !== undefined && previous.appliedRevision === observation.appliedRevision) {
      observation.error = previous.error;
    }
  }

  const resources = resourceStates(status, text(field(sync, "revision")));
  if (resources !== undefined) observation.resources = resources;

  const reconciledAt = Date.parse(text(field(status, "reconciledAt")) ?? "");
  // Between a failed attempt and its retry (up to the retry's maxDuration) no sync runs: the
  // attempt applied what it could, and the comparisons after it, which each applied object
  // triggers, say what in status.resources[] (an object is Synced there only once compared after
  // its apply). reconciledAt does not move meanwhile: only a full refresh sets it, and Argo CD
  // asks for one when the operation completes, not between its attempts.
  if ((phase === "Running" && !retrying) || phase === "Terminating") {
    observation.settling = `a sync is ${phase.toLowerCase()}`;
  } else if (!retrying && Number.isFinite(finishedAt) && (!Number.isFinite(reconciledAt) || reconciledAt < finishedAt)) {
    // The health was assessed before the last sync finished: it says nothing about what it applied.
    observation.settling = `health not assessed since the sync finished at ${text(field(op, "finishedAt"))}`;
  }
  return observation;
}

/** status.resources[] against status.sync.revision (undefined without a commit to compare with). */
function resourceStates(status: unknown, revision: string | undefined): ResourceStates | undefined {
  const list = field(status, "resources");
  if (revision === undefined || !SHA.test(revision) || !Array.isArray(list)) return undefined;
  const persisted = text(field(status, "resourceHealthSource")) !== "appTree";
  const synced = new Set<string>();
  const health = new Map<string, string>();
  for (const r of list as unknown[]) {
    const key = resourceKey({ group: text(field(r, "group")) ?? "", kind: text(field(r, "kind")), namespace: text(field(r, "namespace")), name: text(field(r, "name")) });
    if (text(field(r, "status")) === "Synced") synced.add(key);
    const h = text(field(field(r, "health"), "status"));
    if (h !== undefined) health.set(key, h);
  }
  return persisted ? { revision, synced, health } : { revision, synced };
}

function observeFlux(subject: string, kustomization: KubernetesObject, previous: SyncObservation | undefined): SyncObservation {
  const status = field(kustomization, "status");
  const conditions = field(status, "conditions");
  const ready = Array.isArray(conditions) ? (conditions as unknown[]).find((c) => field(c, "type") === "Ready") : undefined;
  const readyStatus = text(field(ready, "status"));
  const reason = withMessage(text(field(ready, "reason")) ?? "", field(ready, "message"));
  const observation: SyncObservation = { subject, healthy: readyStatus === "True" };
  if (readyStatus !== undefined) observation.health = `Ready ${readyStatus}${reason ? `: ${reason}` : ""}`;

  // From an ArtifactGenerator's artifact (Flux 2.7, examples/flux) the revision is a digest of the
  // content; the commit it was cut from is the origin revision (with `originRevision` set).
  const applied = parseFluxRevision(text(field(status, "lastAppliedRevision"))) ?? parseFluxRevision(text(field(status, "lastAppliedOriginRevision")));
  if (applied !== undefined) observation.appliedRevision = applied;
  // kustomize-controller applies, then runs the health checks (spec.wait, spec.healthChecks); when
  // they fail it keeps lastAppliedRevision and reports HealthCheckFailed, though the attempted
  // revision's objects are on the cluster: one failing instance must not hold back the others.
  // A reconciliation starting (Ready=Unknown) on the same attempt does not undo the apply.
  const attempted = parseFluxRevision(text(field(status, "lastAttemptedRevision")));
  const reasonCode = text(field(ready, "reason"));
  if (attempted !== undefined && attempted !== applied) {
    if (readyStatus === "False" && reasonCode === "HealthCheckFailed") observation.appliedUnhealthy = attempted;
    else if (readyStatus === "Unknown" && previous?.appliedUnhealthy === attempted) observation.appliedUnhealthy = attempted;
    if (observation.appliedUnhealthy !== undefined) observation.appliedRevision = observation.appliedUnhealthy;
  }
  if (readyStatus === "False") observation.error = reason || "Ready=False";
  // kustomize-controller sets Ready=Unknown (Progressing) at the start of every reconciliation,
  // e.g. for each new commit: the failure it reported stands until one succeeds or applies.
  else if (readyStatus === "Unknown" && previous?.error !== undefined && previous.appliedRevision === observation.appliedRevision) {
    observation.error = previous.error;
  }

  const generation = kustomization.metadata?.generation;
  const observed = field(status, "observedGeneration");
  if (typeof generation === "number" && typeof observed === "number" && observed < generation) {
    observation.settling = `generation ${generation} not reconciled yet (observed ${observed})`;
  } else if (readyStatus === "Unknown") {
    observation.settling = `reconciling${reason ? ` (${reason})` : ""}`;
  }
  return observation;
}

/**
 * The commit of a Flux revision: `main@sha1:<sha>` (Flux 2.1+), `main/<sha>` (before),
 * `sha1:<sha>` or a bare sha. Undefined for anything else (e.g. an OCI digest).
 */
export function parseFluxRevision(revision: string | undefined): string | undefined {
  return revision === undefined ? undefined : /(?:^|[@:/])([0-9a-f]{40})$/.exec(revision)?.[1];
}

function withMessage(prefix: string, message: unknown): string {
  const m = text(message);
  if (m === undefined) return prefix;
  return prefix === "" ? m : `${prefix}: ${m}`;
}
