import type { ClusterEntry } from "../catalog/index.js";
import { RenderPending } from "../errors/index.js";
import type { BindingRecord, InstanceRecord, OperationEntry } from "../repo/index.js";
import { createAppliedIndex, type RecordRef } from "./applied-index.js";
import { createCommitStatusWatcher } from "./commit-mode.js";
import { deadlineOf, pastDeadline } from "./deadline.js";
import { createKubeConfigResolver } from "../kube/index.js";
import { isNotReady, startLiveCluster, type LiveCluster, type LiveClusterDeps } from "./live-cluster.js";
import { createLiveClusters } from "./live-clusters.js";
import { bindResponse, evaluate, isRendering, prepare, type Prepared, type Subject } from "./live-status.js";
import { createMemo } from "./memo.js";
import { resolveSubject } from "./operation-subject.js";
import type { BindingResult, OperationStatus, StatusWatcher, StatusWatcherOptions } from "./types.js";
import { bindStep, poll } from "./waits.js";

/**
 * The status watcher of both modes, chosen per cluster (`spec.status.mode`, else the default).
 * Live clusters are started for the registry's live entries and stopped when they leave it or
 * their kubeconfig / sync reference changes (live-clusters.ts). Answers are memoized per operation
 * until something on its cluster changes, and kept for good once succeeded or failed (OSB states
 * are final), so a poll costs a map lookup and no Kubernetes API request.
 */

const TERMINAL_LIMIT = 200_000;
const MEMO_LIMIT = 100_000;
/** A final status depends on nothing: it is kept for good. */
const FINAL: readonly unknown[] = [];

/** An operation in progress: its status, until when it holds (the deadline), and what to read when its cluster applies a revision. */
interface InProgress {
  status: OperationStatus;
  until: number | undefined;
  clusterId: string;
  record: RecordRef;
}

const recordOf = (s: Subject): RecordRef => ({ instanceId: s.instance.spec.instanceId, ...(s.binding ? { bindingId: s.binding.spec.bindingId } : {}) });

/** What the live clusters are started with. */
function clusterDepsOf(options: StatusWatcherOptions): LiveClusterDeps {
  return {
    kubeConfigFor: options.kubeConfigFor ?? createKubeConfigResolver(),
    logger: options.logger,
    ...(options.metrics ? { metrics: options.metrics } : {}),
    ...(options.delay ? { delay: options.delay } : {}),
    ...(options.random ? { random: options.random } : {}),
    ...(options.relistIntervalMs ? { relistIntervalMs: options.relistIntervalMs } : {}),
  };
}

/** Calls `applied` with each revision the cluster's sync object reports applied, once each time it changes. */
function onAppliedRevision(live: LiveCluster, applied: (revision: string) => void): void {
  let revision: string | undefined;
  live.onChange(() => {
    const sync = live.sync();
    if (isNotReady(sync) || sync.appliedRevision === undefined || sync.appliedRevision === revision) return;
    revision = sync.appliedRevision;
    applied(revision);
  });
}

