/**
 * Leader election (ADR 0024): in Kubernetes, only the holder of a coordination.k8s.io/v1 Lease
 * does the broker's background work (re-renders after plan and override changes, records GC, the
 * catch-up after a start); every replica serves OSB. Outside Kubernetes one process always leads.
 */
export { createLeaseElector, microTime, soleLeader } from "./elector.js";
export type { Leadership, LeaseElectorOptions } from "./elector.js";
export { createKubeLeaseClient } from "./lease-client.js";
export type { KubeLeaseClientOptions, Lease, LeaseClient } from "./lease-client.js";
