import { ImportAccountingError } from "../errors/index.js";
import type { TreeReader } from "../gitwriter/index.js";
import { readBinding, readInstance } from "../repo/index.js";
import { bindingIdOf, instanceIdOf, type Landscape } from "./landscape.js";
import type { ImportPlan } from "./plan-import.js";

/**
 * Where every SFServiceInstance and SFServiceBinding the master listed went, counted apart from
 * the plan: found (the list read) = imported + already imported + refused + skipped. The parts
 * are matched id by id against the list read, and anything missing or counted twice stops the
 * command (ImportAccountingError): nothing may be unaccounted. After a real run the imported part
 * is what the remote holds when read back after the push (readBack), not what the run built.
 */

export interface Tally {
  found: number;
  imported: number;
  present: number;
  refused: number;
  skipped: number;
}

export interface Accounting {
  /** The master's API server. */
  master: string;
  instances: Tally;
  bindings: Tally;
  /** Set when `imported` was read back from the remote: its tip. */
  readBack?: { commit: string | null };
}

/** The planned instances and bindings as the remote holds them after the push. */
export interface ReadBack {
  /** The remote tip read. */
  commit: string | null;
  /** Planned instances whose record is on the remote, live, with an `import` entry. */
  instances: string[];
  /** Their planned bindings likewise. */
  bindings: string[];
  /** Planned, and not on the remote so: `<instance>` or `<instance> binding <binding>`. */
  missing: string[];
}

const imported = (ops: { action: string }[]) => ops.some((o) => o.action === "import");

/** Reads the planned instances and bindings back from `tip` (the remote's, fetched after the push). */
export async function readBack(tip: TreeReader, plan: Pick<ImportPlan, "imported">): Promise<ReadBack> {
  const out: ReadBack = { commit: tip.commit, instances: [], bindings: [], missing: [] };
  for (const planned of plan.imported) {
    const record = await readInstance(tip, planned.instanceId);
    if (!record || record.status.deleted || !imported(record.status.operations)) {
      out.missing.push(planned.instanceId);
      continue;
    }
    out.instances.push(planned.instanceId);
    for (const bindingId of planned.bindingIds) {
      const binding = await readBinding(tip, planned.instanceId, bindingId);
      if (binding && !binding.status.deleted && imported(binding.status.operations)) out.bindings.push(bindingId);
      else out.missing.push(`${planned.instanceId} binding ${bindingId}`);
    }
  }
  return out;
}

/** `found` less every part, id by id: what was found and is in no part, and what a part holds beyond what was found. */
function balance(found: readonly string[], parts: readonly (readonly string[])[]): { unaccounted: string[]; extra: string[] } {
  const left = new Map<string, number>();
  for (const id of found) left.set(id, (left.get(id) ?? 0) + 1);
  const extra: string[] = [];
  for (const part of parts) {
    for (const id of part) {
      const n = left.get(id) ?? 0;
      if (n === 0) extra.push(id);
      else if (n === 1) left.delete(id);
      else left.set(id, n - 1);
    }
  }
  return { unaccounted: [...left].flatMap(([id, n]) => Array<string>(n).fill(id)), extra };
}

function tally(what: string, found: readonly string[], parts: Record<"imported" | "present" | "refused" | "skipped", readonly string[]>, problems: string[]): Tally {
  const { unaccounted, extra } = balance(found, [parts.imported, parts.present, parts.refused, parts.skipped]);
  const named = (ids: string[]) => `${ids.slice(0, 20).join(", ")}${ids.length > 20 ? ` and ${ids.length - 20} more` : ""}`;
  if (unaccounted.length > 0) problems.push(`${unaccounted.length} ${what} listed on the master and not accounted for: ${named(unaccounted)}`);
  if (extra.length > 0) problems.push(`${extra.length} ${what} accounted for and not listed on the master, or counted twice: ${named(extra)}`);
  return { found: found.length, imported: parts.imported.length, present: parts.present.length, refused: parts.refused.length, skipped: parts.skipped.length };
}

/**
 * The accounting of `plan` against the lists it was made from; with `back`, the imported part as
 * read back from the remote. Throws ImportAccountingError when the parts do not add up.
 */
export function account(landscape: Pick<Landscape, "master" | "instances" | "bindings">, plan: ImportPlan, back?: ReadBack): Accounting {
  const problems: string[] = [];
  if (back && back.missing.length > 0) problems.push(`${back.missing.length} planned and pushed, not on the remote when read back (${back.commit ?? "no commit"}): ${back.missing.slice(0, 20).join(", ")}`);
  const instances = tally(
    "SFServiceInstance(s)",
    landscape.instances.map(instanceIdOf),
    {
      imported: back ? back.instances : plan.imported.map((i) => i.instanceId),
      present: plan.present,
      refused: plan.refused.map((n) => n.instanceId),
      skipped: plan.skipped.map((n) => n.instanceId),
    },
    problems,
  );
  const bindings = tally(
    "SFServiceBinding(s)",
    landscape.bindings.map(bindingIdOf),
    {
      imported: back ? back.bindings : plan.imported.flatMap((i) => i.bindingIds),
      present: plan.bindings.present.map((b) => b.bindingId),
      refused: plan.bindings.refused.map((n) => n.bindingId ?? ""),
      skipped: plan.bindings.skipped.map((n) => n.bindingId ?? ""),
    },
    problems,
  );
  if (problems.length > 0) {
    throw new ImportAccountingError(`the import cannot account for what it read on the master ${landscape.master}: ${problems.join("; ")}`, problems);
  }
  return { master: landscape.master, instances, bindings, ...(back ? { readBack: { commit: back.commit } } : {}) };
}

/** Instances and bindings that stay with Service Fabrik after this run: refused or skipped. */
export function leftBehind(a: Accounting): number {
  return a.instances.refused + a.instances.skipped + a.bindings.refused + a.bindings.skipped;
}
