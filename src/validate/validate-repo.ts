import { loadCatalog, loadClusters, type LoadCatalogOptions } from "../catalog/index.js";
import type { TreeReader } from "../gitwriter/index.js";
import { clusterRegistryPath, keyOf, type InstanceRecord } from "../repo/index.js";
import { driftProblems, secretProblems } from "./drift.js";
import { overrideProblems } from "./overrides.js";
import { error, formatValidationProblem, type ValidationProblem } from "./problems.js";
import { readRecords } from "./records.js";
import { templateProblems } from "./templates.js";

/** Live instances per missing cluster and per missing plan: nothing may strand an instance. */
function offboardingProblems(live: InstanceRecord[], clusterIds: Set<string>, hasPlan: (id: string) => boolean): ValidationProblem[] {
  const clusters = new Map<string, string[]>();
  const plans = new Map<string, string[]>();
  const add = (map: Map<string, string[]>, key: string, id: string) => map.set(key, [...(map.get(key) ?? []), id]);
  for (const r of live) {
    if (!clusterIds.has(r.spec.clusterId)) add(clusters, r.spec.clusterId, r.spec.instanceId);
    if (!hasPlan(r.spec.planId)) add(plans, r.spec.planId, r.spec.instanceId);
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
 * order: files against their schemas, templates, offboarding protection, overrides, Secret
 * data under clusters/, drift under clusters/. Each problem once.
 */
export async function validateRepo(tree: TreeReader, catalogOptions: LoadCatalogOptions = {}): Promise<ValidationProblem[]> {
  const [catalog, registry, records] = await Promise.all([loadCatalog(tree, catalogOptions), loadClusters(tree), readRecords(tree)]);
  const view = { catalog: catalog.catalog, clusters: registry.clusters };
  const instances = records.instances.map((r) => r.record);
  const live = instances.filter((r) => !r.status.deleted);
  const problems = [
    ...catalog.problems.map(error),
    ...registry.problems.map(error),
    ...records.problems,
    ...(await templateProblems(view.catalog, view.clusters)),
    ...offboardingProblems(live, new Set(view.clusters.map((c) => c.id)), (id) => view.catalog.planById(id) !== undefined),
    ...(await overrideProblems(tree, instances, records.bindings.map((b) => b.record))),
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
