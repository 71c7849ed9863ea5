import { parse } from "yaml";
import type { BulkReader, TreeReader } from "../gitwriter/index.js";
import { INSTANCES_DIR } from "./layout.js";
import type { InstanceRecord } from "./records.js";
import { scanInstanceRecord, type ScannedInstance } from "./record-scan.js";

/**
 * What schedulers and offboarding checks need to know about all instances, derived from the tree
 * under `instances/`: live instances per cluster and plan, and the newest provision.
 *
 * Computed bottom-up and memoized by tree oid (a Merkle fold): a commit that changes one instance
 * changes only the trees on its path, so the summary of the next commit re-reads one bucket and
 * re-merges two 256-entry levels, whatever the number of instances. A Draft's edited directories
 * have no oid yet and are folded afresh.
 */
export interface InstanceSummary {
  /** Live (not deleted) instances per cluster id, per plan id. */
  readonly live: ReadonlyMap<string, ReadonlyMap<string, number>>;
  /** The newest provision (live or since deleted), by operation time. */
  readonly latestProvision: { at: string; clusterId: string } | undefined;
}

export interface InstanceSummaryCache {
  get(treeOid: string): InstanceSummary | undefined;
  set(treeOid: string, summary: InstanceSummary): void;
  /** The last fold of the directory at `path` (levels 0-1), to re-merge only the entries that changed since. */
  previous(path: string): DirFold | undefined;
  remember(path: string, fold: DirFold): void;
}

/** One fold of a directory: its parts by entry name (and the oid each was folded from), and their merge. */
export interface DirFold {
  readonly oids: ReadonlyMap<string, string | undefined>;
  readonly parts: ReadonlyMap<string, InstanceSummary>;
  readonly summary: InstanceSummary;
}

const EMPTY: InstanceSummary = { live: new Map(), latestProvision: undefined };

/** A bounded memo (the fan-out has 65,536 buckets; whole levels above them stay in). */
export function createInstanceSummaryCache(limit = 150_000): InstanceSummaryCache {
  const memo = new Map<string, InstanceSummary>();
  const folds = new Map<string, DirFold>(); // 257 directories at most
  return {
    get: (oid) => memo.get(oid),
    set(oid, summary) {
      if (memo.size >= limit) memo.delete(memo.keys().next().value as string);
      memo.set(oid, summary);
    },
    previous: (path) => folds.get(path),
    remember: (path, fold) => void folds.set(path, fold),
  };
}

/** Live instances of one cluster (all plans). */
export function liveOnCluster(summary: InstanceSummary, clusterId: string): number {
  let n = 0;
  for (const count of summary.live.get(clusterId)?.values() ?? []) n += count;
  return n;
}

/** Live instances of one plan (all clusters). */
export function liveOfPlan(summary: InstanceSummary, planId: string): number {
  let n = 0;
  for (const plans of summary.live.values()) n += plans.get(planId) ?? 0;
  return n;
}

export function instanceCounts(summary: InstanceSummary): Map<string, number> {
  return new Map([...summary.live.keys()].map((id) => [id, liveOnCluster(summary, id)]));
}

function merge(parts: InstanceSummary[]): InstanceSummary {
  const nonEmpty = parts.filter((p) => p !== EMPTY);
  if (nonEmpty.length === 0) return EMPTY;
  if (nonEmpty.length === 1) return nonEmpty[0]!;
  const live = new Map<string, Map<string, number>>();
  let latest: InstanceSummary["latestProvision"];
  for (const part of nonEmpty) {
    for (const [cluster, plans] of part.live) {
      let target = live.get(cluster);
      if (!target) live.set(cluster, (target = new Map()));
      for (const [plan, n] of plans) target.set(plan, (target.get(plan) ?? 0) + n);
    }
    const l = part.latestProvision;
    if (l && (!latest || l.at > latest.at)) latest = l;
  }
  return { live, latestProvision: latest };
}

function ofRecord(record: ScannedInstance | null): InstanceSummary {
  if (!record) return EMPTY;
  const provision = [...record.operations].reverse().find((o) => o.action === "provision");
  const latestProvision = provision ? { at: provision.at, clusterId: record.clusterId } : undefined;
  const live = record.deleted ? new Map<string, Map<string, number>>() : new Map([[record.clusterId, new Map([[record.planId, 1]])]]);
  return { live, latestProvision };
}

