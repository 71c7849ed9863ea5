import type { OriginatingIdentity } from "./records.js";

/**
 * The audit trailers of the broker's commits: the one place that names them, builds them (OSB
 * operations, re-renders, moves, records GC) and reads them back (history). A commit carrying
 * Broker-Version is the broker's; anything else is a human's.
 */

/** The Reason of a records GC commit (ADR 0018). */
export const RECORDS_GC_REASON = "records-gc";

/** The Reason of a commit removing the records of a binding whose instance is gone (admin binding cleanup). */
export const BINDING_CLEANUP_REASON = "binding-cleanup";
/** The Reason of a commit of `gitops-broker import` (ADR 0026): records and manifests of running instances. */
export const IMPORT_REASON = "import";

/** Reasons whose commits name several instances, one Instance-Id trailer each. */
const MANY_INSTANCES = new Set([RECORDS_GC_REASON, IMPORT_REASON]);

/** Trailers as a commit carries them: a repeated key has its values in order. */
export type TrailerValues = Readonly<Record<string, string | readonly string[]>>;

export const TRAILER = {
  reason: "Reason",
  planCommit: "Plan-Commit",
  overrideCommit: "Override-Commit",
  retentionDays: "Retention-Days",
  operation: "Operation",
  instanceId: "Instance-Id",
  bindingId: "Binding-Id",
  predecessorBindingId: "Predecessor-Binding-Id",
  movedFrom: "Moved-From",
  movedTo: "Moved-To",
  importSource: "Import-Source",
  originatingIdentity: "Originating-Identity",
  requestIdentity: "Request-Identity",
  overrides: "Overrides",
  brokerVersion: "Broker-Version",
} as const;

export interface BrokerTrailers {
  /** Why a re-render happened (plan-changed, override-changed, manual), or records-gc. */
  reason?: string;
  /** The commit that changed the plan (re-render). */
  planCommit?: string;
  /** The commit that changed the overrides (re-render). */
  overrideCommit?: string;
  /** The retention period a records GC removed records after (`records.retentionDays`). */
  retentionDays?: number;
  /** The OSB operation id. */
  operation?: string;
  instanceId?: string;
  /** The instances of a records GC or import commit: one Instance-Id trailer each (`git log --grep` finds every one). */
  instanceIds?: readonly string[];
  bindingId?: string;
  /** A rotation's predecessor (OSB `predecessor_binding_id`): the binding `bindingId` succeeds. */
  predecessorBindingId?: string;
  movedFrom?: string;
  movedTo?: string;
  /** Where an import read its instances: `service-fabrik <master API server URL>`. */
  importSource?: string;
  /** The platform's X-Broker-API-Originating-Identity. */
  originatingIdentity?: OriginatingIdentity;
  requestIdentity?: string;
  /** Override files the commit's renders applied (repo paths). */
  overrides?: readonly string[];
  brokerVersion?: string;
}

/**
 * The trailers of a broker commit, in a fixed order; empty and absent fields are left out.
 * `instanceIds` (records GC) repeats Instance-Id after an `instanceId`'s.
 */
export function brokerTrailers(t: BrokerTrailers): Record<string, string | readonly string[]> {
  const out: Record<string, string | readonly string[]> = {};
  const set = (key: string, value: string | undefined) => {
    if (value) out[key] = value;
  };
  set(TRAILER.reason, t.reason);
  set(TRAILER.planCommit, t.planCommit);
  set(TRAILER.overrideCommit, t.overrideCommit);
  if (t.retentionDays !== undefined) set(TRAILER.retentionDays, String(t.retentionDays));
  set(TRAILER.operation, t.operation);
  const instanceIds = [...(t.instanceId ? [t.instanceId] : []), ...(t.instanceIds ?? []).filter((id) => id !== "")];
  if (instanceIds.length > 0) out[TRAILER.instanceId] = t.instanceIds ? instanceIds : instanceIds[0]!;
  set(TRAILER.bindingId, t.bindingId);
  set(TRAILER.predecessorBindingId, t.predecessorBindingId);
  set(TRAILER.movedFrom, t.movedFrom);
  set(TRAILER.movedTo, t.movedTo);
  set(TRAILER.importSource, t.importSource);
  const oi = t.originatingIdentity;
  if (oi) set(TRAILER.originatingIdentity, `${oi.platform} ${JSON.stringify(oi.value)}`);
  set(TRAILER.requestIdentity, t.requestIdentity);
  if (t.overrides?.length) set(TRAILER.overrides, t.overrides.join(", "));
  set(TRAILER.brokerVersion, t.brokerVersion);
  return out;
}

/** `cloudfoundry {"user_id":"…"}` → {platform, value}; undefined when it is not that shape. */
function decodeIdentity(trailer: string | undefined): OriginatingIdentity | undefined {
  const space = trailer?.indexOf(" ") ?? -1;
  if (trailer === undefined || space <= 0) return undefined;
  try {
    const value = JSON.parse(trailer.slice(space + 1)) as unknown;
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      return { platform: trailer.slice(0, space), value: value as Record<string, unknown> };
    }
  } catch {
    // Not JSON: a trailer written by hand; the raw text stays with the caller.
  }
  return undefined;
}

/**
 * The inverse of brokerTrailers, for any commit's trailers (a human's may carry none or odd ones).
 * A repeated trailer counts by its last value, as git's trailer rules have it; except Instance-Id
 * in a records GC or import commit, which names every instance it removed or imported
 * (`instanceIds`, even just one).
 */
export function readBrokerTrailers(trailers: TrailerValues): BrokerTrailers {
  const out: BrokerTrailers = {};
  const get = (key: string) => {
    const value = trailers[key];
    const last = typeof value === "string" ? value : value?.at(-1);
    return last ? last : undefined;
  };
  const gc = MANY_INSTANCES.has(get(TRAILER.reason) ?? "");
  const fields = [
    ["reason", TRAILER.reason],
    ["planCommit", TRAILER.planCommit],
    ["overrideCommit", TRAILER.overrideCommit],
    ["operation", TRAILER.operation],
    ...(gc ? [] : ([["instanceId", TRAILER.instanceId]] as const)),
    ["bindingId", TRAILER.bindingId],
    ["predecessorBindingId", TRAILER.predecessorBindingId],
    ["movedFrom", TRAILER.movedFrom],
    ["movedTo", TRAILER.movedTo],
    ["importSource", TRAILER.importSource],
    ["requestIdentity", TRAILER.requestIdentity],
    ["brokerVersion", TRAILER.brokerVersion],
  ] as const;
  for (const [field, key] of fields) {
    const value = get(key);
    if (value !== undefined) out[field] = value;
  }
  if (gc) {
    const ids = trailers[TRAILER.instanceId];
    out.instanceIds = (typeof ids === "string" ? [ids] : [...(ids ?? [])]).filter((id) => id !== "");
    const days = Number(get(TRAILER.retentionDays));
    if (Number.isInteger(days) && days > 0) out.retentionDays = days;
  }
  const identity = decodeIdentity(get(TRAILER.originatingIdentity));
  if (identity) out.originatingIdentity = identity;
  const overrides = get(TRAILER.overrides);
  if (overrides !== undefined) out.overrides = overrides.split(", ");
  return out;
}
