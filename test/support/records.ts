import { RECORD_API_VERSION, type InstanceRecord } from "../../src/repo/index.js";

/** The sample catalog's service and its `small` plan (repo-layout/example). */
export const SAMPLE_SERVICE_ID = "4de30cf9-a981-48c9-9acf-909805db46bc";
export const SAMPLE_SMALL_PLAN_ID = "55a0d659-3419-4ed1-adf3-19f9d0f5ba4b";

/** An instance record of the `small` plan on cluster `local`, provisioned and never rendered (no manifests). */
export function provisionedRecord(id: string): InstanceRecord {
  return {
    apiVersion: RECORD_API_VERSION,
    kind: "ServiceInstance",
    metadata: { name: id, namespace: "gitops-broker-instances" },
    spec: { instanceId: id, serviceId: SAMPLE_SERVICE_ID, planId: SAMPLE_SMALL_PLAN_ID, clusterId: "local" },
    status: { operations: [{ id: `op-${id}`, action: "provision", at: "2026-01-01T00:00:00.000Z" }] },
  };
}
