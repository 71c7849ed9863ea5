import { parse } from "yaml";
import type { TreeReader } from "../gitwriter/index.js";
import {
  bindingRecordPath,
  documentProblems,
  INSTANCES_DIR,
  instanceRecordPath,
  type BindingRecord,
  type InstanceRecord,
  type RepoDocumentKind,
} from "../repo/index.js";
import { error, type ValidationProblem } from "./problems.js";

/** Files below `dir`, recursively, in path order. */
export async function listFiles(tree: TreeReader, dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of (await tree.list(dir)) ?? []) {
    const path = `${dir}/${e.name}`;
    if (e.type === "tree") out.push(...(await listFiles(tree, path)));
    else out.push(path);
  }
  return out;
}

export interface Records {
  /** Every instance record that passed its schema and sits at its path, deleted ones included. */
  instances: { file: string; record: InstanceRecord }[];
  bindings: { file: string; record: BindingRecord }[];
  /** Keys of instances with a record that failed its checks: their manifests cannot be judged. */
  brokenKeys: Set<string>;
  problems: ValidationProblem[];
}

const INSTANCE_FILE = /^instances\/[0-9a-f]{2}\/[0-9a-f]{2}\/[^/]+\/instance\.yaml$/;
const BINDING_FILE = /^instances\/[0-9a-f]{2}\/[0-9a-f]{2}\/[^/]+\/bindings\/[^/]+\.yaml$/;

async function readRecord<T>(tree: TreeReader, file: string, kind: RepoDocumentKind, problems: ValidationProblem[]): Promise<T | undefined> {
  let value: unknown;
  try {
    value = parse((await tree.readText(file)) ?? "");
  } catch (e) {
    problems.push(error({ file, path: "", message: `is not valid YAML: ${e instanceof Error ? e.message.split("\n", 1)[0] : String(e)}` }));
    return undefined;
  }
  const found = documentProblems(kind, value, file);
  problems.push(...found.map(error));
  return found.length === 0 ? (value as T) : undefined;
}

/** The records under `instances/`, each checked against its schema and its place in the layout. */
export async function readRecords(tree: TreeReader): Promise<Records> {
  const out: Records = { instances: [], bindings: [], brokenKeys: new Set(), problems: [] };
  const broken = (file: string, problem?: ValidationProblem) => {
    if (problem) out.problems.push(problem);
    out.brokenKeys.add(file.split("/")[3]!);
  };
  for (const file of await listFiles(tree, INSTANCES_DIR)) {
    if (INSTANCE_FILE.test(file)) {
      const record = await readRecord<InstanceRecord>(tree, file, "instance-record", out.problems);
      const expected = record && instanceRecordPath(record.spec.instanceId);
      if (!record) broken(file);
      else if (expected !== file) broken(file, error({ file, path: "spec.instanceId", message: `the record of instance ${record.spec.instanceId} belongs at ${expected}` }));
      else out.instances.push({ file, record });
    } else if (BINDING_FILE.test(file)) {
      const record = await readRecord<BindingRecord>(tree, file, "binding-record", out.problems);
      const expected = record && bindingRecordPath(record.spec.instanceId, record.spec.bindingId);
      if (!record) broken(file);
      else if (expected !== file) broken(file, error({ file, path: "spec.bindingId", message: `the record of binding ${record.spec.bindingId} belongs at ${expected}` }));
      else out.bindings.push({ file, record });
    } else {
      out.problems.push(error({ file, path: "", message: "is not a record: only instance.yaml and bindings/<binding-key>.yaml belong under instances/<ab>/<cd>/<instance-key>/" }));
    }
  }
  return out;
}
