import type { Problem } from "../errors/index.js";
import type { TreeReader } from "../gitwriter/index.js";
import { overridesDir } from "./layout.js";
import { schemaDocuments, yamlFilesBelow } from "./documents.js";

/**
 * Manual overrides (repo-layout/README.md, schema repo-layout/schemas/override.schema.json):
 * humans add `overrides/<instance-key>/<anything>.yaml` through pull requests; the broker never
 * writes there and applies them to the instance's rendered objects on every render.
 */

export interface OverrideTarget {
  apiVersion: string;
  kind: string;
  name: string;
}

export interface Override {
  /** Repo path of the file. */
  file: string;
  /** Where the document is in the file: "" or `documents[1].` (prefix of problem paths). */
  at: string;
  target: OverrideTarget;
  /** OSB binding id (or key): the override patches an object of that binding. */
  binding?: string;
  /** JSON merge patch (RFC 7386). */
  patch: Record<string, unknown>;
}

/**
 * The well-formed overrides of an instance, in file then document order (the order they are
 * applied in), and a problem for every document that is not one.
 */
export async function readOverrides(tree: TreeReader, instanceId: string): Promise<{ overrides: Override[]; problems: Problem[] }> {
  const overrides: Override[] = [];
  const problems: Problem[] = [];
  for (const file of await yamlFilesBelow(tree, overridesDir(instanceId))) {
    const read = schemaDocuments("override", file, (await tree.readText(file)) ?? "");
    problems.push(...read.problems);
    for (const { at, value } of read.documents) {
      const o = value as Omit<Override, "file" | "at">;
      overrides.push({ file, at, target: o.target, ...(o.binding !== undefined ? { binding: o.binding } : {}), patch: o.patch });
    }
  }
  return { overrides, problems };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** RFC 7386 JSON merge patch: returns the patched copy, `target` is left as it is. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const result: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) {
      delete result[key];
      continue;
    }
    // defineProperty: a `__proto__` key of a YAML document is data, never the prototype.
    Object.defineProperty(result, key, { value: mergePatch(result[key], value), enumerable: true, writable: true, configurable: true });
  }
  return result;
}
