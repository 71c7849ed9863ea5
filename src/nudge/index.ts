/**
 * The nudge: after a push that changes `clusters/<id>/`, tell that cluster's Argo CD or Flux at
 * once instead of waiting for its poll (ADR 0014), as the registry says (`spec.sync.nudge`): an
 * annotation through the kubeconfig the status watcher uses (Flux `reconcile.fluxcd.io/requestedAt`
 * on the source, whose new artifact makes the Kustomization apply; Argo CD
 * `argocd.argoproj.io/refresh`), or a webhook
 * (a GitHub push event to Argo CD's /api/webhook or a Flux Receiver; Flux generic / generic-hmac
 * Receivers). Fed by the git writer's onPushed event; never fails or delays an OSB request.
 */
export { commitsByCluster, createNudger } from "./nudger.js";
export type { NudgeStats, NudgeTimers, Nudger, NudgerOptions } from "./nudger.js";
export { githubPushEvent, repositoryNames, sha256Signature } from "./push-event.js";
export type { NudgeRange, RepositoryNames } from "./push-event.js";
export { ARGOCD_REFRESH, FLUX_REQUESTED_AT } from "./senders.js";
