import type { ClusterEntry, Plan } from "../catalog/index.js";
import { RenderPending } from "../errors/index.js";
import type { BindingRecord, InstanceRecord, OperationEntry } from "../repo/index.js";
import { createAppliedIndex } from "./applied-index.js";
import { createCommitStatusWatcher } from "./commit-mode.js";
import { createKubeConfigResolver } from "./kubeconfig.js";
import { isNotReady, startLiveCluster, type LiveCluster } from "./live-cluster.js";
import { bindResponse, evaluate, isRendering, prepare, sourceKinds, type Prepared, type Subject } from "./live-status.js";
import type { BindingOutcome, BindingResult, OperationStatus, StatusWatcher, StatusWatcherOptions } from "./types.js";

/**
 * The status watcher of both modes, chosen per cluster (`spec.status.mode`, else the default).
 * Live clusters are started for the registry's live entries and stopped when they leave it or
 * their kubeconfig / sync reference changes. Answers are memoized per operation until something
 * on its cluster changes, and kept for good once succeeded or failed (OSB states are final), so
 * a poll costs a map lookup and no Kubernetes API request.
 */

const TERMINAL_LIMIT = 200_000;
const MEMO_LIMIT = 100_000;
/** A bind waiting for its credentials also looks again this often (a cluster can fail silently). */
const BIND_RECHECK_MS = 500;

interface Memo {
  version: number;
  catalog: unknown;
  problem: string | undefined;
  /** Until the maximum_polling_duration deadline (epoch ms). */
  until: number | undefined;
  status: OperationStatus;
  clusterId: string;
  record: { instanceId: string; bindingId?: string };
}

type Resolved = { commit: true } | { status: OperationStatus } | { subject: Subject; key: string };

function setBounded<K, V>(map: Map<K, V>, key: K, value: V, limit: number): void {
  if (!map.has(key) && map.size >= limit) map.delete(map.keys().next().value as K);
  map.set(key, value);
}

const signature = (e: ClusterEntry) => JSON.stringify([e.namespace, e.kubeconfig ?? null, e.sync ?? null]);

/**
 * When the plan's maximum_polling_duration ends for `operation`: counted from its acknowledgement
 * (the 202 the platform counts from), known when this process gave it; otherwise from the
 * receipt plus the longest a request waits for its push, so never before the platform's deadline.
 */
function deadlineOf(plan: Plan, operation: OperationEntry, acknowledgedAt: number | undefined, boundMs: number): number | undefined {
  const seconds = plan.maximumPollingDuration;
  const at = Date.parse(operation.at);
  if (seconds === undefined || !Number.isFinite(at)) return undefined;
  return Math.max(at, acknowledgedAt ?? at + boundMs) + seconds * 1000;
}

