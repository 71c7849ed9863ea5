export { createApp } from "./app.js";
export { createRepoView } from "./repo-view.js";
export { parseBasicAuth } from "./auth.js";
export { MAX_API_VERSION, MIN_API_VERSION } from "./headers.js";
export type { BrokerDeps, OsbResponse, ReadinessCheck, RepoView } from "./context.js";
export type { LiveRepoView } from "./repo-view.js";
export { clusterReport, moveInstance } from "./admin.js";
export type { AdminDeps, ClusterReport } from "./admin.js";
