export {
  CATALOG_DIR,
  CLUSTER_REGISTRY_DIR,
  CLUSTERS_DIR,
  INSTANCES_DIR,
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
} from "./layout.js";
export {
  RECORD_API_VERSION,
  latestOperation,
  readBinding,
  readInstance,
  readRecordAt,
  readLiveBindings,
  recordYaml,
  writeBinding,
  writeInstance,
} from "./records.js";
export type {
  BindingAction,
  BindingRecord,
  InstanceAction,
  InstanceRecord,
  MaintenanceInfoRecord,
  OperationEntry,
  OriginatingIdentity,
} from "./records.js";
export { LABEL_BINDING, LABEL_INSTANCE, LABEL_MANAGED_BY, MANAGED_BY, namespaceManifest } from "./manifests.js";
export {
  createInstanceSummaryCache,
  instanceCounts,
  liveOfPlan,
  liveOnCluster,
  summarizeInstances,
} from "./instance-summary.js";
export type { InstanceSummary, InstanceSummaryCache } from "./instance-summary.js";
export { offboardingProblems } from "./offboarding.js";