/** The summary's fields of a record: scanned, or parsed when the text is beyond the scan. */
function ofText(text: string): InstanceSummary {
  const scanned = scanInstanceRecord(text);
  if (scanned) return ofRecord(scanned);
  const record = parse(text) as InstanceRecord | null;
  if (!record) return EMPTY;
  return ofRecord({
    clusterId: record.spec.clusterId,
    planId: record.spec.planId,
    deleted: Boolean(record.status.deleted),
    operations: record.status.operations,
  });
}

/**
 * Levels: 0 = `instances`, 1 = `<ab>`, 2 = `<cd>`, 3 = `<key>` (holds instance.yaml). Levels 0-2 are
 * memoized by tree oid; an instance directory is folded from its record (read only when its bucket
 * is not memoized).
 */
async function foldDir(
  tree: TreeReader,
  path: string,
  level: number,
  oid: string | undefined,
  cache: InstanceSummaryCache,
): Promise<InstanceSummary> {
  const hit = oid === undefined ? undefined : cache.get(oid);
  if (hit) return hit;
  let summary: InstanceSummary;
  if (level === 3) {
    const text = await tree.readText(`${path}/instance.yaml`);
    summary = text === null ? EMPTY : ofText(text);
  } else if (level === 2) {
    const parts: InstanceSummary[] = [];
    for (const e of (await tree.list(path)) ?? []) {
      if (e.type === "tree") parts.push(await foldDir(tree, `${path}/${e.name}`, level + 1, e.oid, cache));
    }
    summary = merge(parts);
  } else {
    summary = await foldLevel(tree, path, level, cache);
  }
  if (oid !== undefined && level < 3) cache.set(oid, summary);
  return summary;
}

/** More changed entries than this since the directory's last fold: merged afresh. */
const DELTA_LIMIT = 16;

/**
 * Levels 0 and 1 have up to 256 entries each, and an operation changes one of them: the summary
 * is the last fold's, minus the parts that changed, plus their new summaries (merging all 256
 * parts at both levels was about 0.5 ms of an operation's 3.7 ms of CPU at 10k instances).
 */
async function foldLevel(tree: TreeReader, path: string, level: number, cache: InstanceSummaryCache): Promise<InstanceSummary> {
  const before = cache.previous(path);
  const oids = new Map<string, string | undefined>();
  const parts = new Map<string, InstanceSummary>();
  const changed: string[] = [];
  for (const e of (await tree.list(path)) ?? []) {
    if (e.type !== "tree") continue;
    oids.set(e.name, e.oid);
    const unchanged = e.oid !== undefined && before?.oids.get(e.name) === e.oid;
    parts.set(e.name, unchanged ? before!.parts.get(e.name)! : await foldDir(tree, `${path}/${e.name}`, level + 1, e.oid, cache));
    if (!unchanged) changed.push(e.name);
  }
  const removed = before ? [...before.oids.keys()].filter((name) => !oids.has(name)) : [];
  const summary =
    before && changed.length + removed.length <= DELTA_LIMIT
      ? applyDelta(before, parts, [...changed, ...removed])
      : merge([...parts.values()]);
  cache.remember(path, { oids, parts, summary });
  return summary;
}

/** `before.summary` with the parts `names` replaced by theirs in `parts` (absent: removed). */
function applyDelta(before: DirFold, parts: ReadonlyMap<string, InstanceSummary>, names: string[]): InstanceSummary {
  const live = new Map([...before.summary.live].map(([cluster, plans]) => [cluster, new Map(plans)]));
  const add = (part: InstanceSummary | undefined, sign: 1 | -1) => {
    for (const [cluster, plans] of part?.live ?? []) {
      let target = live.get(cluster);
      if (!target) live.set(cluster, (target = new Map()));
      for (const [plan, n] of plans) {
        const count = (target.get(plan) ?? 0) + sign * n;
        if (count === 0) target.delete(plan);
        else target.set(plan, count);
      }
      if (target.size === 0) live.delete(cluster);
    }
  };
  for (const name of names) {
    add(before.parts.get(name), -1);
    add(parts.get(name), 1);
  }
  // The newest provision is not subtractable; the maximum over the parts is cheap to take again.
  let latest: InstanceSummary["latestProvision"];
  for (const part of parts.values()) {
    const l = part.latestProvision;
    if (l && (!latest || l.at > latest.at)) latest = l;
  }
  return live.size === 0 && latest === undefined ? EMPTY : { live, latestProvision: latest };
}

