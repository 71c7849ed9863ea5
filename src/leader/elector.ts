import { InvalidArgumentError } from "../errors/index.js";
import type { Logger } from "../log/index.js";
import { noopInstruments, type LeaderInstruments } from "../metrics/index.js";
import type { Lease, LeaseClient } from "./lease-client.js";

/**
 * Leader election on a coordination.k8s.io/v1 Lease, the algorithm of client-go's
 * tools/leaderelection (ADR 0024, ADR 0030): a candidate reads the Lease every `retryPeriodMs`
 * stretched by a random jitter (up to 1.2 times more), so that candidates started together do
 * not ask together; it takes it when nobody holds it, or when the holder's record has not changed
 * for `leaseDurationMs` by the candidate's own monotonic clock (never by comparing wall clocks
 * across machines); the write carries the resourceVersion read, so of two candidates one wins and
 * the other gets 409. The holder renews every `retryPeriodMs`.
 *
 * A holder leads until `renewDeadlineMs` after the start of its last successful round, and not a
 * moment longer: the others take over no earlier than `leaseDurationMs` after they saw that
 * round's write, which came after its start (renewDeadline < leaseDuration). So every round is
 * bounded by that deadline (its requests are aborted there, however many it makes and however
 * long each takes), `isLeader()` reads the deadline itself, and a timer tells the listeners when
 * it passes while a round still hangs. On close a holder gives the Lease up (holder "" and a
 * one-second duration), so the next one takes over at once instead of after the lease duration.
 */

export interface Leadership {
  /** Who this replica is in the Lease (holderIdentity). */
  readonly identity: string;
  /** True while this replica holds the Lease and may do the background work. */
  isLeader(): boolean;
  /** The holder as last read (null: none, or not read yet); this replica's identity while it leads. */
  holder(): string | null;
  /** `listener(true)` when this replica starts leading, `(false)` when it stops; returns the unsubscribe. */
  onChange(listener: (leading: boolean) => void): () => void;
  /** One /readyz line saying who leads (never failing: a follower serves OSB as well). */
  describe(): string;
  /** Stop taking part; a holder gives the Lease up. Resolves when done. */
  close(): Promise<void>;
}

export interface LeaseElectorOptions {
  client: LeaseClient;
  /** The Lease's name and namespace (what `client` reads and writes). */
  name: string;
  namespace: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  logger: Logger;
  metrics?: LeaderInstruments;
  /** Monotonic milliseconds (default performance.now). */
  clock?: () => number;
  /** Wall clock written into the Lease's times (default new Date()). */
  now?: () => Date;
  /** Waits between rounds (default setTimeout); resolves early when `signal` aborts. */
  delay?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** The jitter of a candidate's waits, in [0, 1) (default Math.random). */
  random?: () => number;
}

/** A candidate waits the retry period times 1 to 1 + JITTER between rounds (client-go's JitterFactor). */
export const ACQUIRE_JITTER = 1.2;

/** A MicroTime: RFC 3339 in UTC with six fractional digits, as the API server writes it. */
export function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

function defaultDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done);
  });
}

/** The record's fields that say whether its holder is alive: a change of any restarts the wait. */
function recordKey(lease: Lease): string {
  const { holderIdentity, leaseDurationSeconds, acquireTime, renewTime, leaseTransitions } = lease.spec;
  return JSON.stringify([holderIdentity ?? "", leaseDurationSeconds ?? 0, acquireTime ?? "", renewTime ?? "", leaseTransitions ?? 0]);
}

/**
 * The record that makes `identity` the holder at `at` (a MicroTime), from the one read (undefined:
 * none yet): acquired now when it takes over, a transition counted when it takes over from another.
 */
export function leaseRecord(
  previous: Lease | undefined,
  { identity, name, namespace, leaseDurationMs }: Pick<LeaseElectorOptions, "identity" | "name" | "namespace" | "leaseDurationMs">,
  at: string,
): Lease {
  const takingOver = previous?.spec.holderIdentity !== identity;
  return {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: previous ? { ...previous.metadata } : { name, namespace },
    spec: {
      ...previous?.spec,
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      acquireTime: takingOver ? at : (previous.spec.acquireTime ?? at),
      renewTime: at,
      leaseTransitions: (previous?.spec.leaseTransitions ?? 0) + (takingOver && previous?.spec.holderIdentity ? 1 : 0),
    },
  };
}

