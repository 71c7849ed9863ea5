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
  return ref.kind === "argocd" ? observeArgoCd(syncSubject(ref), object) : observeFlux(syncSubject(ref), object, previous);
}

type Loose = Record<string, unknown>;
const field = (value: unknown, key: string): unknown => (typeof value === "object" && value !== null ? (value as Loose)[key] : undefined);
const text = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined);
const SHA = /^[0-9a-f]{40}$/;

function observeArgoCd(subject: string, app: KubernetesObject): SyncObservation {
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

  if (phase === "Failed" || phase === "Error") {
    observation.error = text(field(op, "message")) ?? `sync phase ${phase}`;
  } else {
    const conditions = field(status, "conditions");
    const failing = Array.isArray(conditions) ? (conditions as unknown[]).find((c) => /Error$/.test(text(field(c, "type")) ?? "")) : undefined;
    if (failing !== undefined) observation.error = withMessage(String(field(failing, "type")), field(failing, "message"));
  }

  const finishedAt = Date.parse(text(field(op, "finishedAt")) ?? "");
  const reconciledAt = Date.parse(text(field(status, "reconciledAt")) ?? "");
  if (phase === "Running" || phase === "Terminating") {
    observation.settling = `a sync is ${phase.toLowerCase()}`;
  } else if (Number.isFinite(finishedAt) && (!Number.isFinite(reconciledAt) || reconciledAt < finishedAt)) {
    // The health was assessed before the last sync finished: it says nothing about what it applied.
    observation.settling = `health not assessed since the sync finished at ${text(field(op, "finishedAt"))}`;
  }
  return observation;
}

function observeFlux(subject: string, kustomization: KubernetesObject, previous: SyncObservation | undefined): SyncObservation {
  const status = field(kustomization, "status");
  const conditions = field(status, "conditions");
  const ready = Array.isArray(conditions) ? (conditions as unknown[]).find((c) => field(c, "type") === "Ready") : undefined;
  const readyStatus = text(field(ready, "status"));
  const reason = withMessage(text(field(ready, "reason")) ?? "", field(ready, "message"));
  const observation: SyncObservation = { subject, healthy: readyStatus === "True" };
  if (readyStatus !== undefined) observation.health = `Ready ${readyStatus}${reason ? `: ${reason}` : ""}`;

  const applied = parseFluxRevision(text(field(status, "lastAppliedRevision")));
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