const utf8 = new TextDecoder("utf-8");

function slashes(path: string): number {
  let n = 0;
  for (let i = path.indexOf("/"); i !== -1; i = path.indexOf("/", i + 1)) n++;
  return n;
}

/**
 * A cold fold (start-up, or after the memo lost the tree): one recursive listing and one bulk read
 * of the records of every bucket not memoized yet, then the buckets and levels memoized bottom-up,
 * so that foldDir finds them all. The same result as foldDir's, in a fraction of the time.
 */
async function prefold(bulk: BulkReader, instancesOid: string, cache: InstanceSummaryCache): Promise<void> {
  const levels: [Map<string, string>, Map<string, string>] = [new Map(), new Map()]; // path -> oid of <ab>, <ab>/<cd>
  const records: { bucket: string; oid: string }[] = [];
  // Levels 1-2 and the records; not the bindings below the records.
  const keep = (path: string, type: "blob" | "tree") => {
    const depth = slashes(path);
    return type === "tree" ? depth <= 1 : depth === 3 && path.endsWith("/instance.yaml");
  };
  for (const e of await bulk.walk(instancesOid, keep)) {
    if (e.type === "tree") levels[slashes(e.path)]!.set(e.path, e.oid);
    else records.push({ bucket: e.path.slice(0, e.path.indexOf("/", e.path.indexOf("/") + 1)), oid: e.oid });
  }
  const wanted = records.filter((r) => cache.get(levels[1].get(r.bucket)!) === undefined);
  const perBucket = new Map<string, InstanceSummary[]>();
  await bulk.readBlobs(
    wanted.map((r) => r.oid),
    (content, i) => {
      const bucket = wanted[i]!.bucket;
      let parts = perBucket.get(bucket);
      if (!parts) perBucket.set(bucket, (parts = []));
      parts.push(ofText(utf8.decode(content)));
    },
  );
  // Memoized by oid and remembered as each directory's last fold, so the next folds are incremental.
  const perTop = new Map<string, { oids: Map<string, string>; parts: Map<string, InstanceSummary> }>();
  for (const [bucket, oid] of levels[1]) {
    let summary = cache.get(oid);
    if (!summary) cache.set(oid, (summary = merge(perBucket.get(bucket) ?? [])));
    const [top, name] = bucket.split("/") as [string, string];
    let fold = perTop.get(top);
    if (!fold) perTop.set(top, (fold = { oids: new Map(), parts: new Map() }));
    fold.oids.set(name, oid);
    fold.parts.set(name, summary);
  }
  const root = { oids: new Map<string, string>(), parts: new Map<string, InstanceSummary>() };
  for (const [top, oid] of levels[0]) {
    const fold = perTop.get(top) ?? { oids: new Map(), parts: new Map() };
    let summary = cache.get(oid);
    if (!summary) cache.set(oid, (summary = merge([...fold.parts.values()])));
    cache.remember(`${INSTANCES_DIR}/${top}`, { ...fold, summary });
    root.oids.set(top, oid);
    root.parts.set(top, summary);
  }
  const summary = merge([...root.parts.values()]);
  cache.set(instancesOid, summary);
  cache.remember(INSTANCES_DIR, { ...root, summary });
}


export async function summarizeInstances(tree: TreeReader, cache: InstanceSummaryCache): Promise<InstanceSummary> {
  const entry = (await tree.list(""))?.find((e) => e.name === INSTANCES_DIR && e.type === "tree");
  if (!entry) return EMPTY;
  // Start-up (no fold of instances/ yet): one bulk pass. Every later fold is incremental (foldLevel),
  // however much changed; walking the whole tree for each new tip would cost far more.
  if (entry.oid !== undefined && tree.bulk && cache.previous(INSTANCES_DIR) === undefined) {
    await prefold(tree.bulk, entry.oid, cache);
  }
  return foldDir(tree, INSTANCES_DIR, 0, entry.oid, cache);
}
