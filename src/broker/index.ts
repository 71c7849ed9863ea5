export { createApp } from "./app.js";
export { parseBasicAuth } from "./auth.js";
export { MAX_API_VERSION, MIN_API_VERSION } from "./headers.js";
export type { BrokerDeps, OsbResponse, ReconcileEndpoints } from "./context.js";
export { clusterReport, moveInstance } from "./admin.js";
export type { MoveResult } from "./admin.js";
export type { AdminDeps, ClusterReport } from "./admin.js";
export { instanceHistory } from "./history.js";
export type { HistoryEntry, HistorySource, InstanceHistory } from "./history.js";