/**
 * Whether `identity` leads after a round: yes when it held the Lease then; no more when it could not
 * renew for `renewDeadlineMs` (another may take over soon: stop before it can) or another holds it;
 * else as before.
 */
export function leadsAfter(round: { held: boolean; leading: boolean; sinceRenewMs: number; holder: string | null }, identity: string, renewDeadlineMs: number): boolean {
  if (round.held) return true;
  if (round.leading && round.sinceRenewMs >= renewDeadlineMs) return false;
  if (round.leading && round.holder !== null && round.holder !== identity) return false;
  return round.leading;
}

/** What a candidate knows of the Lease (its holder, the record last read and since when) and its one round. */
function createLeaseRounds(options: LeaseElectorOptions, clock: () => number, now: () => Date) {
  const { client, identity, leaseDurationMs } = options;
  const known: { holder: string | null; observed?: { key: string; at: number; lease: Lease } } = { holder: null };
  /** One round: true when this replica holds the Lease after it. Its requests end when `signal` aborts. */
  async function tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const current = await client.get(signal);
    if (current === null) {
      const created = await client.create(leaseRecord(undefined, options, microTime(now())), signal);
      if (created === null) return false;
      known.observed = { key: recordKey(created), at: clock(), lease: created };
      known.holder = identity;
      return true;
    }
    const key = recordKey(current);
    if (known.observed?.key !== key) known.observed = { key, at: clock(), lease: current };
    known.holder = current.spec.holderIdentity || null;
    const mine = known.holder === identity;
    const durationMs = (current.spec.leaseDurationSeconds ?? Math.ceil(leaseDurationMs / 1000)) * 1000;
    if (!mine && known.holder !== null && known.observed.at + durationMs > clock()) return false;
    const updated = await client.update(leaseRecord(current, options, microTime(now())), signal);
    if (updated === null) return false;
    known.observed = { key: recordKey(updated), at: clock(), lease: updated };
    known.holder = identity;
    return true;
  }
  return { known, tryAcquireOrRenew };
}

/**
 * When the holder's leadership ends: `renewDeadlineMs` after the start of its last successful
 * round. `passed()` is called once the deadline passes without a renewal (a timer, so it comes
 * while a round still hangs); `within()` reads the clock itself, so it is right even when the
 * timer is late.
 */
function createRenewDeadline(renewDeadlineMs: number, clock: () => number, passed: () => void) {
  let renewedAt = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;
  const within = (): boolean => clock() < renewedAt + renewDeadlineMs;
  function arm(): void {
    clearTimeout(timer);
    timer = setTimeout(() => (within() ? arm() : passed()), Math.max(0, renewedAt + renewDeadlineMs - clock()));
  }
  return {
    within,
    /** How long a holder's round may take. */
    leftMs: () => renewedAt + renewDeadlineMs - clock(),
    sinceRenewMs: () => clock() - renewedAt,
    renewed(startedAt: number): void {
      renewedAt = startedAt;
    },
    arm,
    disarm: () => clearTimeout(timer),
  };
}

