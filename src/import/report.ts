import { keyOf } from "../repo/index.js";
import type { Accounting, Tally } from "./accounting.js";
import { differenceText, type Difference } from "./diff.js";
import type { HandOverReport } from "./hand-over.js";
import type { ImportPlan, NotImported, PlannedInstance } from "./plan-import.js";
import type { Verification } from "./verify.js";

/** The import's plan, its accounting, the hand-over and its verification, as the command prints them. */

function notImported(n: NotImported): string {
  const where = [n.sfClusterId !== undefined ? `cluster ${n.sfClusterId}` : "", n.plan !== undefined ? `plan ${n.plan}` : ""].filter(Boolean).join(", ");
  return `  ${n.instanceId}${n.bindingId !== undefined ? ` binding ${n.bindingId}` : ""}${where ? ` (${where})` : ""}: ${n.reason}`;
}

const byName = <T>([a]: [string, T], [b]: [string, T]) => (a < b ? -1 : a > b ? 1 : 0);

export function planText(plan: ImportPlan, options: { differences?: "all" | "summary" } = {}): string {
  const lines: string[] = [];
  const bindings = plan.imported.reduce((n, i) => n + i.bindingIds.length, 0);
  lines.push(`Service Fabrik landscape at ${plan.source}`);
  lines.push(`to import: ${plan.imported.length} instance(s) with ${bindings} binding(s)`);
  const groups = new Map<string, Map<string, number>>();
  for (const i of plan.imported) {
    const key = i.clusterId === i.sfClusterId ? `cluster ${i.clusterId}` : `cluster ${i.clusterId} (Service Fabrik's ${i.sfClusterId})`;
    let byPlan = groups.get(key);
    if (!byPlan) groups.set(key, (byPlan = new Map<string, number>()));
    const p = `${i.service}/${i.plan}`;
    byPlan.set(p, (byPlan.get(p) ?? 0) + 1);
  }
  for (const [cluster, byPlan] of [...groups].sort(byName)) {
    lines.push(`  ${cluster}:`);
    for (const [p, n] of [...byPlan].sort(byName)) lines.push(`    ${p}: ${n}`);
  }
  if (plan.present.length > 0) lines.push(`already in the GitOps repository: ${plan.present.length} instance(s) with ${plan.bindings.present.length} binding(s)`);
  if (plan.refused.length > 0) lines.push(`refused: ${plan.refused.length} instance(s)`, ...plan.refused.map(notImported));
  if (plan.skipped.length > 0) lines.push(`skipped: ${plan.skipped.length} instance(s)`, ...plan.skipped.map(notImported));
  if (plan.bindings.refused.length > 0) lines.push(`bindings refused: ${plan.bindings.refused.length}`, ...plan.bindings.refused.map(notImported));
  if (plan.bindings.skipped.length > 0) lines.push(`bindings skipped: ${plan.bindings.skipped.length}`, ...plan.bindings.skipped.map(notImported));
  lines.push(...differencesText(plan.imported, options.differences ?? "all"));
  return `${lines.join("\n")}\n`;
}

function differencesText(imported: readonly PlannedInstance[], how: "all" | "summary"): string[] {
  const differing = imported.filter((i) => i.differences.length > 0);
  if (differing.length === 0) return [];
  const objects = differing.reduce((n, i) => n + i.differences.length, 0);
  const lines = [`differences between what the import renders and what is live: ${differing.length} instance(s), ${objects} object(s)`];
  if (how === "summary") return [...lines, ...summaryText(differing)];
  for (const i of differing) {
    lines.push(`  ${i.instanceId}:`);
    for (const o of i.differences) lines.push(`    ${o.object}:`, ...o.differences.map((d) => `      ${differenceText(d)}`));
  }
  return lines;
}

const CHANGES: { change: Difference["change"]; title: string }[] = [
  { change: "added", title: "+ rendered, not live (the sync adds it)" },
  { change: "changed", title: "~ changed (the sync sets the rendered value)" },
  { change: "live-only", title: "- live only (not rendered; an apply keeps it)" },
];

const escaped = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** `path` with a key that is the instance's or one of its bindings' id (or key) as `<instance>` / `<binding>`. */
function generalized(path: string, names: ReadonlyMap<string, string>): string {
  let out = path;
  for (const [name, as] of names) {
    out = out.split(`[${JSON.stringify(name)}]`).join(`[${as}]`);
    out = out.replace(new RegExp(`(^|\\.)${escaped(name)}(?=$|\\.|\\[)`, "g"), `$1${as}`);
  }
  return out;
}

