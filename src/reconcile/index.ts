/**
 * Reconciliation: repository changes (a plan with `autoUpdateInstances: true`, an instance's
 * overrides, a new tip) and manual requests become re-render commits, fed to the writer's queue
 * at a bounded rate. Records GC will live here too.
 */
export { createReconciler } from "./reconciler.js";
export type { Reconciler, ReconcilerOptions } from "./reconciler.js";
export type { RerenderReason } from "./rerender.js";
