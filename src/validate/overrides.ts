import type { TreeReader } from "../gitwriter/index.js";
import { isDns1123Label, keyOf, OVERRIDES_DIR, readOverrides, type BindingRecord, type InstanceRecord } from "../repo/index.js";
import { error, warning, type ValidationProblem } from "./problems.js";
import { listFiles } from "./records.js";

/**
 * The part of the override checks the renders cannot see: files outside `overrides/<key>/`,
 * directories of no live instance, overrides of bindings that are not bound. Whether the target of
 * a live instance's override exists (and the patched object is valid) comes from the drift
 * check's renders, which apply the overrides as the broker does.
 */
export async function overrideProblems(
  tree: TreeReader,
  instances: InstanceRecord[],
  bindings: BindingRecord[],
): Promise<ValidationProblem[]> {
  const problems: ValidationProblem[] = [];
  const byKey = new Map(instances.map((r) => [keyOf(r.spec.instanceId), r]));
  const keys = new Set<string>();
  for (const file of await listFiles(tree, OVERRIDES_DIR)) {
    const [, key, ...rest] = file.split("/");
    if (rest.length === 0) {
      problems.push(error({ file, path: "", message: "overrides belong in overrides/<instance-key>/" }));
    } else if (!/\.ya?ml$/.test(file)) {
      problems.push(warning({ file, path: "", message: "is not read by the broker (only *.yaml and *.yml files are overrides)" }));
    } else keys.add(key!);
  }
  for (const key of [...keys].sort()) {
    const dir = `${OVERRIDES_DIR}/${key}`;
    if (!isDns1123Label(key)) {
      problems.push(error({ file: `${dir}/`, path: "", message: `${JSON.stringify(key)} is not an instance key (the instance id, or sha224 of it)` }));
      continue;
    }
    const record = byKey.get(key);
    if (record && !record.status.deleted) {
      problems.push(...(await boundTargets(tree, record, bindings)));
      continue; // the rest is checked by rendering the instance
    }
    const { problems: malformed } = await readOverrides(tree, key);
    problems.push(...malformed.map(error));
    problems.push(
      record
        ? warning({ file: `${dir}/`, path: "", message: `instance ${record.spec.instanceId} is deprovisioned: these overrides apply to nothing` })
        : error({ file: `${dir}/`, path: "", message: `no instance has the key ${key}: these overrides apply to nothing` }),
    );
  }
  return problems;
}

/** Overrides naming a binding need that binding to be live. */
async function boundTargets(tree: TreeReader, instance: InstanceRecord, bindings: BindingRecord[]): Promise<ValidationProblem[]> {
  const { instanceId } = instance.spec;
  const live = new Set(
    bindings.filter((b) => b.spec.instanceId === instanceId && !b.status.deleted).map((b) => keyOf(b.spec.bindingId)),
  );
  const { overrides } = await readOverrides(tree, instanceId);
  return overrides
    .filter((o) => o.binding !== undefined && !live.has(keyOf(o.binding)))
    .map((o) => error({ file: o.file, path: `${o.at}binding`, message: `instance ${instanceId} has no live binding ${o.binding}` }));
}
