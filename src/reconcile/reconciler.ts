import { setTimeout as sleep } from "node:timers/promises";
import type { GitWriter } from "../gitwriter/index.js";
import { progressReporter, type Logger } from "../log/index.js";
import { noopInstruments, type ReconcileInstruments } from "../metrics/index.js";
import { keyOf, readInstance } from "../repo/index.js";
import type { StatusWatcher } from "../status-watcher/index.js";
import type { RepoView } from "../catalog/index.js";
import { staleByOverrides, staleInstances } from "./catch-up.js";
import { createPlanInstancesCache, liveInstancesOfPlan } from "./plan-instances.js";
import { rerenderOperation, type RerenderReason, type RerenderRequest } from "./rerender.js";
import { tipChanges } from "./tip-changes.js";

/**
 * Reconciliation: repository changes (a plan with `autoUpdateInstances: true`, an instance's
 * overrides) and manual requests become re-render commits, one per instance.
 *
 * Re-renders go through the writer's queue like OSB operations, but from a low-priority feeder:
 * it keeps at most `batchSize` of them queued (they go out in one push) and submits at most
 * `maxPerSecond`, so an OSB request never waits behind more than one batch of a mass re-render.
 */

export interface ReconcilerOptions {
  writer: GitWriter;
  view: RepoView;
  status: Pick<StatusWatcher, "instanceStatus">;
  logger: Logger;
  /** The reconciler's instruments (default: record nothing). */
  metrics?: ReconcileInstruments;
  brokerVersion: string;
  maxPerSecond: number;
  batchSize: number;
  /** Wait before retrying an instance that had an operation in progress. */
  retryMs: number;
  /** How many catalog changes back catchUp looks for a plan's current version (default CATALOG_HISTORY_DEPTH). */
  catchUpDepth?: number;
  /** Monotonic milliseconds (default performance.now). */
  clock?: () => number;
  /** A mass re-render logs its progress (done, left) at most this often (default 5 s, by `clock`). */
  progressEveryMs?: number;
  delay?: (ms: number) => Promise<void>;
}

export interface Reconciler {
  /** Queue a re-render of every live instance of the plan (on the current tip); resolves with their number. */
  rerenderPlan(planId: string, reason: RerenderReason, cause?: string): Promise<number>;
  /** Queue a re-render of one instance (id or key); false when there is no such live instance. */
  rerenderInstance(instance: string, reason: RerenderReason, cause?: string): Promise<boolean>;
  /**
   * After a start: queue a re-render of the live instances of `autoUpdateInstances` plans that
   * changed while no broker applied the change (their objects predate the plan's current
   * version, see catch-up.ts), and of those whose overrides changed so; resolves with their
   * number. idle() waits for it too.
   */
  catchUp(): Promise<number>;
  /** The writer's onTip listener: diff the two tips and queue what they call for. */
  tipChanged(tip: string | null, previous: string | null): void;
  /** Resolves once no diff, re-render or retry is pending. */
  idle(): Promise<void>;
  /**
   * Drop what is queued and the pending retries (this replica stopped leading: the next leader's
   * catch-up finds what is left from Git); resolves when the re-renders in flight settled.
   */
  drop(): Promise<void>;
  /** Drop what is queued and pending retries, end the pause between batches; resolves when the re-renders in flight settled. */
  close(): Promise<void>;
}

