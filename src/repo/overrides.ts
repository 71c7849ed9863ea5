import { parseAllDocuments } from "yaml";
import type { Problem } from "../errors/index.js";
import type { TreeReader } from "../gitwriter/index.js";
import { overridesDir } from "./layout.js";
import { documentProblems } from "./schemas.js";

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

const YAML_FILE = /\.ya?ml$/;

/** Override files below `overrides/<key>/` (subdirectories included), in path order. */
async function overrideFiles(tree: TreeReader, dir: string): Promise<string[]> {
  const files: string[] = [];
  for (const e of (await tree.list(dir)) ?? []) {
    const path = `${dir}/${e.name}`;
    if (e.type === "tree") files.push(...(await overrideFiles(tree, path)));
    else if (YAML_FILE.test(e.name)) files.push(path);
  }
  return files;
}

/**
 * The well-formed overrides of an instance, in file then document order (the order they are
 * applied in), and a problem for every document that is not one.
 */
export async function readOverrides(tree: TreeReader, instanceId: string): Promise<{ overrides: Override[]; problems: Problem[] }> {
  const overrides: Override[] = [];
  const problems: Problem[] = [];
  for (const file of await overrideFiles(tree, overridesDir(instanceId))) {
    const docs = parseAllDocuments((await tree.readText(file)) ?? "", { logLevel: "error" });
    const several = docs.filter((d) => d.contents !== null).length > 1;
    for (const [i, doc] of docs.entries()) {
      const at = several ? `documents[${i}].` : "";
      const [error] = doc.errors;
      if (error) {
        problems.push({ file, path: at.slice(0, -1), message: `is not valid YAML: ${error.message.split("\n", 1)[0]}` });
        continue;
      }
      if (doc.contents === null) continue;
      let value: unknown;
      try {
        value = doc.toJS();
      } catch (e) {
        // toJS refuses alias bombs and the like: a property of this file, reported as such.
        problems.push({ file, path: at.slice(0, -1), message: `cannot be read: ${e instanceof Error ? e.message : String(e)}` });
        continue;
      }
      const found = documentProblems("override", value, file, at);
      if (found.length > 0) {
        problems.push(...found);
        continue;
      }
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
