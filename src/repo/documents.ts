import { parseAllDocuments } from "yaml";
import type { Problem } from "../errors/index.js";
import type { TreeReader } from "../gitwriter/index.js";
import { documentProblems, type RepoDocumentKind } from "./schemas.js";

/**
 * The documents humans write by pull request (overrides, quotas): YAML files of one kind, several
 * documents per file allowed, each checked against its schema.
 */

const YAML_FILE = /\.ya?ml$/;

/** The `*.yaml` / `*.yml` files below `dir` (subdirectories included), in path order. */
export async function yamlFilesBelow(tree: TreeReader, dir: string): Promise<string[]> {
  const files: string[] = [];
  for (const e of (await tree.list(dir)) ?? []) {
    const path = `${dir}/${e.name}`;
    if (e.type === "tree") files.push(...(await yamlFilesBelow(tree, path)));
    else if (YAML_FILE.test(e.name)) files.push(path);
  }
  return files;
}

/** A well-formed document: its value, and where it is in its file ("" or `documents[1].`, the prefix of problem paths). */
export interface FileDocument {
  at: string;
  value: unknown;
}

/** The documents of `text` (the file `file`) that match the schema of `kind`, and a problem for every one that does not. */
export function schemaDocuments(kind: RepoDocumentKind, file: string, text: string): { documents: FileDocument[]; problems: Problem[] } {
  const documents: FileDocument[] = [];
  const problems: Problem[] = [];
  const docs = parseAllDocuments(text, { logLevel: "error" });
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
    const found = documentProblems(kind, value, file, at);
    if (found.length > 0) problems.push(...found);
    else documents.push({ at, value });
  }
  return { documents, problems };
}
