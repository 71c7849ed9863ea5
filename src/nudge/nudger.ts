import type { ClusterEntry, NudgeDecl, SyncRef } from "../catalog/index.js";
import type { PushEvent, PushedCommit } from "../gitwriter/index.js";
import type { Logger } from "../log/index.js";
import { noopInstruments, type NudgeInstruments } from "../metrics/index.js";
import { CLUSTERS_DIR } from "../repo/index.js";
import type { KubeConfigFor, SecretKeyReader } from "../kube/index.js";
import type { NudgeRange } from "./push-event.js";
import { redact, sendNudge, type SendDeps } from "./senders.js";

/** Timers of the rate limit (injected in tests). */
export interface NudgeTimers {
  /** Milliseconds on a monotonic clock. */
  now(): number;
  /** Calls `fn` after `ms`; returns a cancel function. */
  after(ms: number, fn: () => void): () => void;
}

export interface NudgerOptions {
  /** The cluster registry as loaded now (the repository view's). */
  clusters: () => readonly ClusterEntry[];
  /** The status watcher's kubeconfig resolution (the same clients' configuration). */
  kubeConfigFor: KubeConfigFor;
  /** Reads `secretRef` webhook secrets from the broker's cluster. */
  readSecret: SecretKeyReader;
  /** The broker's git remote URL (credentials in it are never sent). */
  remoteUrl: string;
  /** Each store's remote URL, by store name (ADR 0027): a push to a store names that repository. */
  storeRemotes?: ReadonlyMap<string, string>;
  /** e.g. gitops-broker/0.1.0: User-Agent and pusher of webhook requests. */
  userAgent: string;
  logger: Logger;
  /** Default: no-op. */
  metrics?: NudgeInstruments;
  /** Annotation timestamps (default: the wall clock). */
  now?: () => Date;
  timers?: NudgeTimers;
  fetch?: typeof fetch;
  /** One webhook request or annotation may take this long (default 10 s). */
  timeoutMs?: number;
}

export interface NudgeStats {
  /** Nudges that succeeded. */
  sent: number;
  /** Nudges that failed (logged; the agent's poll delivers instead). */
  failed: number;
  /** Pushes folded into a nudge already waiting for the rate limit. */
  folded: number;
}

export interface Nudger {
  /**
   * A writer's onPushed listener: nudges each cluster whose directory the push changed. `store`:
   * the store the writer writes (ADR 0027); undefined for the broker's git remote.
   */
  pushed(event: PushEvent, store?: string): void;
  /** Per cluster id. */
  stats(): Record<string, NudgeStats>;
  /** Resolves when no nudge is waiting or in flight. */
  idle(): Promise<void>;
  /** Drops waiting nudges, waits for those in flight. */
  close(): Promise<void>;
}

interface ClusterState {
  /** What the next nudge reports (pushes folded together), undefined when none is due. */
  pending: NudgeRange | undefined;
  inFlight: Promise<void> | undefined;
  /** timers.now() when the last nudge started. */
  lastAt: number | undefined;
  cancelTimer: (() => void) | undefined;
  stats: NudgeStats;
}

