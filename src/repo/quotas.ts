import type { Problem } from "../errors/index.js";
import type { TreeReader } from "../gitwriter/index.js";
import { schemaDocuments, yamlFilesBelow } from "./documents.js";
import type { TenantScope } from "./instance-summary.js";
import { QUOTA_DIR } from "./layout.js";

/**
 * Quotas (repo-layout/README.md, schema repo-layout/schemas/quota.schema.json): humans add
 * `quota/<anything>.yaml` through pull requests; the broker never writes there. Each names one
 * organization, space or subaccount and how many live instances it may have of a service, or of
 * some of its plans counted together. No quota file: no limit.
 */

export interface QuotaLimit {
  /** A service name or id. */
  service: string;
  /** Plan names or ids counted together; absent: every plan of the service. */
  plans?: string[];
  /** -1 unlimited, 0 not entitled. */
  instances: number;
}

export interface Quota {
  /** Repo path of the file, and where the document is in it ("" or `documents[1].`). */
  file: string;
  at: string;
  scope: TenantScope;
  id: string;
  limits: QuotaLimit[];
}

export interface QuotaSet {
  quotas: Quota[];
  problems: Problem[];
}

const NONE: QuotaSet = { quotas: [], problems: [] };

/** Every quota document below `quota/`, in file then document order, and a problem for each that is not one. */
async function loadQuotas(tree: TreeReader): Promise<QuotaSet> {
  const quotas: Quota[] = [];
  const problems: Problem[] = [];
  for (const file of await yamlFilesBelow(tree, QUOTA_DIR)) {
    const read = schemaDocuments("quota", file, (await tree.readText(file)) ?? "");
    problems.push(...read.problems);
    for (const { at, value } of read.documents) {
      const q = value as { scope: Partial<Record<TenantScope, string>>; limits: QuotaLimit[] };
      const [scope, id] = Object.entries(q.scope)[0] as [TenantScope, string];
      quotas.push({ file, at, scope, id, limits: q.limits });
    }
  }
  return { quotas, problems };
}

/**
 * The quotas of `tree`, read once per version of `quota/` (its tree oid): a provision reads them
 * from the commit it builds on without parsing them again. A draft that edited `quota/` has no oid
 * for it: read afresh.
 */
export function createQuotaReader(): (tree: TreeReader) => Promise<QuotaSet> {
  let last: { oid: string; set: QuotaSet } | undefined;
  return async (tree) => {
    const entry = (await tree.list(""))?.find((e) => e.name === QUOTA_DIR && e.type === "tree");
    if (!entry) return NONE;
    if (entry.oid !== undefined && last?.oid === entry.oid) return last.set;
    const set = await loadQuotas(tree);
    if (entry.oid !== undefined) last = { oid: entry.oid, set };
    return set;
  };
}

/** A catalog service as a limit names it: by name or id, and its plans. */
export interface NamedService {
  id: string;
  name: string;
  plans: readonly { id: string; name: string }[];
}

/** The ids of the plans a limit counts together, or undefined when the limit is not about `service`. */
export function limitPlanIds(limit: QuotaLimit, service: NamedService): Set<string> | undefined {
  if (limit.service !== service.name && limit.service !== service.id) return undefined;
  const { plans } = limit;
  return new Set(service.plans.filter((p) => plans === undefined || plans.includes(p.name) || plans.includes(p.id)).map((p) => p.id));
}
