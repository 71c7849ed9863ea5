import { keyOf } from "./layout.js";
import {
  RECORD_API_VERSION,
  type BindingAction,
  type BindingRecord,
  type InstanceAction,
  type InstanceRecord,
  type OperationEntry,
} from "./records.js";

/**
 * The one constructor of a new instance record and of a new binding record: the broker's
 * provision and bind and the Service Fabrik import (ADR 0026) build them here, so a record of an
 * imported instance differs from a provisioned one only in what its caller passes. The fields
 * keep one order (the records are written as they are built, recordYaml) and an absent optional
 * field is no key at all.
 */

/** An instance record's spec, with `ownNamespace` for spec.namespace and `namespace` for metadata.namespace. */
export type InstanceRecordFields = Omit<InstanceRecord["spec"], "namespace" | "sensitiveParameters"> & {
  /** metadata.namespace: where the instance's objects live ("" until placement). */
  namespace: string;
  /** spec.namespace: the instance's own namespace, kept from Service Fabrik (see instanceNamespace). */
  ownNamespace?: string;
};

/** A binding record's spec, with `namespace` for metadata.namespace (the instance's). */
export type BindingRecordFields = BindingRecord["spec"] & { namespace: string };

/** `{ [key]: value }` when value is defined, else `{}`: an absent field is no key. */
function optional<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, V>);
}

export function newInstanceRecord(fields: InstanceRecordFields, operation: OperationEntry<InstanceAction>): InstanceRecord {
  const f = fields;
  return {
    apiVersion: RECORD_API_VERSION,
    kind: "ServiceInstance",
    metadata: { name: keyOf(f.instanceId), namespace: f.namespace },
    spec: {
      instanceId: f.instanceId,
      serviceId: f.serviceId,
      planId: f.planId,
      clusterId: f.clusterId,
      ...optional("namespace", f.ownNamespace),
      ...optional("region", f.region),
      ...optional("organizationGuid", f.organizationGuid),
      ...optional("spaceGuid", f.spaceGuid),
      ...optional("context", f.context),
      ...optional("parameters", f.parameters),
      ...optional("maintenanceInfo", f.maintenanceInfo),
      ...optional("originatingIdentity", f.originatingIdentity),
    },
    status: { operations: [operation] },
  };
}

export function newBindingRecord(fields: BindingRecordFields, operation: OperationEntry<BindingAction>): BindingRecord {
  const f = fields;
  return {
    apiVersion: RECORD_API_VERSION,
    kind: "ServiceBinding",
    metadata: { name: keyOf(f.bindingId), namespace: f.namespace },
    spec: {
      bindingId: f.bindingId,
      instanceId: f.instanceId,
      serviceId: f.serviceId,
      planId: f.planId,
      ...optional("predecessorBindingId", f.predecessorBindingId),
      ...optional("context", f.context),
      ...optional("parameters", f.parameters),
      ...optional("bindResource", f.bindResource),
      ...optional("appGuid", f.appGuid),
      ...optional("originatingIdentity", f.originatingIdentity),
      ...optional("sensitiveParameters", f.sensitiveParameters),
      ...optional("expiresAt", f.expiresAt),
      ...optional("renewBefore", f.renewBefore),
      ...optional("instancePatches", f.instancePatches),
    },
    status: { operations: [operation] },
  };
}