export function createStatusWatcher(options: StatusWatcherOptions): StatusWatcher {
  const { view, writer, defaultMode } = options;
  const log = options.logger;
  const now = options.now ?? (() => new Date());
  const bindTimeoutMs = options.bindTimeoutMs ?? 10_000;
  const syncTimeoutMs = options.syncTimeoutMs ?? 60_000;
  const acknowledgeBoundMs = options.acknowledgeBoundMs ?? 0;
  const settleTimeoutMs = options.settleTimeoutMs ?? bindTimeoutMs;
  /** Operation id -> when this process acknowledged it (epoch ms of `now`). */
  const acknowledgements = new Map<string, number>();
  const clusterDeps = {
    kubeConfigFor: options.kubeConfigFor ?? createKubeConfigResolver(),
    logger: log,
    ...(options.metrics ? { metrics: options.metrics } : {}),
    ...(options.delay ? { delay: options.delay } : {}),
    ...(options.random ? { random: options.random } : {}),
    ...(options.relistIntervalMs ? { relistIntervalMs: options.relistIntervalMs } : {}),
  };
  const commit = createCommitStatusWatcher();
  const clusters = new Map<string, { signature: string; live: LiveCluster }>();
  const index = createAppliedIndex({
    writer,
    logger: log,
    onLoaded: () => {
      for (const c of clusters.values()) c.live.touch();
    },
  });
  const terminal = new Map<string, OperationStatus>();
  const memo = new Map<string, Memo>();
  const prepared = new Map<string, { catalog: unknown; prepared: Prepared }>();
  const results = new Map<string, { version: number; catalog: unknown; result: BindingResult }>();
  let knownEntries: readonly ClusterEntry[] | undefined;
  let closed = false;

  const modeOf = (entry: ClusterEntry) => entry.statusMode ?? defaultMode;

  function startCluster(entry: ClusterEntry): LiveCluster {
    const live = startLiveCluster(entry, clusterDeps);
    // A newly applied revision: read the records of the operations waiting for it right away.
    let revision: string | undefined;
    live.onChange(() => {
      const sync = live.sync();
      if (isNotReady(sync) || sync.appliedRevision === undefined || sync.appliedRevision === revision) return;
      revision = sync.appliedRevision;
      for (const m of memo.values()) if (m.clusterId === entry.id) index.prefetch(revision, m.record);
    });
    return live;
  }

  /** Starts and stops live clusters to match the registry (when it changed since last time). */
  function reconcile(): void {
    const entries = view.clusters();
    if (entries === knownEntries || closed) return;
    knownEntries = entries;
    const wanted = new Map(entries.filter((e) => modeOf(e) === "live").map((e) => [e.id, e]));
    for (const [id, c] of clusters) {
      const entry = wanted.get(id);
      if (entry && signature(entry) === c.signature) continue;
      clusters.delete(id);
      c.live.stop().catch((error: unknown) => log.error({ err: error, cluster: id }, "stopping a cluster's watches failed"));
    }
    for (const entry of wanted.values()) {
      if (!clusters.has(entry.id)) clusters.set(entry.id, { signature: signature(entry), live: startCluster(entry) });
    }
    warmUp();
  }

  /** Watches what the plans' statuses read on every live cluster, before the first request needs it. */
  let warmed: { catalog: unknown; clusters: unknown } | undefined;
  function warmUp(): void {
    const catalog = view.catalog();
    if (warmed?.catalog === catalog && warmed.clusters === knownEntries) return;
    warmed = { catalog, clusters: knownEntries };
    const plans = catalog.services.flatMap((service) => service.plans.map((plan) => ({ service, plan })));
    for (const { live } of clusters.values()) {
      const kinds = sourceKinds(plans, live.entry.id, live.entry.namespace);
      live.watch("owned", kinds);
      live.watch("foreign", kinds);
    }
  }

  function resolve(instance: InstanceRecord, binding: BindingRecord | undefined, operation: OperationEntry): Resolved {
    reconcile();
    warmUp();
    const clusterId = instance.spec.clusterId;
    const entry = view.clusters().find((c) => c.id === clusterId);
    if (!entry) {
      if (defaultMode === "commit") return { commit: true };
      return { status: { state: "in progress", description: `instance ${instance.spec.instanceId} is placed on cluster ${clusterId}, which is not in the cluster registry` } };
    }
    const cluster = clusters.get(clusterId)?.live;
    if (modeOf(entry) === "commit" || !cluster) return { commit: true };
    const service = view.catalog().serviceById(instance.spec.serviceId);
    const plan = service?.plans.find((p) => p.id === instance.spec.planId);
    if (!service || !plan) {
      return { status: { state: "in progress", description: `plan ${instance.spec.planId} of instance ${instance.spec.instanceId} is not in the catalog` } };
    }
    const key = binding
      ? `b ${instance.spec.instanceId} ${binding.spec.bindingId} ${operation.id}`
      : `i ${instance.spec.instanceId} ${operation.id}`;
    return { subject: { instance, operation, service, plan, cluster, ...(binding ? { binding } : {}) }, key };
  }

  function preparedFor(key: string, subject: Subject): Prepared {
    const catalog = view.catalog();
    const hit = prepared.get(key);
    if (hit?.catalog === catalog) return hit.prepared;
    const fresh = prepare(subject);
    if (!(fresh.sources instanceof RenderPending)) setBounded(prepared, key, { catalog, prepared: fresh }, MEMO_LIMIT);
    return fresh;
  }

  function liveStatus(subject: Subject, key: string): OperationStatus {
    const final = terminal.get(key);
    if (final) return final;
    const { cluster, plan, operation } = subject;
    const version = cluster.version();
    const catalog = view.catalog();
    const problem = cluster.problem();
    const t = now().getTime();
    const hit = memo.get(key);
    if (hit && hit.version === version && hit.catalog === catalog && hit.problem === problem && (hit.until === undefined || t < hit.until)) {
      return hit.status;
    }
    let status = evaluate(subject, () => preparedFor(key, subject), index);
    const deadline = deadlineOf(plan, operation, acknowledgements.get(operation.id), acknowledgeBoundMs);
    if (status.state === "in progress" && !status.provisional && deadline !== undefined && t >= deadline) {
      status = {
        state: "failed",
        description: `${operation.action} did not finish within the plan's maximum_polling_duration (${plan.maximumPollingDuration} s): ${status.description}`,
      };
    }
    if (isRendering(status)) return status;
    if (status.state === "in progress") {
      const record = { instanceId: subject.instance.spec.instanceId, ...(subject.binding ? { bindingId: subject.binding.spec.bindingId } : {}) };
      setBounded(memo, key, { version, catalog, problem, until: deadline, status, clusterId: cluster.entry.id, record }, MEMO_LIMIT);
    } else {
      memo.delete(key);
      // A binding's prepared templates still serve its credentials (bindingResult).
      if (!subject.binding) prepared.delete(key);
      setBounded(terminal, key, status, TERMINAL_LIMIT);
      log.info({ cluster: cluster.entry.id, instanceId: subject.instance.spec.instanceId, operation: operation.id, state: status.state }, "operation finished");
    }
    return status;
  }

  function nextChange(live: LiveCluster, ms: number): Promise<void> {
    return new Promise((done) => {
      const timer = setTimeout(finish, ms);
      const off = live.onChange(finish);
      function finish(): void {
        clearTimeout(timer);
        off();
        done();
      }
    });
  }

  /**
   * The one polling loop of the waits (a synchronous bind, a synchronous operation, settling a
   * provisional answer): `step` on every change of the instance's cluster (and every
   * BIND_RECHECK_MS), until it is done, `timeoutMs` passed, the cluster is gone or the watcher is
   * closed; then what it last said while pending.
   */
  async function poll<R>(clusterId: string, timeoutMs: number, step: () => { done: R } | { pending: R }): Promise<R> {
    const started = performance.now();
    for (;;) {
      const outcome = step();
      if ("done" in outcome) return outcome.done;
      const left = timeoutMs - (performance.now() - started);
      const live = clusters.get(clusterId)?.live;
      if (left <= 0 || !live || closed) return outcome.pending;
      await nextChange(live, Math.min(left, BIND_RECHECK_MS));
    }
  }

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
      const version = r.subject.cluster.version();
      const catalog = view.catalog();
      const hit = results.get(r.key);
      if (hit?.version === version && hit.catalog === catalog) return hit.result;
      const result = bindResponse(r.subject, preparedFor(r.key, r.subject));
      setBounded(results, r.key, { version, catalog, result }, MEMO_LIMIT);
      return result;
    },
    awaitBinding(instance, binding, operation) {
      return poll<BindingOutcome>(instance.spec.clusterId, bindTimeoutMs, () => {
        const status = watcher.bindingStatus(instance, binding, operation);
        if (status.state === "succeeded") return { done: { state: "succeeded", result: watcher.bindingResult(instance, binding) } };
        const description = status.description ?? `${operation.action} ${status.state}`;
        return status.state === "failed" ? { done: { state: "failed", description } } : { pending: { state: "in progress", description } };
      });
    },
    observing() {
      reconcile();
      return clusters.size > 0;
    },
    awaitInstance(instance, operation) {
      return poll<OperationStatus>(instance.spec.clusterId, syncTimeoutMs, () => {
        const status = watcher.instanceStatus(instance, operation);
        return status.state === "in progress" ? { pending: status } : { done: status };
      });
    },
    settle(instance, binding, operation) {
      return poll<undefined>(instance.spec.clusterId, settleTimeoutMs, () => {
        const status = binding ? watcher.bindingStatus(instance, binding, operation) : watcher.instanceStatus(instance, operation);
        return status.provisional ? { pending: undefined } : { done: undefined };
      });
    },
    acknowledged(operationId) {
      setBounded(acknowledgements, operationId, now().getTime(), TERMINAL_LIMIT);
    },
    async close() {
      closed = true;
      const stopping = [...clusters.values()].map((c) => c.live.stop());
      clusters.clear();
      await Promise.all(stopping);
    },
  };
  reconcile();
  return watcher;
}
