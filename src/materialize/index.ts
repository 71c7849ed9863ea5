/**
 * Materializing an instance: turns its records into the desired state under `clusters/<id>/`
 * (templates rendered, manual overrides applied, sensitive parameters sealed as encrypted
 * Secrets), and answers what every operation on an existing instance asks first (its plan, its
 * cluster, whether an operation is in progress). Pure functions of a draft: no queue, no HTTP.
 */
export { lookupPlan, recordedCluster, recordedPlan, refuseIfBusy, runningOperation } from "./instance-state.js";
export {
  bindInto,
  objectsIn,
  removeBindingManifests,
  removeInstanceManifests,
  sensitiveFiles,
  writeBindingManifests,
  writeInstanceManifests,
} from "./manifests.js";
export type { Rendered } from "./manifests.js";
export { dashboardUrl } from "./dashboard-url.js";
export { renderInstanceMetadata, renderInstanceMetadataNow, withInstanceMetadata } from "./instance-metadata.js";
export type { InstanceMetadata } from "./instance-metadata.js";
export { renderInstanceInto } from "./render-instance.js";
export { keptRefs, sealSensitiveValues, sensitiveKeys, sensitiveValues } from "./sensitive.js";
