import { readFile } from "node:fs/promises";
import { Ajv, type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import { formatAjvErrors, InternalError, type Problem } from "../errors/index.js";

/**
 * The schemas of the files under `instances/` and `overrides/` (repo-layout/schemas/), compiled
 * once. Read from the package at run time, like the catalog's, so the files users point their
 * editors at are the ones enforced.
 */
const SCHEMA_DIR = new URL("../../repo-layout/schemas/", import.meta.url);

export type RepoDocumentKind = "instance-record" | "binding-record" | "override";
const KINDS: readonly RepoDocumentKind[] = ["instance-record", "binding-record", "override"];

let compiled: Promise<Map<RepoDocumentKind, ValidateFunction>> | undefined;

async function compile(): Promise<Map<RepoDocumentKind, ValidateFunction>> {
  const ajv = new Ajv({ allErrors: true, verbose: true, strict: true, strictRequired: false });
  addFormats.default(ajv);
  const validators = new Map<RepoDocumentKind, ValidateFunction>();
  for (const kind of KINDS) {
    const url = new URL(`${kind}.schema.json`, SCHEMA_DIR);
    try {
      validators.set(kind, ajv.compile(JSON.parse(await readFile(url, "utf8")) as object));
    } catch (e) {
      throw new InternalError(`cannot load the repository schema ${url.pathname}`, { cause: e });
    }
  }
  return validators;
}

/**
 * Problems of `value` (a document of `file`, at `at`: "" or `documents[2].`) against the schema
 * of its kind, with paths like `spec.planId`.
 */
export async function documentProblems(kind: RepoDocumentKind, value: unknown, file: string, at = ""): Promise<Problem[]> {
  compiled ??= compile().catch((e: unknown) => {
    compiled = undefined;
    throw e;
  });
  const validate = (await compiled).get(kind)!;
  if (validate(value)) return [];
  const base = at.endsWith(".") ? at.slice(0, -1) : at;
  return formatAjvErrors(validate.errors ?? [], value, base, true).map((f) => ({ file, ...f }));
}
