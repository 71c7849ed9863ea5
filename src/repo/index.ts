export {
  CATALOG_DIR,
  CLUSTER_REGISTRY_DIR,
  CLUSTERS_DIR,
  CONTROL_STORE,
  INSTANCES_DIR,
  OVERRIDES_DIR,
  QUOTA_DIR,
  SENSITIVE_DIR,
  bindingManifestDir,
  bindingRecordPath,
  clusterDir,
  clusterNamespacePath,
  clusterRegistryPath,
  instanceManifestDir,
  instanceRecordDir,
  instanceRecordPath,
  isDns1123Label,
  keyOf,
  overridesDir,
  sensitiveSecretPath,
  storeLabel,
} from "./layout.js";
export {
  RECORD_API_VERSION,
  instanceNamespace,
  latestOperation,
  readBinding,
  readBindings,
  readInstance,
  readRecordAt,
  byBindingKey,
  readLiveBindings,
  recordYaml,
  writeBinding,
  writeInstance,
} from "./records.js";
export { newBindingRecord, newInstanceRecord } from "./new-records.js";
export type { BindingRecordFields, InstanceRecordFields } from "./new-records.js";
export type {
  BindingAction,
  BindingRecord,
  InstanceAction,
  InstancePatch,
  InstanceRecord,
  MaintenanceInfoRecord,
  OperationEntry,
  OriginatingIdentity,
  SensitiveParameterRefs,
} from "./records.js";
export { LABEL_BINDING, LABEL_INSTANCE, LABEL_MANAGED_BY, MANAGED_BY, namespaceManifest } from "./manifests.js";
export {
  createInstanceSummaryCache,
  instanceCounts,
  liveOfPlan,
  liveInScope,
  liveOnCluster,
  scopeKey,
  summarizeInstances,
  summarizeStores,
  mergeSummaries,
} from "./instance-summary.js";
export { createBindingSummaryCache, summarizeBindings } from "./binding-summary.js";
export type { BindingCounts, BindingSummaryCache } from "./binding-summary.js";
export { createFoldCache, foldInstances, foldParts } from "./instance-fold.js";
export type { DirFold, FoldCache, FoldProgress, FoldSpec } from "./instance-fold.js";
export type { InstanceSummary, InstanceSummaryCache, TenantScope } from "./instance-summary.js";
export { createQuotaReader, limitPlanIds } from "./quotas.js";
export type { NamedService, Quota, QuotaLimit, QuotaSet } from "./quotas.js";
export { offboardingProblems, storeProblems } from "./offboarding.js";
export { dirTreeReader } from "./dir-tree.js";
export { mergePatch, readOverrides } from "./overrides.js";
export type { Override, OverrideTarget } from "./overrides.js";
export { documentProblems } from "./schemas.js";
export type { RepoDocumentKind } from "./schemas.js";
export { BINDING_CLEANUP_REASON, brokerTrailers, IMPORT_REASON, readBrokerTrailers, RECORDS_GC_REASON, TRAILER } from "./trailers.js";
export type { BrokerTrailers, TrailerValues } from "./trailers.js";
export { MOVES_DIR, moveFencePath, moveFenceYaml, readMoveFences, type MoveFence } from "./moves.js";
export { scanInstanceRecord, type ScannedInstance } from "./record-scan.js";
