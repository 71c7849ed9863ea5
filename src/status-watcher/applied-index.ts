import { GitRepositoryError } from "../errors/index.js";
import type { TreeReader } from "../gitwriter/index.js";
import type { Logger } from "../log/index.js";
import { parse } from "yaml";
import { instanceManifestDir, readBinding, readInstance } from "../repo/index.js";
import { resourceKey } from "./sync-state.js";
import type { StatusWriter } from "./types.js";

/**
 * "Has the sync agent applied operation X?" The record of an instance (or binding) at the
 * applied revision lists X exactly when the commit of X is that revision or one of its
 * ancestors: records only ever append operations. So one record read per (revision, record)
 * answers it, without walking history. Reads are asynchronous; `answer` is not: it reports
 * `pending` and reads in the background, then `onLoaded` tells the watcher to look again.
 */

export interface RecordRef {
  instanceId: string;
  bindingId?: string;
}

export type AppliedAnswer = { applied: boolean } | { pending: string };

export type ObjectsAnswer = { keys: readonly string[] } | { pending: string };

export interface AppliedIndex {
  answer(revision: string, record: RecordRef, operationId: string): AppliedAnswer;
  /**
   * The objects (`resourceKey`s) of an instance's manifest directory (its bindings' included) at
   * `revision`: what a sync of that revision applies for it. Read like the records, in the
   * background; asked for only when a sync failed on some of the objects it applied.
   */
  objects(revision: string, clusterId: string, instanceId: string): ObjectsAnswer;
  /** Starts reading `record` at `revision` unless known or under way. */
  prefetch(revision: string, record: RecordRef): void;
}

/** (revision, record) entries kept; one per in-flight record and applied revision is what matters. */
const ENTRY_LIMIT = 100_000;
/** Revisions whose readers are kept. */
const READER_LIMIT = 8;
/** A revision that could not be read (remote down, not pushed yet) is tried again after this. */
const RETRY_UNREADABLE_MS = 30_000;

/** The `resourceKey`s of the manifests (`*.yaml`, `*.yml`) under `dir` of `tree`, at any depth, sorted. */
export async function manifestKeys(tree: TreeReader, dir: string): Promise<string[]> {
  const keys: string[] = [];
  const walk = async (at: string): Promise<void> => {
    for (const entry of (await tree.list(at)) ?? []) {
      const path = `${at}/${entry.name}`;
      if (entry.type === "tree") {
        await walk(path);
        continue;
      }
      if (!/\.ya?ml$/.test(entry.name)) continue;
      const doc = parse((await tree.readText(path)) ?? "") as { apiVersion?: unknown; kind?: unknown; metadata?: { name?: unknown; namespace?: unknown } } | null;
      const str = (v: unknown) => (typeof v === "string" ? v : undefined);
      keys.push(resourceKey({ apiVersion: str(doc?.apiVersion) ?? "", kind: str(doc?.kind), namespace: str(doc?.metadata?.namespace), name: str(doc?.metadata?.name) }));
    }
  };
  await walk(dir);
  return keys.sort();
}

export function createAppliedIndex(deps: { writer: StatusWriter; logger: Logger; onLoaded: () => void }): AppliedIndex {
  const { writer, logger } = deps;
  /** `${revision} ${record}` -> operation ids in the record at that revision (empty: no record). */
  const entries = new Map<string, ReadonlySet<string>>();
  const loading = new Set<string>();
  const readers = new Map<string, Promise<TreeReader>>();
  /** Revisions that could not be read: why, and when (performance.now()). */
  const unreadable = new Map<string, { reason: string; at: number }>();
  const fetching = new Set<string>();

  const keyOf = (revision: string, record: RecordRef) =>
    `${revision} ${record.instanceId}${record.bindingId === undefined ? "" : ` ${record.bindingId}`}`;

  async function readerAt(revision: string): Promise<TreeReader> {
    let reader = await writer.readerAt(revision);
    if (reader === null) {
      // Someone else's commit (or ours, pushed by another replica): fetch once.
      fetching.add(revision);
      try {
        await writer.refresh();
      } finally {
        fetching.delete(revision);
      }
      reader = await writer.readerAt(revision);
    }
    if (reader === null) throw new GitRepositoryError(`revision ${revision.slice(0, 7)} is not on the Git remote`);
    return reader;
  }

  function readerFor(revision: string): Promise<TreeReader> {
    let reader = readers.get(revision);
    if (reader === undefined) {
      if (readers.size >= READER_LIMIT) readers.delete(readers.keys().next().value as string);
      reader = readerAt(revision);
      reader.catch(() => readers.delete(revision));
      readers.set(revision, reader);
    }
    return reader;
  }

  /** `${revision} objects ${dir}` -> the keys of the objects under dir at that revision. */
  const objectEntries = new Map<string, readonly string[]>();

  async function loadObjects(revision: string, dir: string, key: string): Promise<void> {
    const keys = await manifestKeys(await readerFor(revision), dir);
    if (objectEntries.size >= READER_LIMIT * 64) objectEntries.delete(objectEntries.keys().next().value as string);
    objectEntries.set(key, keys);
  }

  function startLoading(revision: string, key: string, run: () => Promise<void>): void {
    const failed = unreadable.get(revision);
    if (failed !== undefined && performance.now() - failed.at < RETRY_UNREADABLE_MS) return;
    if (loading.has(key)) return;
    unreadable.delete(revision);
    loading.add(key);
    run()
      .catch((error: unknown) => {
        const reason = error instanceof Error ? error.message : String(error);
        unreadable.set(revision, { reason, at: performance.now() });
        logger.warn({ err: error, revision }, "cannot read the applied revision");
      })
      .finally(() => {
        loading.delete(key);
        deps.onLoaded();
      });
  }

  const pendingAt = (revision: string): { pending: string } => {
    const failed = unreadable.get(revision);
    if (failed !== undefined) return { pending: failed.reason };
    return { pending: fetching.has(revision) ? `fetching revision ${revision.slice(0, 7)} from the Git remote` : `reading revision ${revision.slice(0, 7)}` };
  };

  async function load(revision: string, record: RecordRef, key: string): Promise<void> {
    const tree = await readerFor(revision);
    const found =
      record.bindingId === undefined
        ? await readInstance(tree, record.instanceId)
        : await readBinding(tree, record.instanceId, record.bindingId);
    if (entries.size >= ENTRY_LIMIT) entries.delete(entries.keys().next().value as string);
    entries.set(key, new Set(found?.status.operations.map((o) => o.id) ?? []));
  }

  function prefetch(revision: string, record: RecordRef): void {
    const key = keyOf(revision, record);
    if (entries.has(key)) return;
    startLoading(revision, key, () => load(revision, record, key));
  }

  return {
    prefetch,
    answer(revision, record, operationId) {
      const ops = entries.get(keyOf(revision, record));
      if (ops !== undefined) return { applied: ops.has(operationId) };
      prefetch(revision, record);
      return pendingAt(revision);
    },
    objects(revision, clusterId, instanceId) {
      const dir = instanceManifestDir(clusterId, instanceId);
      const key = `${revision} objects ${dir}`;
      const keys = objectEntries.get(key);
      if (keys !== undefined) return { keys };
      startLoading(revision, key, () => loadObjects(revision, dir, key));
      return pendingAt(revision);
    },
  };
}
