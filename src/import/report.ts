import { differenceText } from "./diff.js";
import type { HandOverReport } from "./hand-over.js";
import type { ImportPlan, NotImported } from "./plan-import.js";

/** The import's plan and the hand-over, as the command prints them. */

function notImported(n: NotImported): string {
  const where = [n.sfClusterId !== undefined ? `cluster ${n.sfClusterId}` : "", n.plan !== undefined ? `plan ${n.plan}` : ""].filter(Boolean).join(", ");
  return `  ${n.instanceId}${n.bindingId !== undefined ? ` binding ${n.bindingId}` : ""}${where ? ` (${where})` : ""}: ${n.reason}`;
}

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
  for (const [cluster, byPlan] of [...groups].sort(([a], [b]) => (a < b ? -1 : 1))) {
    lines.push(`  ${cluster}:`);
    for (const [p, n] of [...byPlan].sort(([a], [b]) => (a < b ? -1 : 1))) lines.push(`    ${p}: ${n}`);
  }
  if (plan.present.length > 0) lines.push(`already in the GitOps repository: ${plan.present.length} instance(s)`);
  if (plan.refused.length > 0) lines.push(`refused: ${plan.refused.length} instance(s)`, ...plan.refused.map(notImported));
  if (plan.skipped.length > 0) lines.push(`skipped: ${plan.skipped.length} instance(s)`, ...plan.skipped.map(notImported));
  if (plan.skippedBindings.length > 0) lines.push(`bindings left out: ${plan.skippedBindings.length}`, ...plan.skippedBindings.map(notImported));
  const differing = plan.imported.filter((i) => i.differences.length > 0);
  if (differing.length > 0) {
    lines.push(`differences between what the import renders and what is live: ${differing.length} instance(s)`);
    if (options.differences === "summary") {
      const counts = new Map<string, number>();
      for (const i of differing) for (const o of i.differences) for (const d of o.differences) counts.set(differenceText(d), (counts.get(differenceText(d)) ?? 0) + 1);
      for (const [text, n] of [...counts].sort(([a], [b]) => (a < b ? -1 : 1))) lines.push(`  ${n} x ${text}`);
    } else {
      for (const i of differing) {
        lines.push(`  ${i.instanceId}:`);
        for (const o of i.differences) lines.push(`    ${o.object}:`, ...o.differences.map((d) => `      ${differenceText(d)}`));
      }
    }
  }
  return `${lines.join("\n")}\n`;
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
  if (report.running.length > 0) lines.push(`controllers still running:`, ...report.running.map((r) => `  ${r}`));
  if (report.stillOwned.length > 0) lines.push(`imported objects still owned by Service Fabrik: ${report.stillOwned.length}`, ...report.stillOwned.map((r) => `  ${r}`));
  else lines.push("no imported object is owned by a Service Fabrik resource");
  return `${lines.join("\n")}\n`;
}
