import { InvalidArgumentError } from "../errors/index.js";
import type { GitWriter, Operation, TreeReader } from "../gitwriter/index.js";
import type { Logger } from "../log/index.js";
import { noopInstruments, type RecordsInstruments } from "../metrics/index.js";
import {
  brokerTrailers,
  createFoldCache,
  foldInstances,
  instanceRecordDir,
  latestOperation,
  readInstance,
  RECORDS_GC_REASON,
  type FoldCache,
  type FoldSpec,
  type InstanceRecord,
} from "../repo/index.js";
import type { StatusWatcher } from "../status-watcher/index.js";

/**
 * Records GC (ADR 0018): the record of an instance whose newest operation is a completed
 * deprovision older than the retention period is removed from the tip, its directory with its
 * binding records. Git keeps it in history.
 *
 * A sibling of the reconciler: a timer scans the records (a fold memoized by tree oid, so a scan
 * after a few commits re-reads a few buckets) and submits one queued operation for at most
 * `batchSize` of them, at most one per interval, so an OSB request waits behind one small GC
 * commit at most. The operation decides again on its draft (the remote tip it will be pushed
 * onto): a record re-provisioned or changed since the scan is left alone.
 */

const DAY_MS = 86_400_000;

export interface RecordsCollectorOptions {
  writer: Pick<GitWriter, "snapshot" | "submit">;
  /** "Completed": the deprovision is not in progress (in live mode, the cluster says so). */
  status: Pick<StatusWatcher, "instanceStatus">;
  logger: Logger;
  /** The collector's instruments (default: record nothing). */
  metrics?: RecordsInstruments;
  brokerVersion: string;
  /** Days after its deprovision a record is removed; 0 keeps records forever (scans only count them). */
  retentionDays: number;
  /** Time between two passes (one commit at most each). */
  intervalMs: number;
  /** Records one commit removes at most. */
  batchSize: number;
  /** Wall clock the retention is measured on, against the operations' `at` (default: the system's). */
  now?: () => Date;
  /** Waits between passes (default: setTimeout); aborted by close. */
  delay?: (ms: number, signal: AbortSignal) => Promise<void>;
}

export interface RecordsCollector {
  /** Start the timer: a pass every interval until stop or close. */
  start(): void;
  /** Stop the timer (start may start it again); resolves once the pass in flight (if any) settled. */
  stop(): Promise<void>;
  /** One pass now (what the timer runs): scan, then at most one commit. Resolves with the ids removed. */
  collect(): Promise<string[]>;
  /** Stop the timer; resolves once the pass in flight (if any) settled. */
  close(): Promise<void>;
}

/** A deleted record as the scan sees it. */
interface DeletedRecord {
  instanceId: string;
  clusterId: string;
  /** Epoch ms of its newest operation when that is a deprovision; NaN otherwise. */
  deprovisionedAt: number;
}

type Deleted = readonly DeletedRecord[];

const NONE: Deleted = [];

const DELETED: FoldSpec<Deleted> = {
  empty: NONE,
  ofRecord(record) {
    if (!record.deleted) return NONE;
    const op = record.operations.at(-1);
    return [{ instanceId: record.instanceId, clusterId: record.clusterId, deprovisionedAt: op?.action === "deprovision" ? Date.parse(op.at) : Number.NaN }];
  },
  merge(parts) {
    const nonEmpty = parts.filter((p) => p.length > 0);
    return nonEmpty.length === 0 ? NONE : nonEmpty.length === 1 ? nonEmpty[0]! : nonEmpty.flat();
  },
};

/** Whether `record` is one to remove: deleted, its newest operation a completed deprovision before `cutoff` (epoch ms). */
function collectable(record: InstanceRecord | null, cutoff: number, status: RecordsCollectorOptions["status"]): record is InstanceRecord {
  if (!record?.status.deleted) return false;
  const op = latestOperation(record.status.operations);
  if (op?.action !== "deprovision" || !(Date.parse(op.at) < cutoff)) return false;
  return status.instanceStatus(record, op).state !== "in progress";
}

/** `2026-08-27T15:12:00Z`: the cutoff as the subject shows it. */
function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

interface GcRequest {
  ids: readonly string[];
  cutoff: number;
  retentionDays: number;
}

/**
 * Removes the records of `ids` that are still collectable on the draft. A pure function of the
 * draft (it may run again on a fetched tip): the cutoff is fixed when the pass starts.
 */