export function createLeaseElector(options: LeaseElectorOptions): Leadership {
  const { client, name, namespace, identity, leaseDurationMs, renewDeadlineMs, retryPeriodMs } = options;
  if (!(retryPeriodMs > 0 && renewDeadlineMs > retryPeriodMs && leaseDurationMs > renewDeadlineMs)) {
    throw new InvalidArgumentError(`leader election needs 0 < retryPeriod (${retryPeriodMs} ms) < renewDeadline (${renewDeadlineMs} ms) < leaseDuration (${leaseDurationMs} ms)`);
  }
  const logger = options.logger.child({ lease: `${namespace}/${name}`, identity });
  const metrics = options.metrics ?? noopInstruments.leader;
  const clock = options.clock ?? (() => performance.now());
  const now = options.now ?? (() => new Date());
  const delay = options.delay ?? defaultDelay;
  const random = options.random ?? Math.random;
  const stop = new AbortController();
  const listeners = new Set<(leading: boolean) => void>();

  let leading = false;
  let lastError: string | undefined;
  const { known, tryAcquireOrRenew } = createLeaseRounds(options, clock, now);
  const deadline = createRenewDeadline(renewDeadlineMs, clock, () => {
    if (!leading) return;
    logger.warn({ renewDeadlineMs }, "the Lease was not renewed within the renew deadline");
    setLeading(false);
  });
  const isLeader = (): boolean => leading && deadline.within();

  metrics.leader.set(0, { identity });

  function setLeading(value: boolean): void {
    if (value) deadline.arm();
    else deadline.disarm();
    if (leading === value) return;
    leading = value;
    metrics.leader.set(value ? 1 : 0, { identity });
    metrics.transitions.inc({ change: value ? "acquired" : "lost" });
    if (value) logger.info("acquired the Lease: this replica does the background work");
    else logger.warn({ holder: known.holder }, "no longer holds the Lease: background work stops here");
    for (const listener of listeners) {
      try {
        listener(value);
      } catch (error) {
        logger.error({ err: error, leading: value }, "a leadership listener failed");
      }
    }
  }

  /** One bounded round: a holder's ends at its renew deadline, a candidate's after one renew deadline. */
  async function round(): Promise<void> {
    const startedAt = clock();
    const budgetMs = isLeader() ? deadline.leftMs() : renewDeadlineMs;
    const signal = AbortSignal.any([stop.signal, AbortSignal.timeout(Math.max(0, Math.floor(budgetMs)))]);
    let held = false;
    try {
      held = await tryAcquireOrRenew(signal);
      if (lastError !== undefined) logger.info("the Lease answers again");
      lastError = undefined;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (message !== lastError) logger.warn({ err: error }, "leader election: the Lease could not be read or written");
      lastError = message;
    }
    if (stop.signal.aborted) return;
    // A write that came back after the round's deadline is not relied upon: the next round renews it.
    if (held && clock() - startedAt < renewDeadlineMs) deadline.renewed(startedAt);
    else held = false;
    setLeading(leadsAfter({ held, leading, sinceRenewMs: deadline.sinceRenewMs(), holder: known.holder }, identity, renewDeadlineMs));
  }

  const loop = (async () => {
    while (!stop.signal.aborted) {
      await round();
      if (stop.signal.aborted) break;
      await delay(leading ? retryPeriodMs : Math.round(retryPeriodMs * (1 + ACQUIRE_JITTER * random())), stop.signal);
    }
  })();

  async function release(): Promise<void> {
    const lease = known.observed?.lease;
    if (!leading || lease === undefined) return;
    setLeading(false);
    try {
      const released = await client.update({
        ...lease,
        spec: { ...lease.spec, holderIdentity: "", leaseDurationSeconds: 1, renewTime: microTime(now()) },
      });
      logger.info({ released: released !== null }, released ? "gave the Lease up" : "the Lease changed before it was given up");
    } catch (error) {
      logger.warn({ err: error }, "giving the Lease up failed: the next leader waits for it to expire");
    }
  }

  return {
    identity,
    isLeader,
    holder: () => (isLeader() ? identity : known.holder),
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    describe() {
      const me = isLeader();
      const who = me ? "this replica" : (known.holder ?? "nobody yet");
      return `Lease ${namespace}/${name} held by ${who}${me ? "" : ` (this replica: ${identity})`}${lastError ? `; last error: ${lastError}` : ""}`;
    },
    async close() {
      stop.abort();
      await loop;
      deadline.disarm();
      await release();
      listeners.clear();
    },
  };
}

/**
 * No election (outside Kubernetes, one process): this process always leads. The background work
 * starts at once, as before leader election existed.
 */
export function soleLeader(identity: string, metrics: LeaderInstruments = noopInstruments.leader): Leadership {
  metrics.leader.set(1, { identity });
  return {
    identity,
    isLeader: () => true,
    holder: () => identity,
    onChange: () => () => undefined,
    describe: () => "no leader election: this process does the background work",
    close: () => Promise.resolve(),
  };
}
