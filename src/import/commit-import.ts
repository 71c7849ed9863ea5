import { InvalidArgumentError } from "../errors/index.js";
import type { Draft } from "../gitwriter/index.js";
import { brokerTrailers, IMPORT_REASON, readInstance } from "../repo/index.js";
import type { RoutedWriter } from "../stores/index.js";
import type { ImportPlan, PlannedInstance } from "./plan-import.js";

/**
 * The real run: the planned instances committed in batches, each batch one commit of whole
 * instances (records, bindings, manifests) with `Reason: import`, `Import-Source` and one
 * `Instance-Id` per instance. With stores, each commit is in the repository of its instances'
 * clusters (the clusters the import maps to, ADR 0036): the instances are grouped by it first, in
 * their order, and batched within each group. An instance the branch holds by then (another run, or a provision
 * of the same id) is left out of its batch; a batch that finds all of them present commits
 * nothing. An interrupted run leaves whole batches: the next run plans only what is missing.
 */

export interface CommitImportOptions {
  /** Instances per commit (default 500). */
  batchSize?: number;
  brokerVersion: string;
  /**
   * Each instance's edits are dropped once its batch is pushed (default false): nothing the CLI does
   * after reads them, and 10,000 instances' records and manifests are most of the plan.
   */
  release?: boolean;
  /** After each batch's push. */
  onBatch?: (batch: { commit: string | null; instances: number; done: number; total: number }) => void;
}

export interface CommitImportResult {
  commits: string[];
  imported: string[];
  /** Planned, but the branch held them when their batch was committed. */
  present: string[];
}

const NAMESPACE_FILE = /^clusters\/[^/]+\/namespace\.yaml$/;

/** Replays an instance's edits; a cluster's Namespace file is written only when missing (never replaced). */
async function replay(draft: Draft, instance: PlannedInstance): Promise<void> {
  for (const edit of instance.edits) {
    if (edit.content === null) draft.remove(edit.path);
    else if (!NAMESPACE_FILE.test(edit.path) || (await draft.oid(edit.path)) === null) draft.write(edit.path, edit.content);
  }
}

export async function commitImport(writer: RoutedWriter, plan: ImportPlan, options: CommitImportOptions): Promise<CommitImportResult> {
  const size = options.batchSize ?? 500;
  if (!(Number.isInteger(size) && size >= 1)) throw new InvalidArgumentError(`batch size ${size} is not a positive integer`);
  const result: CommitImportResult = { commits: [], imported: [], present: [] };
  const total = plan.imported.length;
  let done = 0;
  for (const group of await writer.partition(plan.imported, (i) => ({ cluster: i.clusterId }))) {
    for (let start = 0; start < group.length; start += size) {
      const batch = group.slice(start, start + size);
      const outcome = await commitBatch(writer, batch, plan.source, options.brokerVersion);
      if (options.release) for (const instance of batch) instance.edits = [];
      if (outcome.commit !== null) result.commits.push(outcome.commit);
      result.imported.push(...outcome.written);
      result.present.push(...outcome.present);
      done += batch.length;
      options.onBatch?.({ commit: outcome.commit, instances: outcome.written.length, done, total });
    }
  }
  return result;
}

/** One batch, one commit in the repository of its instances' clusters (the first one's: a group shares it). */
async function commitBatch(
  writer: RoutedWriter,
  batch: PlannedInstance[],
  source: string,
  brokerVersion: string,
): Promise<{ commit: string | null; written: string[]; present: string[] }> {
  const { result: outcome, commit } = await writer.submit({ cluster: batch[0]!.clusterId }, async (draft) => {
    const written: string[] = [];
    const present: string[] = [];
    for (const instance of batch) {
      const existing = await readInstance(draft, instance.instanceId);
      if (existing && !existing.status.deleted) present.push(instance.instanceId);
      else {
        await replay(draft, instance);
        written.push(instance.instanceId);
      }
    }
    if (written.length === 0) return { commit: null, result: { written, present } };
    const bindings = batch.filter((i) => written.includes(i.instanceId)).reduce((n, i) => n + i.bindingIds.length, 0);
    return {
      commit: {
        subject: `import ${written.length} instance(s) and ${bindings} binding(s) from Service Fabrik`,
        body: "Records and manifests of instances Service Fabrik provisioned, rendered by their plans' own templates; the objects they name are live.",
        trailers: brokerTrailers({ reason: IMPORT_REASON, importSource: `service-fabrik ${source}`, instanceIds: written, brokerVersion }),
      },
      result: { written, present },
    };
  });
  return { commit, ...outcome };
}