function gcOperation(options: RecordsCollectorOptions, { ids, cutoff, retentionDays }: GcRequest): Operation<string[]> {
  return async (draft) => {
    const removed: string[] = [];
    for (const id of ids) {
      if (!collectable(await readInstance(draft, id), cutoff, options.status)) continue;
      draft.remove(instanceRecordDir(id));
      removed.push(id);
    }
    if (removed.length === 0) return { commit: null, result: [] };
    const records = removed.length === 1 ? "1 record" : `${removed.length} records`;
    return {
      commit: {
        subject: `gc: remove ${records} of instances deprovisioned before ${isoSeconds(cutoff)}`,
        trailers: brokerTrailers({ reason: RECORDS_GC_REASON, retentionDays, instanceIds: removed, brokerVersion: options.brokerVersion }),
      },
      result: removed,
    };
  };
}

export function createRecordsCollector(options: RecordsCollectorOptions): RecordsCollector {
  const { writer, logger, status, retentionDays, intervalMs, batchSize } = options;
  if (!(Number.isInteger(retentionDays) && retentionDays >= 0)) throw new InvalidArgumentError(`retentionDays must be an integer >= 0, got ${retentionDays}`);
  if (!(intervalMs > 0)) throw new InvalidArgumentError(`intervalMs must be > 0, got ${intervalMs}`);
  if (!(Number.isInteger(batchSize) && batchSize >= 1)) throw new InvalidArgumentError(`batchSize must be an integer >= 1, got ${batchSize}`);
  const metrics = options.metrics ?? noopInstruments.records;
  const now = options.now ?? (() => new Date());
  const delay =
    options.delay ??
    ((ms: number, signal: AbortSignal) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        timer.unref();
        signal.addEventListener("abort", () => {
          clearTimeout(timer);
          resolve();
        });
      }));
  const cache: FoldCache<Deleted> = createFoldCache(100_000);
  /** The timer's loop while started; stop() aborts it, start() makes a new one. */
  let loop: { stop: AbortController; done: Promise<void> } | undefined;
  let closed = false;
  let running: Promise<string[]> | undefined;

  function countByCluster(deleted: Deleted): void {
    const counts = new Map<string, number>();
    for (const d of deleted) counts.set(d.clusterId, (counts.get(d.clusterId) ?? 0) + 1);
    metrics.deleted.reset();
    for (const [cluster, n] of counts) metrics.deleted.set(n, { cluster });
  }

  /** Up to batchSize collectable records of `tree`, oldest deprovision first. */
  async function pick(tree: TreeReader, deleted: Deleted, cutoff: number): Promise<string[]> {
    const due = deleted.filter((d) => d.deprovisionedAt < cutoff);
    due.sort((a, b) => a.deprovisionedAt - b.deprovisionedAt || (a.instanceId < b.instanceId ? -1 : a.instanceId > b.instanceId ? 1 : 0));
    const picked: string[] = [];
    for (const d of due) {
      if (picked.length === batchSize) break;
      // The scan read only the fields of the fold; the status needs the whole record.
      if (collectable(await readInstance(tree, d.instanceId), cutoff, status)) picked.push(d.instanceId);
    }
    return picked;
  }

  async function pass(): Promise<string[]> {
    const tree = writer.snapshot();
    const deleted = await foldInstances(tree, DELETED, cache);
    countByCluster(deleted);
    if (retentionDays === 0) return [];
    const cutoff = now().getTime() - retentionDays * DAY_MS;
    const ids = await pick(tree, deleted, cutoff);
    if (ids.length === 0) return [];
    const { result: removed, commit } = await writer.submit(gcOperation(options, { ids, cutoff, retentionDays }));
    if (removed.length > 0) {
      metrics.collected.inc(undefined, removed.length);
      logger.info({ commit, records: removed.length, skipped: ids.length - removed.length, retentionDays, before: isoSeconds(cutoff) }, "records GC removed records of deprovisioned instances");
    } else {
      logger.info({ skipped: ids.length }, "records GC: the records picked changed before the commit; none removed");
    }
    return removed;
  }

  function collect(): Promise<string[]> {
    // One pass at a time: a manual pass during the timer's waits for it.
    const next = (running ?? Promise.resolve([])).catch(() => []).then(pass);
    running = next;
    return next.finally(() => {
      if (running === next) running = undefined;
    });
  }

  async function stop(): Promise<void> {
    const current = loop;
    loop = undefined;
    current?.stop.abort();
    await current?.done;
    await running?.catch(() => undefined);
  }

  return {
    start() {
      if (loop || closed) return;
      const stop = new AbortController();
      const stopped = new Promise<void>((resolve) => stop.signal.addEventListener("abort", () => resolve(), { once: true }));
      const done = (async () => {
        for (;;) {
          await Promise.race([delay(intervalMs, stop.signal), stopped]);
          if (stop.signal.aborted) return;
          try {
            await collect();
          } catch (e) {
            logger.error({ err: e }, "records GC pass failed; retrying at the next interval");
          }
        }
      })();
      loop = { stop, done };
    },
    collect,
    stop,
    async close() {
      closed = true;
      await stop();
    },
  };
}
