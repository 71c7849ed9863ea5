import { describe, expect, it, vi } from "vitest";
import { createLogger } from "../log/index.js";
import { createLeaseElector, leadsAfter, leaseRecord, microTime, soleLeader, type Leadership } from "./elector.js";
import type { Lease, LeaseClient } from "./lease-client.js";

/**
 * The election's rules on a store that answers as the API server does for one Lease (a
 * resourceVersion per write, 409 on a stale one, 409 on a second create). The real API server:
 * test/real-kube/leader-election.test.ts.
 */
type Fault = (request: "get" | "create" | "update", signal: AbortSignal | undefined) => Promise<void>;

/** Resolves after `ms`, or rejects when `signal` aborts first (as a request does). */
function answerAfter(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = ms === Number.POSITIVE_INFINITY ? undefined : setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(new Error("the request was aborted"));
    });
  });
}

function leaseStore() {
  let stored: Lease | null = null;
  let version = 0;
  const copy = (l: Lease): Lease => structuredClone(l);
  const client = (reachable: () => boolean = () => true, fault: Fault = () => Promise.resolve()): LeaseClient => {
    const check = async (request: "get" | "create" | "update", signal?: AbortSignal) => {
      if (!reachable()) throw new Error("connect ECONNREFUSED");
      await fault(request, signal);
    };
    return {
      get: async (signal) => (await check("get", signal), stored && copy(stored)),
      async create(lease, signal) {
        await check("create", signal);
        if (stored) return null;
        stored = { ...copy(lease), metadata: { ...lease.metadata, resourceVersion: String(++version) } };
        return copy(stored);
      },
      async update(lease, signal) {
        await check("update", signal);
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

  it("a renewal whose GET answers late and whose PUT hangs: the holder stops at its renew deadline, before the other takes over", async () => {
    const store = leaseStore();
    history = [];
    let hanging = false;
    // The GET answered at 70 % of the renew deadline, then a PUT that never answers.
    const fault: Fault = (request, signal) => (!hanging ? Promise.resolve() : answerAfter(request === "get" ? TIMES.renewDeadlineMs * 0.7 : Number.POSITIVE_INFINITY, signal));
    const a = elector(store.client(() => true, fault), "a");
    await eventually(() => expect(a.isLeader()).toBe(true));
    const b = elector(store.client(), "b");
    await eventually(() => expect(b.holder()).toBe("a"));
    // Measured when b starts leading, not after a wait: does a still believe it leads?
    const aLeadsWhenBStarts: boolean[] = [];
    b.onChange((leading) => leading && aLeadsWhenBStarts.push(a.isLeader()));
    hanging = true;
    await eventually(() => expect(b.isLeader()).toBe(true));
    expect(aLeadsWhenBStarts).toEqual([false]);
    expect(history).toEqual(["a leads", "a stops", "b leads"]);
    expect(store.holder()).toBe("b");
    hanging = false;
    await Promise.all([a.close(), b.close()]);
  });

  it("a holder whose rounds stop believes it leads only until the renew deadline after its last renewal began, by its clock, timer or not", async () => {
    const store = leaseStore();
    let time = 0;
    const rounds: number[] = [];
    let waiting: (() => void) | undefined;
    // One round, then the elector waits until the test lets it go on.
    const delay = (ms: number, signal: AbortSignal) => {
      rounds.push(ms);
      return new Promise<void>((resolve) => {
        waiting = resolve;
        signal.addEventListener("abort", () => resolve());
      });
    };
    const a = createLeaseElector({ client: store.client(), name: "gb", namespace: "brokers", identity: "a", ...TIMES, logger, clock: () => time, delay });
    await eventually(() => expect(rounds).toHaveLength(1));
    expect(a.isLeader()).toBe(true);
    time = TIMES.renewDeadlineMs - 1;
    expect(a.isLeader()).toBe(true);
    time = TIMES.renewDeadlineMs;
    expect([a.isLeader(), a.holder(), a.describe()]).toEqual([false, "a", "Lease brokers/gb held by a (this replica: a)"]);
    waiting?.();
    await a.close();
  });

  it("a candidate waits the retry period with a jitter of up to 1.2 times more; the holder renews every retry period", async () => {
    const store = leaseStore();
    const waits = { a: [] as number[], b: [] as number[] };
    const delayOf = (who: "a" | "b") => async (ms: number, signal: AbortSignal) => {
      waits[who].push(ms);
      await answerAfter(10, signal).catch(() => undefined);
    };
    const a = createLeaseElector({ client: store.client(), name: "gb", namespace: "brokers", identity: "a", ...TIMES, logger, delay: delayOf("a") });
    await eventually(() => expect(a.isLeader()).toBe(true));
    const draws = [0, 0.5, 0.999];
    let draw = 0;
    const b = createLeaseElector({ client: store.client(), name: "gb", namespace: "brokers", identity: "b", ...TIMES, logger, delay: delayOf("b"), random: () => draws[draw++ % 3]! });
    await eventually(() => expect(waits.b.length).toBeGreaterThanOrEqual(3));
    await eventually(() => expect(waits.a.length).toBeGreaterThanOrEqual(3));
    await Promise.all([a.close(), b.close()]);
    expect(waits.b.slice(0, 3)).toEqual([50, 80, 110]);
    expect(new Set(waits.a.slice(1))).toEqual(new Set([50]));
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
