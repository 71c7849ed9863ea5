import { describe, expect, it, vi } from "vitest";
import { createLogger } from "../log/index.js";
import { createLeaseElector, leadsAfter, leaseRecord, microTime, soleLeader, type Leadership } from "./elector.js";
import type { Lease, LeaseClient } from "./lease-client.js";

/**
 * The election's rules on a store that answers as the API server does for one Lease (a
 * resourceVersion per write, 409 on a stale one, 409 on a second create). The real API server:
 * test/real-kube/leader-election.test.ts.
 */
function leaseStore() {
  let stored: Lease | null = null;
  let version = 0;
  const copy = (l: Lease): Lease => structuredClone(l);
  const client = (reachable: () => boolean = () => true): LeaseClient => {
    const check = () => {
      if (!reachable()) return Promise.reject(new Error("connect ECONNREFUSED"));
      return Promise.resolve();
    };
    return {
      get: async () => (await check(), stored && copy(stored)),
      async create(lease) {
        await check();
        if (stored) return null;
        stored = { ...copy(lease), metadata: { ...lease.metadata, resourceVersion: String(++version) } };
        return copy(stored);
      },
      async update(lease) {
        await check();
        if (!stored || lease.metadata.resourceVersion !== stored.metadata.resourceVersion) return null;
        stored = { ...copy(lease), metadata: { ...lease.metadata, resourceVersion: String(++version) } };
        return copy(stored);
      },
    };
  };
  return { client, holder: () => stored?.spec.holderIdentity };
}

// A wide gap between the deadline and the lease: a loaded machine delays both replicas' timers.
const TIMES = { leaseDurationMs: 1_000, renewDeadlineMs: 300, retryPeriodMs: 50 };
const logger = createLogger({ level: "fatal" });
const eventually = (assertion: () => void) => vi.waitFor(assertion, { timeout: 30_000, interval: 10 });

/** Every change of every elector, in order. */
let history: string[] = [];

function elector(client: LeaseClient, identity: string): Leadership & { changes: boolean[] } {
  const leadership = createLeaseElector({ client, name: "gb", namespace: "brokers", identity, ...TIMES, logger });
  const changes: boolean[] = [];
  leadership.onChange((leading) => {
    changes.push(leading);
    history.push(`${identity} ${leading ? "leads" : "stops"}`);
  });
  return Object.assign(leadership, { changes });
}

describe("leader election on a Lease", () => {
  it("one of two candidates leads; the other reads who", async () => {
    const store = leaseStore();
    const a = elector(store.client(), "a");
    await eventually(() => expect(a.isLeader()).toBe(true));
    const b = elector(store.client(), "b");
    await eventually(() => expect(b.holder()).toBe("a"));
    expect(b.isLeader()).toBe(false);
    expect(b.describe()).toBe("Lease brokers/gb held by a (this replica: b)");
    expect(a.describe()).toBe("Lease brokers/gb held by this replica");
    await b.close();
    await a.close();
    expect(a.changes).toEqual([true, false]);
    expect(b.changes).toEqual([]);
  });

  it("a leader cut off from the API server stops within the renew deadline, before the other takes over", async () => {
    const store = leaseStore();
    history = [];
    let reachable = true;
    const a = elector(store.client(() => reachable), "a");
    await eventually(() => expect(a.isLeader()).toBe(true));
    const b = elector(store.client(), "b");
    await eventually(() => expect(b.holder()).toBe("a"));
    reachable = false;
    await eventually(() => expect(b.isLeader()).toBe(true));
    // a stopped before b started: never two leaders at once.
    expect(history).toEqual(["a leads", "a stops", "b leads"]);
    expect(a.describe()).toMatch(/last error: connect ECONNREFUSED$/);
    expect(store.holder()).toBe("b");
    await Promise.all([a.close(), b.close()]);
  });

  it("a graceful stop gives the Lease up: the other takes it at its next look, not after the lease duration", async () => {
    const store = leaseStore();
    const a = elector(store.client(), "a");
    await eventually(() => expect(a.isLeader()).toBe(true));
    const b = createLeaseElector({ client: store.client(), name: "gb", namespace: "brokers", identity: "b", ...TIMES, leaseDurationMs: 60_000, renewDeadlineMs: 30_000, logger });
    await eventually(() => expect(b.holder()).toBe("a"));
    await a.close();
    expect(store.holder()).toBe("");
    await eventually(() => expect(b.isLeader()).toBe(true));
    await b.close();
  });

  it("refuses durations that do not nest; writes MicroTime; without election the process leads", () => {
    expect(() => createLeaseElector({ client: leaseStore().client(), name: "gb", namespace: "n", identity: "a", leaseDurationMs: 10, renewDeadlineMs: 10, retryPeriodMs: 2, logger })).toThrow(
      "leader election needs 0 < retryPeriod (2 ms) < renewDeadline (10 ms) < leaseDuration (10 ms)",
    );
    expect(microTime(new Date("2026-11-27T15:00:00.123Z"))).toBe("2026-11-27T15:00:00.123000Z");
    const sole = soleLeader("here");
    expect([sole.isLeader(), sole.holder(), sole.describe()]).toEqual([true, "here", "no leader election: this process does the background work"]);
  });
});

