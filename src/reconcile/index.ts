/**
 * Reconciliation: repository changes (a plan with `autoUpdateInstances: true`, an instance's
 * overrides, a new tip) and manual requests become re-render commits, fed to the writer's queue
 * at a bounded rate. Records GC (ADR 0018) removes the records of long deprovisioned instances.
 */
export { createReconciler } from "./reconciler.js";
export type { Reconciler, ReconcilerOptions } from "./reconciler.js";
export type { RerenderReason } from "./rerender.js";
export { createRecordsCollector } from "./records-gc.js";
export type { RecordsCollector, RecordsCollectorOptions } from "./records-gc.js";
