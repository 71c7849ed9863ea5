import { parseAllDocuments } from "yaml";
import { loadCatalog, loadClusters, type LoadCatalogOptions } from "../catalog/index.js";
import type { TreeReader } from "../gitwriter/index.js";
import { CATALOG_DIR, CLUSTER_REGISTRY_DIR, clusterRegistryPath, keyOf, type InstanceRecord } from "../repo/index.js";
import { driftProblems, secretProblems } from "./drift.js";
import { overrideProblems } from "./overrides.js";
import { quotaProblems } from "./quotas.js";
import { error, formatValidationProblem, warning, type ValidationProblem } from "./problems.js";
import { readRecords } from "./records.js";
import { templateProblems } from "./templates.js";

/**
 * Why `dir` is not a checkout of a GitOps repository, or null when it is one: it must hold the
 * catalog and the cluster registry. A PR job pointed at the wrong directory must fail, not pass
 * with "0 errors".
 */
export async function notAGitOpsRepository(tree: TreeReader): Promise<string | null> {
  const root = (await tree.list("")) ?? [];
  const names = new Set(root.map((e) => e.name));
  if (names.has("HEAD") && names.has("objects") && names.has("refs")) {
    return "is a bare Git repository: validate a checkout of it (git clone, or git worktree add)";
  }
  const missing = [CATALOG_DIR, CLUSTER_REGISTRY_DIR].filter((dir) => !names.has(dir.split("/")[0]!));
  const registry = missing.includes(CLUSTER_REGISTRY_DIR) ? null : await tree.list(CLUSTER_REGISTRY_DIR);
  if (registry === null && !missing.includes(CLUSTER_REGISTRY_DIR)) missing.push(CLUSTER_REGISTRY_DIR);
  if (missing.length === 0) return null;
  return `is not a GitOps repository of gitops-broker: no ${missing.map((d) => `${d}/`).join(" and no ")} (see repo-layout/README.md)`;
}

/**
 * Ids of the plans declared in catalog files that failed to load: their instances are not
 * stranded, the file's own problems say what to fix.
 */
async function plansOfBrokenFiles(tree: TreeReader, files: Set<string>): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  for (const file of files) {
    for (const doc of parseAllDocuments((await tree.readText(file)) ?? "", { logLevel: "silent" })) {
      let value: unknown;
      try {
        value = doc.toJS();
      } catch {
        continue;
      }
      const spec = (value as { spec?: { id?: unknown } } | null)?.spec;
      if (typeof spec?.id === "string") ids.set(spec.id, file);
    }
  }
  return ids;
}

/** Live instances per missing cluster and per missing plan: nothing may strand an instance. */
function offboardingProblems(
  live: InstanceRecord[],
  clusterIds: Set<string>,
  hasPlan: (id: string) => boolean,
  brokenPlans: Map<string, string>,
): ValidationProblem[] {
  const clusters = new Map<string, string[]>();
  const plans = new Map<string, string[]>();
  const add = (map: Map<string, string[]>, key: string, id: string) => map.set(key, [...(map.get(key) ?? []), id]);
  for (const r of live) {
    if (!clusterIds.has(r.spec.clusterId)) add(clusters, r.spec.clusterId, r.spec.instanceId);
    if (!hasPlan(r.spec.planId) && !brokenPlans.has(r.spec.planId)) add(plans, r.spec.planId, r.spec.instanceId);
  }
  return [
    ...[...clusters].map(([id, ids]) =>
      error({
        file: clusterRegistryPath(id),
        path: "",
        message: `cluster ${id} is missing from the registry but holds ${ids.length} live instance(s): ${ids.sort().join(", ")}; move or deprovision them first`,
      }),
    ),
    ...[...plans].map(([id, ids]) =>
      error({
        file: "catalog/",
        path: "",
        message: `plan ${id} is missing from the catalog but ${ids.length} live instance(s) use it: ${ids.sort().join(", ")}; update or deprovision them first`,
      }),
    ),
  ];
}

/**
 * Everything `gitops-broker validate` checks in a checkout of the GitOps repository, in this
 * order: files against their schemas, templates, offboarding protection, overrides, quotas, Secret
 * data under clusters/, drift under clusters/. Each problem once.
 */
export async function validateRepo(tree: TreeReader, catalogOptions: LoadCatalogOptions = {}): Promise<ValidationProblem[]> {
  const [catalog, registry, records] = await Promise.all([loadCatalog(tree, catalogOptions), loadClusters(tree), readRecords(tree)]);
  const view = { catalog: catalog.catalog, clusters: registry.clusters };
  const instances = records.instances.map((r) => r.record);
  const live = instances.filter((r) => !r.status.deleted);
  const brokenPlans = await plansOfBrokenFiles(tree, new Set(catalog.problems.map((p) => p.file)));
  // Instances whose plan did not load cannot be rendered: say so, rather than skip them silently.
  const unjudged = [...brokenPlans].flatMap(([planId, file]) => {
    const ids = live.filter((r) => r.spec.planId === planId && !view.catalog.planById(planId)).map((r) => r.spec.instanceId).sort();
    return ids.length === 0
      ? []
      : [warning({ file, path: "", message: `drift of ${ids.length} live instance(s) of plan ${planId} not checked until this file loads: ${ids.join(", ")}` })];
  });
  const problems = [
    ...catalog.problems.map(error),
    ...registry.problems.map(error),
    ...records.problems,
    ...(await templateProblems(view.catalog, view.clusters)),
    ...offboardingProblems(live, new Set(view.clusters.map((c) => c.id)), (id) => view.catalog.planById(id) !== undefined, brokenPlans),
    ...unjudged,
    ...(await overrideProblems(tree, instances, records.bindings.map((b) => b.record))),
    ...(await quotaProblems(tree, view.catalog, live)),
    ...(await secretProblems(tree)),
    ...(await driftProblems(tree, view, live.filter((r) => !records.brokenKeys.has(keyOf(r.spec.instanceId))), records.brokenKeys)),
  ];
  const seen = new Set<string>();
  return problems.filter((p) => {
    const line = formatValidationProblem(p);
    if (seen.has(line)) return false;
    seen.add(line);
    return true;
  });
}
