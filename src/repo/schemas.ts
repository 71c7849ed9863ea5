import type { ValidateFunction } from "ajv";
import { formatAjvErrors, type Problem } from "../errors/index.js";
import { validators } from "./record-validators.generated.js";

/**
 * The schemas of the files under `instances/`, `overrides/` and `quota/` (repo-layout/schemas/),
 * precompiled by scripts/generate-validators.mjs (ADR 0020), like the catalog's: the files users
 * point their editors at are the ones enforced.
 */
export type RepoDocumentKind = "instance-record" | "binding-record" | "override" | "quota";

const VALIDATORS: Record<RepoDocumentKind, ValidateFunction> = {
  "instance-record": validators.instanceRecord,
  "binding-record": validators.bindingRecord,
  override: validators.override,
  quota: validators.quota,
};

/**
 * Problems of `value` (a document of `file`, at `at`: "" or `documents[2].`) against the schema
 * of its kind, with paths like `spec.planId`.
 */
export function documentProblems(kind: RepoDocumentKind, value: unknown, file: string, at = ""): Problem[] {
  const validate = VALIDATORS[kind];
  if (validate(value)) return [];
  const base = at.endsWith(".") ? at.slice(0, -1) : at;
  return formatAjvErrors(validate.errors ?? [], value, base, true).map((f) => ({ file, ...f }));
}
