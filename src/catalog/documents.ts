import type { ValidateFunction } from "ajv";
import { parseAllDocuments } from "yaml";
import type { TreeReader } from "../gitwriter/index.js";
import { formatAjvErrors, type Problem } from "../errors/index.js";

/** One non-empty YAML document of a file. */
export interface YamlDocument {
  value: unknown;
  /**
   * Prefix of paths inside this document: "" in a single-document file, `documents[2].` in a
   * multi-document file (index counted from 0 over the whole stream).
   */
  at: string;
}

const YAML_FILE = /\.ya?ml$/;

/** `*.yaml` / `*.yml` files under `dir`, recursively, in path order. */
export async function listYamlFiles(tree: TreeReader, dir: string, recursive: boolean): Promise<string[]> {
  const entries = await tree.list(dir);
  if (!entries) return [];
  const files: string[] = [];
  for (const e of entries) {
    const path = `${dir}/${e.name}`;
    if (e.type === "blob" && YAML_FILE.test(e.name)) files.push(path);
    else if (e.type === "tree" && recursive) files.push(...(await listYamlFiles(tree, path, true)));
  }
  return files;
}

/** Parses every document of a (possibly multi-document) YAML file. Anchors and aliases resolve. */
export function parseYamlFile(file: string, text: string): { docs: YamlDocument[]; problems: Problem[] } {
  const problems: Problem[] = [];
  // merge: `<<: *anchor` merge keys, as Kubernetes' YAML 1.1 reader (and so Service Fabrik) has them.
  // logLevel "error": yaml would print warnings on the process; what matters fails the schema.
  const parsed = parseAllDocuments(text, { merge: true, logLevel: "error" });
  const nonEmpty = parsed.filter((d) => d.contents !== null).length;
  const docs: YamlDocument[] = [];
  parsed.forEach((doc, i) => {
    const at = nonEmpty > 1 ? `documents[${i}].` : "";
    if (doc.errors.length > 0) {
      // The first line locates the error; the rest is a source excerpt.
      for (const e of doc.errors) problems.push({ file, path: trimDot(at), message: firstLine(e.message) });
      return;
    }
    if (doc.contents === null) return;
    try {
      docs.push({ value: doc.toJS(), at });
    } catch (e) {
      // toJS throws for alias bombs and the like: a property of this input, reported as such.
      problems.push({ file, path: trimDot(at), message: firstLine(e instanceof Error ? e.message : String(e)) });
    }
  });
  return { docs, problems };
}

/** Validates a document against a repo schema; problems are located in `file` under `at`. */
export function schemaProblems(validate: ValidateFunction, doc: YamlDocument, file: string): Problem[] {
  if (validate(doc.value)) return [];
  return formatAjvErrors(validate.errors ?? [], doc.value, trimDot(doc.at), true).map((f) => ({ file, ...f }));
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** `documents[2].` → `documents[2]`: the path of the document itself. */
export function trimDot(at: string): string {
  return at.endsWith(".") ? at.slice(0, -1) : at;
}

function firstLine(s: string): string {
  const line = s.split("\n", 1)[0] ?? s;
  return line.endsWith(":") ? line.slice(0, -1) : line;
}