describe("the Lease record a candidate writes", () => {
  const me = { identity: "broker-a", name: "gitops-broker", namespace: "ops", leaseDurationMs: 15_500 };
  const at = "2026-03-01T10:00:00.123000Z";
  const held = (holderIdentity: string, more: Partial<Lease["spec"]> = {}): Lease => ({
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { name: "gitops-broker", namespace: "ops", resourceVersion: "7" },
    spec: { holderIdentity, leaseDurationSeconds: 15, acquireTime: "2026-03-01T09:00:00.000000Z", renewTime: "2026-03-01T09:59:58.000000Z", leaseTransitions: 2, ...more },
  });

  it("a new Lease: held by the candidate, acquired and renewed now, no transition, the duration in whole seconds rounded up", () => {
    expect(leaseRecord(undefined, me, at)).toEqual({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: "gitops-broker", namespace: "ops" },
      spec: { holderIdentity: "broker-a", leaseDurationSeconds: 16, acquireTime: at, renewTime: at, leaseTransitions: 0 },
    });
  });

  it("a renewal keeps the acquire time and the transitions, and writes over the resourceVersion read", () => {
    expect(leaseRecord(held("broker-a"), me, at)).toEqual({ ...held("broker-a"), spec: { ...held("broker-a").spec, leaseDurationSeconds: 16, renewTime: at } });
  });

  it("taking over from another holder counts a transition; from a given-up Lease (no holder) it does not", () => {
    expect(leaseRecord(held("broker-b"), me, at).spec).toMatchObject({ holderIdentity: "broker-a", acquireTime: at, renewTime: at, leaseTransitions: 3 });
    expect(leaseRecord(held(""), me, at).spec).toMatchObject({ holderIdentity: "broker-a", acquireTime: at, leaseTransitions: 2 });
  });
});

describe("leadsAfter", () => {
  const round = { held: false, leading: true, sinceRenewMs: 0, holder: "broker-a" };

  it("leads after a round it held the Lease in, whatever came before", () => {
    expect(leadsAfter({ ...round, held: true, leading: false, sinceRenewMs: 60_000, holder: "broker-b" }, "broker-a", 10_000)).toBe(true);
  });

  it("stops once it could not renew for the renew deadline, or another holds the Lease", () => {
    expect(leadsAfter({ ...round, sinceRenewMs: 9_999 }, "broker-a", 10_000)).toBe(true);
    expect(leadsAfter({ ...round, sinceRenewMs: 10_000 }, "broker-a", 10_000)).toBe(false);
    expect(leadsAfter({ ...round, holder: "broker-b" }, "broker-a", 10_000)).toBe(false);
    expect(leadsAfter({ ...round, holder: null }, "broker-a", 10_000)).toBe(true);
  });

  it("a follower that did not get the Lease stays one", () => {
    expect(leadsAfter({ ...round, leading: false, holder: null }, "broker-a", 10_000)).toBe(false);
  });
});
