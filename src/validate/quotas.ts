import type { Catalog } from "../catalog/index.js";
import type { TreeReader } from "../gitwriter/index.js";
import { createQuotaReader, limitPlanIds, QUOTA_DIR, type InstanceRecord, type Quota, type TenantScope } from "../repo/index.js";
import { error, warning, type ValidationProblem } from "./problems.js";
import { listFiles } from "./records.js";

/**
 * The quota files (`quota/**\/*.yaml`): each document against its schema; its service and plans
 * in the catalog (a quota naming nothing limits nothing, which is not what its author meant); a
 * scope already over its limit is a warning (new instances are refused, live ones stay).
 */
export async function quotaProblems(tree: TreeReader, catalog: Catalog, live: readonly InstanceRecord[]): Promise<ValidationProblem[]> {
  const problems: ValidationProblem[] = [];
  for (const file of await listFiles(tree, QUOTA_DIR)) {
    if (!/\.ya?ml$/.test(file)) problems.push(warning({ file, path: "", message: "is not read by the broker (only *.yaml and *.yml files are quotas)" }));
  }
  const { quotas, problems: malformed } = await createQuotaReader()(tree);
  problems.push(...malformed.map(error));
  for (const quota of quotas) {
    for (const [index, limit] of quota.limits.entries()) {
      const path = `${quota.at}limits[${index}]`;
      const service = catalog.services.find((s) => s.name === limit.service || s.id === limit.service);
      if (!service) {
        problems.push(error({ file: quota.file, path: `${path}.service`, message: `no service ${JSON.stringify(limit.service)} in the catalog (a name or an id)` }));
        continue;
      }
      const unknown = (limit.plans ?? []).filter((name) => !service.plans.some((p) => p.name === name || p.id === name));
      for (const name of unknown) {
        problems.push(error({ file: quota.file, path: `${path}.plans`, message: `service ${service.name} has no plan ${JSON.stringify(name)} (a name or an id)` }));
      }
      if (unknown.length > 0 || limit.instances === -1) continue;
      const plans = limitPlanIds(limit, service)!;
      const count = live.filter((r) => plans.has(r.spec.planId) && inScope(r, quota)).length;
      if (count > limit.instances) {
        problems.push(
          warning({
            file: quota.file,
            path: `${path}.instances`,
            message: `${quota.scope} ${JSON.stringify(quota.id)} has ${count} live instance(s), over this limit of ${limit.instances}: new ones are refused, live ones stay`,
          }),
        );
      }
    }
  }
  return problems;
}

const SCOPE_OF: Record<TenantScope, (r: InstanceRecord) => unknown> = {
  organization: (r) => r.spec.organizationGuid,
  space: (r) => r.spec.spaceGuid,
  subaccount: (r) => r.spec.context?.subaccount_id,
};

function inScope(record: InstanceRecord, quota: Quota): boolean {
  return SCOPE_OF[quota.scope](record) === quota.id;
}
