import type { OriginatingIdentity } from "./records.js";

/**
 * The audit trailers of the broker's commits: the one place that names them, builds them (OSB
 * operations, re-renders, moves) and reads them back (history). A commit carrying Broker-Version
 * is the broker's; anything else is a human's.
 */

export const TRAILER = {
  reason: "Reason",
  planCommit: "Plan-Commit",
  overrideCommit: "Override-Commit",
  operation: "Operation",
  instanceId: "Instance-Id",
  bindingId: "Binding-Id",
  movedFrom: "Moved-From",
  movedTo: "Moved-To",
  originatingIdentity: "Originating-Identity",
  requestIdentity: "Request-Identity",
  overrides: "Overrides",
  brokerVersion: "Broker-Version",
} as const;

export interface BrokerTrailers {
  /** Why a re-render happened (plan-changed, override-changed, manual). */
  reason?: string;
  /** The commit that changed the plan (re-render). */
  planCommit?: string;
  /** The commit that changed the overrides (re-render). */
  overrideCommit?: string;
  /** The OSB operation id. */
  operation?: string;
  instanceId?: string;
  bindingId?: string;
  movedFrom?: string;
  movedTo?: string;
  /** The platform's X-Broker-API-Originating-Identity. */
  originatingIdentity?: OriginatingIdentity;
  requestIdentity?: string;
  /** Override files the commit's renders applied (repo paths). */
  overrides?: readonly string[];
  brokerVersion?: string;
}

/** The trailers of a broker commit, in a fixed order; empty and absent fields are left out. */
export function brokerTrailers(t: BrokerTrailers): Record<string, string> {
  const out: Record<string, string> = {};
  const set = (key: string, value: string | undefined) => {
    if (value) out[key] = value;
  };
  set(TRAILER.reason, t.reason);
  set(TRAILER.planCommit, t.planCommit);
  set(TRAILER.overrideCommit, t.overrideCommit);
  set(TRAILER.operation, t.operation);
  set(TRAILER.instanceId, t.instanceId);
  set(TRAILER.bindingId, t.bindingId);
  set(TRAILER.movedFrom, t.movedFrom);
  set(TRAILER.movedTo, t.movedTo);
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

/** The inverse of brokerTrailers, for any commit's trailers (a human's may carry none or odd ones). */
export function readBrokerTrailers(trailers: Readonly<Record<string, string>>): BrokerTrailers {
  const out: BrokerTrailers = {};
  const get = (key: string) => (trailers[key] ? trailers[key] : undefined);
  const fields = [
    ["reason", TRAILER.reason],
    ["planCommit", TRAILER.planCommit],
    ["overrideCommit", TRAILER.overrideCommit],
    ["operation", TRAILER.operation],
    ["instanceId", TRAILER.instanceId],
    ["bindingId", TRAILER.bindingId],
    ["movedFrom", TRAILER.movedFrom],
    ["movedTo", TRAILER.movedTo],
    ["requestIdentity", TRAILER.requestIdentity],
    ["brokerVersion", TRAILER.brokerVersion],
  ] as const;
  for (const [field, key] of fields) {
    const value = get(key);
    if (value !== undefined) out[field] = value;
  }
  const identity = decodeIdentity(get(TRAILER.originatingIdentity));
  if (identity) out.originatingIdentity = identity;
  const overrides = get(TRAILER.overrides);
  if (overrides !== undefined) out.overrides = overrides.split(", ");
  return out;
}
