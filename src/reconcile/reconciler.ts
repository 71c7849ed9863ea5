import { setTimeout as sleep } from "node:timers/promises";
import type { GitWriter } from "../gitwriter/index.js";
import { ClusterMovedError, ClusterMovingError } from "../errors/index.js";
import type { RoutedWriter } from "../stores/index.js";
import { progressReporter, type Logger } from "../log/index.js";
import { noopInstruments, type ReconcileInstruments } from "../metrics/index.js";
import { keyOf, readInstance } from "../repo/index.js";
import type { StatusWatcher } from "../status-watcher/index.js";
import type { RepoView } from "../catalog/index.js";
import { staleByOverrides, staleInstances } from "./catch-up.js";
import { createBatchFeeder } from "./batch-feeder.js";
import { createPlanInstancesCache, liveInstancesOfPlan, type PlanInstancesCache } from "./plan-instances.js";
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
  /** What the re-renders are decided from: the last fetched tips, their history, tip changes. */
  writer: GitWriter;
  /** Where a re-render is queued: the repository of its instance (ADR 0036). */
  routed: RoutedWriter;
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

/** Re-renders one instance; true when it had an operation in progress, or its cluster was moving between stores (to be tried again later). */
async function rerender(options: ReconcilerOptions, metrics: ReconcileInstruments, request: RerenderRequest): Promise<boolean> {
  const { routed, logger } = options;
  try {
    const { result, commit } = await routed.submit({ instance: request.instance }, rerenderOperation(options, request));
    metrics.rerenders.inc({ reason: request.reason, result: result === "rendered" && !commit ? "unchanged" : result });
    if (result === "busy") {
      logger.info({ instance: request.instance }, "re-render postponed: an operation is in progress");
      return true;
    }
    logger.info({ instance: request.instance, reason: request.reason, result, commit }, commit ? "re-rendered" : "re-render unchanged");
  } catch (e) {
    if (e instanceof ClusterMovingError || e instanceof ClusterMovedError) {
      metrics.rerenders.inc({ reason: request.reason, result: "busy" });
      logger.info({ instance: request.instance, err: e }, "re-render postponed: the instance's cluster is moving to another store");
      return true;
    }
    metrics.rerenders.inc({ reason: request.reason, result: "failed" });
    logger.error({ err: e, instance: request.instance, reason: request.reason }, "re-render failed");
  }
  return false;
}

/** Queues (`enqueue`) a re-render of what a new tip calls for: the live instances of the plans it changed, and the instances whose overrides it changed. */
async function enqueueTipChanges(
  { writer, logger }: ReconcilerOptions,
  planIds: PlanInstancesCache,
  tip: string,
  previous: string,
  enqueue: (request: RerenderRequest) => void,
): Promise<void> {
  const [next, old] = await Promise.all([writer.readerAt(tip), writer.readerAt(previous)]);
  if (!next || !old) return;
  const changes = await tipChanges(old, next);
  // The instances from the writer's whole view: with stores (ADR 0027) the tips diffed are the
  // control repository's, and the instances are in the stores.
  const instances = writer.snapshot();
  for (const plan of changes.plans) {
    const ids = await liveInstancesOfPlan(instances, plan.id, planIds);
    logger.info({ plan: plan.name, planId: plan.id, instances: ids.length, commit: tip }, "plan changed: re-rendering its instances");
    for (const instance of ids) enqueue({ instance, reason: "plan-changed", cause: tip });
  }
  for (const key of changes.overrideKeys) {
    // Overrides of an id that has no live instance (yet, or any more) wait for its next render.
    const record = await readInstance(instances, key);
    if (record && !record.status.deleted) enqueue({ instance: key, reason: "override-changed", cause: tip });
  }
}

/** The re-renders a start calls for (catchUp), one per instance: a plan change and an override alike re-render it all. */
async function staleRequests(options: ReconcilerOptions, planIds: PlanInstancesCache): Promise<RerenderRequest[]> {
  const { writer, logger } = options;
  const tip = writer.snapshot();
  const depth = options.catchUpDepth === undefined ? {} : { depth: options.catchUpDepth };
  const byPlan = await staleInstances({ reader: writer, tip, catalog: options.view.catalog(), planIds, logger, ...depth });
  const byOverrides = await staleByOverrides({ reader: writer, tip, logger, ...depth });
  const seen = new Set(byPlan.map((s) => keyOf(s.instance)));
  return [...byPlan, ...byOverrides.filter((s) => !seen.has(keyOf(s.instance)))].map((s) => ({ instance: s.instance, reason: s.reason, cause: s.cause }));
}

export function createReconciler(options: ReconcilerOptions): Reconciler {
  const { writer, logger, retryMs } = options;
  const metrics = options.metrics ?? noopInstruments.reconcile;
  const clock = options.clock ?? (() => performance.now());
  /** Aborted at close(): the pause between batches ends there, not after its length. */
  const closing = new AbortController();
  const closeSignalled = new Promise<void>((resolve) => closing.signal.addEventListener("abort", () => resolve(), { once: true }));
  const delay = options.delay ?? ((ms: number) => sleep(ms, undefined, { signal: closing.signal }).catch(() => undefined));
  const planIds = createPlanInstancesCache();
  /** By instance key: a second request for the same instance replaces the first. */
  const queue = createBatchFeeder<RerenderRequest>({
    batchSize: options.batchSize,
    maxPerSecond: options.maxPerSecond,
    clock,
    pause: (ms) => Promise.race([delay(ms), closeSignalled]),
    run: runOne,
    queued: (size) => metrics.queued.set(size),
    progress: () => progressReporter(logger, "re-rendering", { now: clock, ...(options.progressEveryMs ? { everyMs: options.progressEveryMs } : {}) }),
    ended: settle,
  });
  const retries = new Set<NodeJS.Timeout>();
  let diffs: Promise<void> = Promise.resolve();
  let closed = false;
  let idleWaiters: (() => void)[] = [];

  const busy = () => queue.busy() || retries.size > 0;
  const enqueue = (request: RerenderRequest) => queue.add(keyOf(request.instance), request);

  function settle(): void {
    if (busy()) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const w of waiters) w();
  }

  async function runOne(request: RerenderRequest): Promise<void> {
    if (!(await rerender(options, metrics, request))) return;
    const timer = setTimeout(() => {
      retries.delete(timer);
      enqueue(request);
      settle();
    }, retryMs);
    timer.unref();
    retries.add(timer);
  }

  async function drop(): Promise<void> {
    queue.clear();
    for (const t of retries) clearTimeout(t);
    retries.clear();
    await diffs;
    // What the diffs in flight queued meanwhile goes too.
    queue.clear();
    await queue.settled();
    settle();
  }

  return {
    async rerenderPlan(planId, reason, cause) {
      const ids = await liveInstancesOfPlan(writer.snapshot(), planId, planIds);
      for (const instance of ids) enqueue({ instance, reason, ...(cause ? { cause } : {}) });
      return ids.length;
    },
    catchUp() {
      // In the chain of tip diffs: idle() waits for it, and a tip seen meanwhile is diffed after.
      const run = diffs.then(async () => {
        const stale = await staleRequests(options, planIds);
        for (const request of stale) enqueue(request);
        return stale.length;
      });
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
        .then(() => enqueueTipChanges(options, planIds, tip, previous, enqueue))
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
      queue.close();
      closing.abort();
      await drop();
    },
  };
}