/**
 * The differences counted per object kind and kind of difference, and within them per field (its
 * path, a key that is an instance's or binding's own name generalized): a few lines whatever the
 * number of instances.
 */
function summaryText(differing: readonly PlannedInstance[]): string[] {
  const kinds = new Map<string, { objects: number; paths: Map<string, number>[] }>();
  for (const i of differing) {
    const names = new Map<string, string>();
    // Longest first: a binding's id often starts with its instance's.
    const own: [string, string][] = [...i.bindingIds.flatMap((b) => [b, keyOf(b)]).map((b): [string, string] => [b, "<binding>"]), [i.instanceId, "<instance>"], [keyOf(i.instanceId), "<instance>"]];
    for (const [name, as] of own.sort(([a], [b]) => b.length - a.length)) names.set(name, as);
    for (const o of i.differences) {
      let kind = kinds.get(o.type);
      if (!kind) kinds.set(o.type, (kind = { objects: 0, paths: CHANGES.map(() => new Map<string, number>()) }));
      kind.objects++;
      for (const d of o.differences) {
        const paths = kind.paths[CHANGES.findIndex((c) => c.change === d.change)]!;
        const path = generalized(d.path, names);
        paths.set(path, (paths.get(path) ?? 0) + 1);
      }
    }
  }
  const lines: string[] = [];
  for (const [type, kind] of [...kinds].sort(byName)) {
    lines.push(`  ${type}: ${kind.objects} object(s)`);
    CHANGES.forEach(({ title }, n) => {
      const paths = kind.paths[n]!;
      if (paths.size === 0) return;
      lines.push(`    ${title}: ${[...paths.values()].reduce((a, b) => a + b, 0)}`);
      for (const [path, count] of [...paths].sort(byName)) lines.push(`      ${count} x ${path}`);
    });
  }
  return lines;
}

function tallyText(what: string, t: Tally, importedAs: string): string {
  return `  ${what}: ${t.found} found = ${t.imported} ${importedAs} + ${t.present} already imported + ${t.refused} refused + ${t.skipped} skipped`;
}

/** found = imported + already imported + refused + skipped, for the instances and the bindings. */
export function accountingText(a: Accounting, dryRun: boolean): string {
  const importedAs = dryRun ? "to import" : "imported";
  const source = a.readBack ? `, imported as read back from the remote (${a.readBack.commit ?? "no commit"})` : "";
  return `${[`on the master ${a.master}${source}:`, tallyText("SFServiceInstances", a.instances, importedAs), tallyText("SFServiceBindings", a.bindings, importedAs)].join("\n")}\n`;
}

const STEP_TITLES: Record<number, string> = {
  1: "stop Service Fabrik's controllers",
  2: "remove its owner references from the imported objects",
  3: "remove its finalizers from its resources",
  4: "delete its resources, orphaning their dependents",
};

export function handOverText(report: HandOverReport): string {
  const lines: string[] = [report.performed ? "hand-over:" : "hand-over steps (not performed; --hand-over --yes performs them with a writable kubeconfig):"];
  for (const step of [1, 2, 3, 4] as const) {
    const steps = report.steps.filter((s) => s.step === step);
    lines.push(`  ${step}. ${STEP_TITLES[step]}: ${steps.length === 0 ? "nothing to do" : `${steps.length} command(s)`}`);
    for (const s of steps) lines.push(`     ${s.command}${s.error ? `\n       FAILED: ${s.error}` : report.performed ? "  (done)" : ""}`);
  }
  return `${lines.join("\n")}\n`;
}

/** The verification after the hand-over, from its own lists only. */
export function verificationText(v: Verification): string {
  const lines: string[] = [`verification, on a fresh full list of ${v.listed.join(", ")}:`];
  lines.push(`  imported in the GitOps repository: ${v.imported.instances} instance(s), ${v.imported.bindings} binding(s), naming ${v.imported.objects} object(s)`);
  lines.push(`  imported objects owned by a Service Fabrik resource: ${v.stillOwned.length}`, ...v.stillOwned.map((s) => `    ${s}`));
  if (v.absent.length > 0) lines.push(`  imported objects not on their cluster: ${v.absent.length}`, ...v.absent.map((s) => `    ${s}`));
  lines.push(`  Service Fabrik's controllers running: ${v.running.length}`, ...v.running.map((s) => `    ${s}`));
  lines.push(`  staying with Service Fabrik: ${v.left.instances.length} instance(s), ${v.left.bindings.length} binding(s)`);
  lines.push(...[...v.left.instances, ...v.left.bindings].map((n) => `  ${notImported(n)}`));
  return `${lines.join("\n")}\n`;
}
