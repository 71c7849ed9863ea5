/**
 * The catalog component: reads services, plans and the cluster registry from the GitOps repo
 * (through a TreeReader), validates them against repo-layout/schemas, serves the OSB catalog
 * body and validates request parameters against plan schemas.
 */
export { loadCatalog } from "./load-catalog.js";
export type { LoadCatalogOptions } from "./load-catalog.js";
export { loadClusters, DEFAULT_INSTANCE_NAMESPACE } from "./load-clusters.js";
export type { ClusterEntry, EncryptionDecl, KubeconfigRef, NudgeDecl, SecretValueRef, SyncRef } from "./load-clusters.js";
export { toOsbCatalog, parseApiVersion, PLATFORMS } from "./osb-catalog.js";
export type { Platform } from "./osb-catalog.js";
export { validateParameters } from "./parameters.js";
export type { ParametersSchemaKey } from "./parameters.js";
export { sensitiveParameters, withoutSensitiveParameters } from "./sensitive-parameters.js";
export type { SensitiveParameter } from "./sensitive-parameters.js";
export type { Catalog, Service, Plan, PlanTemplate, ApiVersion, MaintenanceInfo } from "./types.js";
export { autoUpdatesInstances, bindingLifetime, bindingRotatable, planDeprecated, updatePossible } from "./plan-settings.js";
export { createRepoView } from "./repo-view.js";
export { fillRepoInstruments } from "./repo-metrics.js";
export type { CatalogSource, LiveRepoView, ReadinessCheck, RepoView } from "./repo-view.js";
export { catalogHistory, CATALOG_HISTORY_DEPTH } from "./catalog-history.js";
export type { CatalogHistory, CatalogVersion } from "./catalog-history.js";