export function createStatusWatcher(options: StatusWatcherOptions): StatusWatcher {
  const { view, writer, defaultMode } = options;
  const log = options.logger;
  const now = options.now ?? (() => new Date());
  const bindTimeoutMs = options.bindTimeoutMs ?? 10_000;
  const syncTimeoutMs = options.syncTimeoutMs ?? 60_000;
  const acknowledgeBoundMs = options.acknowledgeBoundMs ?? 0;
  const settleTimeoutMs = options.settleTimeoutMs ?? bindTimeoutMs;
  const clusterDeps = clusterDepsOf(options);
  const commit = createCommitStatusWatcher();
  /** Operation id -> when this process acknowledged it (epoch ms of `now`). */
  const acknowledgements = createMemo<number>(TERMINAL_LIMIT);
  /** The caches of computed results, by operation (resolveSubject's key): each valid for the inputs it was computed from. */
  const terminal = createMemo<OperationStatus>(TERMINAL_LIMIT);
  const inProgress = createMemo<InProgress>(MEMO_LIMIT);
  const prepared = createMemo<Prepared>(MEMO_LIMIT);
  const results = createMemo<BindingResult>(MEMO_LIMIT);
  const clusters = createLiveClusters({ view, defaultMode, logger: log, start: startCluster });
  const index = createAppliedIndex({
    writer,
    logger: log,
    onLoaded: () => {
      for (const live of clusters.values()) live.touch();
    },
  });

  function startCluster(entry: ClusterEntry): LiveCluster {
    const live = startLiveCluster(entry, clusterDeps);
    // A newly applied revision: read the records of the operations waiting for it right away.
    onAppliedRevision(live, (revision) => {
      for (const m of inProgress.values()) if (m.clusterId === entry.id) index.prefetch(revision, m.record);
    });
    return live;
  }

  function resolve(instance: InstanceRecord, binding: BindingRecord | undefined, operation: OperationEntry) {
    clusters.reconcile();
    clusters.warmUp();
    return resolveSubject(view, defaultMode, (id) => clusters.get(id), instance, binding, operation);
  }

  const preparedFor = (key: string, subject: Subject): Prepared =>
    prepared.through(key, [view.catalog()], () => prepare(subject), (fresh) => !(fresh.sources instanceof RenderPending));

  function liveStatus(subject: Subject, key: string): OperationStatus {
    const final = terminal.get(key, FINAL);
    if (final) return final;
    const { cluster, plan, operation } = subject;
    const inputs = [cluster.version(), view.catalog(), cluster.problem()];
    const t = now().getTime();
    const hit = inProgress.get(key, inputs);
    if (hit && (hit.until === undefined || t < hit.until)) return hit.status;
    const until = deadlineOf(plan, operation, acknowledgements.get(operation.id, FINAL), acknowledgeBoundMs);
    const status = pastDeadline(evaluate(subject, () => preparedFor(key, subject), index), plan, operation, until, t);
    if (isRendering(status)) return status;
    if (status.state === "in progress") {
      inProgress.set(key, inputs, { status, until, clusterId: cluster.entry.id, record: recordOf(subject) });
      return status;
    }
    inProgress.delete(key);
    // A binding's prepared templates still serve its credentials (bindingResult).
    if (!subject.binding) prepared.delete(key);
    terminal.set(key, FINAL, status);
    log.info({ cluster: cluster.entry.id, instanceId: subject.instance.spec.instanceId, operation: operation.id, state: status.state }, "operation finished");
    return status;
  }

  const watchedLive = (clusterId: string) => () => clusters.get(clusterId);

  const watcher: StatusWatcher = {
    mode: defaultMode,
    instanceStatus(instance, operation) {
      const r = resolve(instance, undefined, operation);
      if ("commit" in r) return commit.instanceStatus(instance, operation);
      return "status" in r ? r.status : liveStatus(r.subject, r.key);
    },
    bindingStatus(instance, binding, operation) {
      const r = resolve(instance, binding, operation);
      if ("commit" in r) return commit.bindingStatus(instance, binding, operation);
      return "status" in r ? r.status : liveStatus(r.subject, r.key);
    },
    bindingResult(instance, binding) {
      // An imported binding's `import` entry stands for the bind Service Fabrik made.
      const bind = binding.status.operations.findLast((o) => o.action === "bind" || o.action === "import");
      if (!bind) return {};
      const r = resolve(instance, binding, bind);
      if (!("subject" in r)) return {};
      return results.through(r.key, [r.subject.cluster.version(), view.catalog()], () => bindResponse(r.subject, preparedFor(r.key, r.subject)));
    },
    awaitBinding(instance, binding, operation) {
      return poll(watchedLive(instance.spec.clusterId), bindTimeoutMs, () =>
        bindStep(watcher.bindingStatus(instance, binding, operation), operation, () => watcher.bindingResult(instance, binding)),
      );
    },
    observing() {
      clusters.reconcile();
      return clusters.size > 0;
    },
    awaitInstance(instance, operation) {
      return poll<OperationStatus>(watchedLive(instance.spec.clusterId), syncTimeoutMs, () => {
        const status = watcher.instanceStatus(instance, operation);
        return status.state === "in progress" ? { pending: status } : { done: status };
      });
    },
    settle(instance, binding, operation) {
      return poll<undefined>(watchedLive(instance.spec.clusterId), settleTimeoutMs, () => {
        const status = binding ? watcher.bindingStatus(instance, binding, operation) : watcher.instanceStatus(instance, operation);
        return status.provisional ? { pending: undefined } : { done: undefined };
      });
    },
    acknowledged(operationId) {
      acknowledgements.set(operationId, FINAL, now().getTime());
    },
    close: () => clusters.close(),
  };
  clusters.reconcile();
  return watcher;
}
