import type { Problem } from "../errors/index.js";
import { checkObjects, type Manifest, type RenderRequest } from "../render/index.js";
import { mergePatch, type Override } from "../repo/index.js";
import type { PatchToApply } from "./binding-patches.js";

export interface OverrideOutcome {
  manifests: Manifest[];
  /** Files of the overrides applied, in order, each once. */
  applied: string[];
  /** Overrides that were not applied, and why. */
  problems: Problem[];
}

function describe(t: { apiVersion: string; kind: string; name: string; namespace?: string }): string {
  return `${t.apiVersion} ${t.kind} ${t.namespace === undefined ? "" : `${t.namespace}/`}${t.name}`;
}

/**
 * Applies `overrides` (in order) to the rendered objects of one directory (`scope`: "instance x"
 * or "binding b of instance x"). Each patched object goes through the renderer's checks again
 * (no Secret data, broker labels, canonical YAML) and must keep its identity; an override that
 * fails is left out with a problem and the others still apply. Bindings' patches of the
 * instance's objects (ADR 0017) apply the same way, to the object their `matches` picks.
 */
export function applyOverrides(
  manifests: Manifest[],
  overrides: (Override | PatchToApply)[],
  defaults: Pick<RenderRequest, "defaultNamespace" | "labels">,
  scope: string,
): OverrideOutcome {
  const out = [...manifests];
  const applied = new Set<string>();
  const problems: Problem[] = [];
  for (const o of overrides) {
    const i = out.findIndex("matches" in o ? o.matches : (m) => m.apiVersion === o.target.apiVersion && m.kind === o.target.kind && m.name === o.target.name);
    const target = out[i];
    if (target === undefined) {
      problems.push({ file: o.file, path: `${o.at}target`, message: `${describe(o.target)} is not among the objects rendered for ${scope}` });
      continue;
    }
    const patched = mergePatch(target.object, o.patch);
    const { manifests: checked, problems: found } = checkObjects([{ value: patched, source: o.file, path: `${o.at}patch` }], defaults);
    const [m] = checked;
    if (found.length > 0 || m === undefined) {
      problems.push(...found.map((p) => ({ ...p, message: `the patched ${describe(o.target)}: ${p.message}` })));
      continue;
    }
    if (m.apiVersion !== target.apiVersion || m.kind !== target.kind || m.name !== target.name || m.namespace !== target.namespace) {
      problems.push({
        file: o.file,
        path: `${o.at}patch`,
        message: "must not change apiVersion, kind, metadata.name or metadata.namespace (they identify the object and its file)",
      });
      continue;
    }
    // The file name stays the rendered one: it may carry a suffix that only the full set decides.
    out[i] = { ...m, fileName: target.fileName };
    applied.add(o.file);
  }
  return { manifests: out, applied: [...applied], problems };
}
