import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { SyncRef } from "../catalog/index.js";
import { observeSync, parseFluxRevision } from "./sync-state.js";

const SHA_A = "a".repeat(40);
const SHA_B = "b".repeat(40);
const ARGO: SyncRef = { kind: "argocd", name: "east", namespace: "argocd" };
const FLUX: SyncRef = { kind: "flux", name: "west", namespace: "flux-system" };

const app = (status: Record<string, unknown>): KubernetesObject =>
  ({ apiVersion: "argoproj.io/v1alpha1", kind: "Application", metadata: { name: "east", namespace: "argocd" }, status }) as KubernetesObject;
const kustomization = (status: Record<string, unknown>, generation = 1): KubernetesObject =>
  ({ apiVersion: "kustomize.toolkit.fluxcd.io/v1", kind: "Kustomization", metadata: { name: "west", namespace: "flux-system", generation }, status }) as KubernetesObject;
const succeeded = (revision: string, finishedAt = "2026-01-01T00:00:10Z") => ({
  phase: "Succeeded",
  finishedAt,
  message: "successfully synced (all tasks run)",
  syncResult: { revision },
});

describe("Argo CD Application", () => {
  it("reads the applied revision and health of a synced application", () => {
    const observed = observeSync(ARGO, app({
      sync: { status: "Synced", revision: SHA_A },
      health: { status: "Healthy" },
      reconciledAt: "2026-01-01T00:00:10Z",
      operationState: succeeded(SHA_A),
    }));
    expect(observed).toEqual({ subject: "Argo CD application east", appliedRevision: SHA_A, healthy: true, health: "health Healthy" });
  });

  it("out of sync: the last successful sync says what is applied", () => {
    const observed = observeSync(ARGO, app({ sync: { status: "OutOfSync", revision: SHA_B }, reconciledAt: "2026-01-01T00:00:20Z", operationState: succeeded(SHA_A) }));
    expect(observed.appliedRevision).toBe(SHA_A);
  });

  it("reports a failed sync; what is applied is the newest deployment of the history", () => {
    const failed = {
      sync: { status: "OutOfSync", revision: SHA_B },
      reconciledAt: "2026-01-01T00:00:20Z",
      operationState: { phase: "Failed", finishedAt: "2026-01-01T00:00:20Z", message: "one or more objects failed to apply", syncResult: { revision: SHA_B } },
    };
    const observed = observeSync(ARGO, app(failed));
    expect(observed).toMatchObject({ error: "one or more objects failed to apply" });
    expect(observed.appliedRevision).toBeUndefined();
    expect(observeSync(ARGO, app({ ...failed, history: [{ id: 0, revision: SHA_A, deployedAt: "2026-01-01T00:00:10Z" }] })).appliedRevision).toBe(SHA_A);
  });

  it("reports an error condition (e.g. ComparisonError)", () => {
    const observed = observeSync(ARGO, app({ conditions: [{ type: "ComparisonError", message: "repository not accessible" }] }));
    expect(observed.error).toBe("ComparisonError: repository not accessible");
  });

  it("guards against stale health: reconciledAt older than the sync's finishedAt", () => {
    const stale = observeSync(ARGO, app({
      sync: { status: "Synced", revision: SHA_A },
      health: { status: "Healthy" },
      reconciledAt: "2026-01-01T00:00:05Z",
      operationState: succeeded(SHA_A, "2026-01-01T00:00:10Z"),
    }));
    expect(stale.settling).toBe("health not assessed since the sync finished at 2026-01-01T00:00:10Z");
    const fresh = observeSync(ARGO, app({
      sync: { status: "Synced", revision: SHA_A },
      health: { status: "Healthy" },
      reconciledAt: "2026-01-01T00:00:10Z",
      operationState: succeeded(SHA_A, "2026-01-01T00:00:10Z"),
    }));
    expect(fresh.settling).toBeUndefined();
  });

  it("is settling while a sync runs", () => {
    expect(observeSync(ARGO, app({ operationState: { phase: "Running" } })).settling).toBe("a sync is running");
  });

  it("keeps a failure while the next operation runs (operationState replaced: Running, no message), until a sync succeeds", () => {
    const history = [{ id: 0, revision: SHA_A, deployedAt: "2026-01-01T00:00:10Z" }];
    const failed = observeSync(ARGO, app({
      sync: { status: "OutOfSync", revision: SHA_B },
      history,
      reconciledAt: "2026-01-01T00:00:20Z",
      operationState: { phase: "Failed", finishedAt: "2026-01-01T00:00:20Z", message: "one or more objects failed to apply, reason: denied", syncResult: { revision: SHA_B } },
    }));
    const next = { sync: { status: "OutOfSync", revision: "c".repeat(40) }, history, reconciledAt: "2026-01-01T00:00:30Z", operationState: { phase: "Running", startedAt: "2026-01-01T00:00:30Z" } };
    const running = observeSync(ARGO, app(next), failed);
    expect(running).toMatchObject({ appliedRevision: SHA_A, error: "one or more objects failed to apply, reason: denied", settling: "a sync is running" });
    // Without what came before (a restart) there is nothing to keep.
    expect(observeSync(ARGO, app(next)).error).toBeUndefined();
    const done = observeSync(ARGO, app({ ...next, sync: { status: "Synced", revision: "c".repeat(40) }, operationState: succeeded("c".repeat(40), "2026-01-01T00:00:30Z") }), running);
    expect(done.error).toBeUndefined();
  });

  it("reports the reason of a failed attempt that will be retried (Running with finishedAt); no sync runs until the retry, and reconciledAt stays older meanwhile", () => {
    const message = "one or more objects failed to apply, reason: denied. Retrying attempt #1 at 12:00AM.";
    const resources = [{ group: "acid.zalan.do", kind: "postgresql", namespace: "ns", name: "pg-a", status: "Synced" }];
    const waiting = observeSync(ARGO, app({
      sync: { status: "OutOfSync", revision: SHA_B },
      reconciledAt: "2026-01-01T00:00:05Z",
      operationState: { phase: "Running", startedAt: "2026-01-01T00:00:10Z", finishedAt: "2026-01-01T00:00:20Z", retryCount: 1, message },
      resources,
    }));
    expect(waiting).toMatchObject({ error: message, resources: { revision: SHA_B, synced: new Set(["acid.zalan.do/postgresql/ns/pg-a"]) } });
    expect(waiting.settling).toBeUndefined();
    // The retry itself (finishedAt cleared): a sync runs again, the failure stands meanwhile.
    const retrying = observeSync(ARGO, app({
      sync: { status: "OutOfSync", revision: SHA_B },
      reconciledAt: "2026-01-01T00:00:05Z",
      operationState: { phase: "Running", startedAt: "2026-01-01T00:00:10Z", retryCount: 1, message: "Retrying operation with latest revisions. Attempt #1" },
      resources,
    }), waiting);
    expect(retrying).toMatchObject({ error: message, settling: "a sync is running" });
  });

  it("reads status.resources[]: which match the compared revision, and their health only when persisted inline", () => {
    const resources = [
      { group: "acid.zalan.do", version: "v1", kind: "postgresql", namespace: "ns", name: "pg-a", status: "Synced", health: { status: "Degraded", message: "CreateFailed" } },
      { version: "v1", kind: "Secret", namespace: "ns", name: "s", status: "OutOfSync" },
    ];
    const inline = observeSync(ARGO, app({ sync: { status: "OutOfSync", revision: SHA_B }, resources }));
    expect(inline.resources).toEqual({ revision: SHA_B, synced: new Set(["acid.zalan.do/postgresql/ns/pg-a"]), health: new Map([["acid.zalan.do/postgresql/ns/pg-a", "Degraded"]]) });
    const tree = observeSync(ARGO, app({ sync: { status: "OutOfSync", revision: SHA_B }, resources, resourceHealthSource: "appTree" }));
    expect(tree.resources).toEqual({ revision: SHA_B, synced: new Set(["acid.zalan.do/postgresql/ns/pg-a"]) });
  });
});