const realTimers: NudgeTimers = {
  now: () => performance.now(),
  after(ms, fn) {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

/**
 * Tells each cluster's Argo CD / Flux about the pushes that changed `clusters/<id>/`, as its
 * registry entry says (`spec.sync.nudge`, ADR 0014): one nudge per push and cluster, whatever
 * the number of commits in the push; at most one per `minIntervalMs`, pushes in between folded
 * into one nudge sent when the interval is over; never two at once for one cluster. A failure is
 * logged and counted, nothing else: the agent's poll delivers the commit anyway.
 */
export function createNudger(options: NudgerOptions): Nudger {
  const { logger } = options;
  const metrics = options.metrics ?? noopInstruments.nudge;
  const timers = options.timers ?? realTimers;
  const deps: SendDeps = {
    kubeConfigFor: options.kubeConfigFor,
    readSecret: options.readSecret,
    remoteUrl: options.remoteUrl,
    ...(options.storeRemotes ? { storeRemotes: options.storeRemotes } : {}),
    userAgent: options.userAgent,
    now: options.now ?? (() => new Date()),
    fetch: options.fetch ?? fetch,
    timeoutMs: options.timeoutMs ?? 10_000,
  };
  const states = new Map<string, ClusterState>();
  let idleWaiters: (() => void)[] = [];
  let closed = false;

  const stateOf = (id: string): ClusterState => {
    let state = states.get(id);
    if (state === undefined) {
      state = { pending: undefined, inFlight: undefined, lastAt: undefined, cancelTimer: undefined, stats: { sent: 0, failed: 0, folded: 0 } };
      states.set(id, state);
    }
    return state;
  };

  const busy = () => [...states.values()].some((s) => s.pending !== undefined || s.inFlight !== undefined);

  function settleIdle(): void {
    if (busy()) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  function schedule(id: string): void {
    const state = stateOf(id);
    if (closed || state.pending === undefined || state.inFlight !== undefined || state.cancelTimer !== undefined) return;
    const entry = options.clusters().find((c) => c.id === id);
    const sync = entry?.sync;
    const nudge = sync?.nudge;
    if (entry === undefined || sync === undefined || nudge === undefined) {
      // The registry dropped the cluster or its nudge meanwhile.
      state.pending = undefined;
      settleIdle();
      return;
    }
    const wait = state.lastAt === undefined ? 0 : state.lastAt + nudge.minIntervalMs - timers.now();
    if (wait > 0) {
      state.cancelTimer = timers.after(wait, () => {
        state.cancelTimer = undefined;
        schedule(id);
      });
      return;
    }
    const range = state.pending;
    state.pending = undefined;
    state.lastAt = timers.now();
    state.inFlight = send(entry, sync, nudge, range, state.stats).finally(() => {
      state.inFlight = undefined;
      schedule(id);
      settleIdle();
    });
  }

  async function send(entry: ClusterEntry, sync: SyncRef, nudge: NudgeDecl, range: NudgeRange, stats: NudgeStats): Promise<void> {
    const fields = { cluster: entry.id, via: nudge.via, agent: sync.kind, tip: range.tip, commits: range.commits.length };
    try {
      const done = await sendNudge(entry, sync, nudge, range, deps);
      stats.sent += 1;
      metrics.nudges.inc({ cluster: entry.id, via: nudge.via, result: "sent" });
      logger.info({ ...fields, done }, "agent nudged");
    } catch (error) {
      stats.failed += 1;
      metrics.nudges.inc({ cluster: entry.id, via: nudge.via, result: "failed" });
      const target = nudge.via === "webhook" ? redact(nudge.url) : `${sync.namespace}/${sync.name}`;
      logger.warn({ ...fields, target, err: error }, "nudging the agent failed; its poll will pick the commit up");
    }
  }

  return {
    pushed(event, store) {
      if (closed) return;
      for (const [id, commits] of commitsByCluster(event.commits)) {
        const entry = options.clusters().find((c) => c.id === id);
        if (entry?.sync?.nudge === undefined) continue;
        const state = stateOf(id);
        if (state.pending === undefined || state.pending.store !== store) {
          // A push to another repository (the cluster moved to another store) is a range of its own.
          state.pending = { ...(store !== undefined ? { store } : {}), branch: event.branch, previous: event.previous, tip: event.tip, commits };
        } else {
          state.stats.folded += 1;
          metrics.nudges.inc({ cluster: id, via: entry.sync.nudge.via, result: "folded" });
          state.pending = { ...state.pending, tip: event.tip, commits: [...state.pending.commits, ...commits] };
        }
        schedule(id);
      }
    },
    stats() {
      return Object.fromEntries([...states].map(([id, s]) => [id, { ...s.stats }]));
    },
    idle() {
      if (!busy()) return Promise.resolve();
      return new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
    async close() {
      closed = true;
      for (const state of states.values()) {
        state.cancelTimer?.();
        state.cancelTimer = undefined;
        state.pending = undefined;
      }
      for (const s of states.values()) await s.inFlight;
      settleIdle();
    },
  };
}

/** The commits of a push per cluster directory they touch, each with its paths under it. */
export function commitsByCluster(commits: readonly PushedCommit[]): Map<string, PushedCommit[]> {
  const prefix = `${CLUSTERS_DIR}/`;
  const byCluster = new Map<string, PushedCommit[]>();
  for (const { commit, paths } of commits) {
    const mine = new Map<string, string[]>();
    for (const path of paths) {
      if (!path.startsWith(prefix)) continue;
      const id = path.slice(prefix.length).split("/", 1)[0]!;
      if (id === "") continue;
      mine.set(id, [...(mine.get(id) ?? []), path]);
    }
    for (const [id, own] of mine) byCluster.set(id, [...(byCluster.get(id) ?? []), { commit, paths: own }]);
  }
  return byCluster;
}
