/**
 * Importing a running Service Fabrik landscape (ADR 0026): its instances and bindings become
 * records as if the broker had provisioned and bound them, with the manifests their plans'
 * own templates render, naming exactly the objects Service Fabrik applied; then the objects are
 * handed over from Service Fabrik's owner references and finalizers. Read (read-landscape),
 * plan (plan-import: map, render, compare), account (accounting: found = imported + already
 * imported + refused + skipped, read back after the push), commit (commit-import), hand over
 * (hand-over) and verify it from fresh lists (verify);
 * nothing here speaks HTTP or OSB, the clusters come in as ClusterClients.
 */
export { readLandscape } from "./read-landscape.js";
export { planImport, instanceRecordOf, bindingRecordOf } from "./plan-import.js";
export type { Edit, HandOverSubject, ImportPlan, NotImported, ObjectDifferences, PlanImportInputs, PlannedInstance, PresentBinding } from "./plan-import.js";
export { commitImport } from "./commit-import.js";
export type { CommitImportOptions, CommitImportResult } from "./commit-import.js";
export { handOver } from "./hand-over.js";
export type { HandOverInputs, HandOverReport, HandOverStep } from "./hand-over.js";
export { diffObject, differenceText } from "./diff.js";
export type { Difference } from "./diff.js";
export { clusterClient } from "./kube-client.js";
export { planText, accountingText, handOverText, verificationText } from "./report.js";
export { account, leftBehind, readBack } from "./accounting.js";
export type { Accounting, ReadBack, Tally } from "./accounting.js";
export { verifyHandOver } from "./verify.js";
export type { VerifyInputs, Verification } from "./verify.js";
export {
  isServiceFabrikOwner,
  SF_BINDING_KIND,
  SF_INSTANCE_KIND,
  SF_OSB_API_VERSION,
} from "./landscape.js";
export type { ClusterClient, KubeObject, Landscape, ObjectIdentity, OwnerReference } from "./landscape.js";