describe("Flux Kustomization", () => {
  it("reads lastAppliedRevision in both formats and the Ready condition", () => {
    for (const revision of [`main@sha1:${SHA_A}`, `main/${SHA_A}`]) {
      const observed = observeSync(FLUX, kustomization({
        observedGeneration: 1,
        lastAppliedRevision: revision,
        conditions: [{ type: "Ready", status: "True", reason: "ReconciliationSucceeded", message: `Applied revision: ${revision}` }],
      }));
      expect(observed).toMatchObject({ subject: "Flux Kustomization west", appliedRevision: SHA_A, healthy: true });
      expect(observed.error).toBeUndefined();
    }
  });

  it("reads the commit of an ArtifactGenerator's artifact from lastAppliedOriginRevision (its own revision is a digest)", () => {
    const observed = observeSync(FLUX, kustomization({
      observedGeneration: 1,
      lastAppliedRevision: `latest@sha256:${"c".repeat(64)}`,
      lastAppliedOriginRevision: `main@sha1:${SHA_A}`,
      conditions: [{ type: "Ready", status: "True", reason: "ReconciliationSucceeded" }],
    }));
    expect(observed).toMatchObject({ appliedRevision: SHA_A, healthy: true });
    expect(observeSync(FLUX, kustomization({ observedGeneration: 1, lastAppliedRevision: `latest@sha256:${"c".repeat(64)}` })).appliedRevision).toBeUndefined();
  });

  it("reports Ready=False with its reason, keeping the last applied revision", () => {
    const observed = observeSync(FLUX, kustomization({
      observedGeneration: 1,
      lastAppliedRevision: `main@sha1:${SHA_A}`,
      lastAttemptedRevision: `main@sha1:${SHA_B}`,
      conditions: [{ type: "Ready", status: "False", reason: "ReconciliationFailed", message: "kustomize build failed" }],
    }));
    expect(observed).toMatchObject({ appliedRevision: SHA_A, healthy: false, error: "ReconciliationFailed: kustomize build failed" });
  });

  it("is settling while reconciling or before it observed its generation", () => {
    expect(observeSync(FLUX, kustomization({ observedGeneration: 1, conditions: [{ type: "Ready", status: "Unknown", reason: "Progressing" }] })).settling).toBe(
      "reconciling (Progressing)",
    );
    expect(observeSync(FLUX, kustomization({ observedGeneration: 1 }, 2)).settling).toBe("generation 2 not reconciled yet (observed 1)");
  });

  it("parses revisions, and nothing that is not a commit", () => {
    expect(parseFluxRevision(`main@sha1:${SHA_A}`)).toBe(SHA_A);
    expect(parseFluxRevision(`release/v1/${SHA_A}`)).toBe(SHA_A);
    expect(parseFluxRevision(`sha1:${SHA_A}`)).toBe(SHA_A);
    expect(parseFluxRevision(SHA_A)).toBe(SHA_A);
    expect(parseFluxRevision(`latest@sha256:${"c".repeat(64)}`)).toBeUndefined();
    expect(parseFluxRevision(undefined)).toBeUndefined();
  });
});