export function createReconciler(options: ReconcilerOptions): Reconciler {
  const { writer, logger, batchSize, maxPerSecond, retryMs } = options;
  const metrics = options.metrics ?? noopInstruments.reconcile;
  const clock = options.clock ?? (() => performance.now());
  /** Aborted at close(): the pause between batches ends there, not after its length. */
  const closing = new AbortController();
  const closeSignalled = new Promise<void>((resolve) => closing.signal.addEventListener("abort", () => resolve(), { once: true }));
  const delay = options.delay ?? ((ms: number) => sleep(ms, undefined, { signal: closing.signal }).catch(() => undefined));
  const planIds = createPlanInstancesCache();
  /** By instance key: a second request for the same instance replaces the first. */
  const queue = new Map<string, RerenderRequest>();
  const retries = new Set<NodeJS.Timeout>();
  let diffs: Promise<void> = Promise.resolve();
  let feeding: Promise<void> | undefined;
  let closed = false;
  let idleWaiters: (() => void)[] = [];

  function busy(): boolean {
    return queue.size > 0 || feeding !== undefined || retries.size > 0;
  }

  function settle(): void {
    if (busy()) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const w of waiters) w();
  }

  function enqueue(request: RerenderRequest): void {
    if (closed) return;
    queue.set(keyOf(request.instance), request);
    metrics.queued.set(queue.size);
    kick();
  }

  /**
   * Starts the feeder unless it runs. In a microtask, so that requests queued in one go fill
   * whole batches; and again when it ends, for what was queued after its last look.
   */
  function kick(): void {
    if (feeding || closed || queue.size === 0) return;
    feeding = Promise.resolve()
      .then(feed)
      .finally(() => {
        feeding = undefined;
        kick();
        settle();
      });
  }

  async function runOne(request: RerenderRequest): Promise<void> {
    try {
      const { result, commit } = await writer.submit(rerenderOperation(options, request));
      metrics.rerenders.inc({ reason: request.reason, result: result === "rendered" && !commit ? "unchanged" : result });
      if (result === "busy") {
        logger.info({ instance: request.instance }, "re-render postponed: an operation is in progress");
        const timer = setTimeout(() => {
          retries.delete(timer);
          enqueue(request);
          settle();
        }, retryMs);
        timer.unref();
        retries.add(timer);
      } else {
        logger.info({ instance: request.instance, reason: request.reason, result, commit }, commit ? "re-rendered" : "re-render unchanged");
      }
    } catch (e) {
      metrics.rerenders.inc({ reason: request.reason, result: "failed" });
      logger.error({ err: e, instance: request.instance, reason: request.reason }, "re-render failed");
    }
  }

  async function feed(): Promise<void> {
    const report = progressReporter(logger, "re-rendering", { now: clock, ...(options.progressEveryMs ? { everyMs: options.progressEveryMs } : {}) });
    let done = 0;
    while (queue.size > 0 && !closed) {
      const batch: RerenderRequest[] = [];
      for (const [key, request] of queue) {
        queue.delete(key);
        if (batch.push(request) === batchSize) break;
      }
      metrics.queued.set(queue.size);
      const started = clock();
      await Promise.all(batch.map(runOne));
      done += batch.length;
      report({ done, left: queue.size });
      const wait = (batch.length * 1000) / maxPerSecond - (clock() - started);
      if (wait > 0 && queue.size > 0) await Promise.race([delay(wait), closeSignalled]);
    }
  }

  async function rerenderPlan(planId: string, reason: RerenderReason, cause?: string): Promise<number> {
    const ids = await liveInstancesOfPlan(writer.snapshot(), planId, planIds);
    for (const instance of ids) enqueue({ instance, reason, ...(cause ? { cause } : {}) });
    return ids.length;
  }

  async function handleTip(tip: string, previous: string): Promise<void> {
    const [next, old] = await Promise.all([writer.readerAt(tip), writer.readerAt(previous)]);
    if (!next || !old) return;
    const changes = await tipChanges(old, next);
    for (const plan of changes.plans) {
      const ids = await liveInstancesOfPlan(next, plan.id, planIds);
      logger.info({ plan: plan.name, planId: plan.id, instances: ids.length, commit: tip }, "plan changed: re-rendering its instances");
      for (const instance of ids) enqueue({ instance, reason: "plan-changed", cause: tip });
    }
    for (const key of changes.overrideKeys) {
      // Overrides of an id that has no live instance (yet, or any more) wait for its next render.
      const record = await readInstance(next, key);
      if (record && !record.status.deleted) enqueue({ instance: key, reason: "override-changed", cause: tip });
    }
  }

  async function catchUp(): Promise<number> {
    const tip = writer.snapshot();
    const depth = options.catchUpDepth === undefined ? {} : { depth: options.catchUpDepth };
    const byPlan = await staleInstances({ reader: writer, tip, catalog: options.view.catalog(), planIds, logger, ...depth });
    const byOverrides = await staleByOverrides({ reader: writer, tip, logger, ...depth });
    // One request per instance (the queue is keyed by instance): a plan change and an override alike re-render it all.
    const seen = new Set(byPlan.map((s) => keyOf(s.instance)));
    const stale = [...byPlan, ...byOverrides.filter((s) => !seen.has(keyOf(s.instance)))];
    for (const s of stale) enqueue({ instance: s.instance, reason: s.reason, cause: s.cause });
    return stale.length;
  }

  async function drop(): Promise<void> {
    queue.clear();
    metrics.queued.set(0);
    for (const t of retries) clearTimeout(t);
    retries.clear();
    await diffs;
    // What the diffs in flight queued meanwhile goes too.
    queue.clear();
    metrics.queued.set(0);
    await feeding;
    settle();
  }

  return {
    rerenderPlan,
    catchUp() {
      // In the chain of tip diffs: idle() waits for it, and a tip seen meanwhile is diffed after.
      const run = diffs.then(catchUp);
      diffs = run.then(
        () => undefined,
        (e: unknown) => logger.error({ err: e }, "catching up after the start failed"),
      );
      return run;
    },
    async rerenderInstance(instance, reason, cause) {
      const record = await readInstance(writer.snapshot(), instance);
      if (!record || record.status.deleted) return false;
      enqueue({ instance, reason, ...(cause ? { cause } : {}) });
      return true;
    },
    tipChanged(tip, previous) {
      if (tip === null || previous === null || closed) return;
      diffs = diffs
        .then(() => handleTip(tip, previous))
        .catch((e: unknown) => logger.error({ err: e, tip, previous }, "reconciling a new tip failed"));
    },
    async idle() {
      // A diff may queue re-renders, and a retry may come due while we wait: look again each time.
      for (;;) {
        await diffs;
        if (!busy()) return;
        await new Promise<void>((resolve) => idleWaiters.push(resolve));
      }
    },
    drop,
    async close() {
      closed = true;
      closing.abort();
      await drop();
    },
  };
}
