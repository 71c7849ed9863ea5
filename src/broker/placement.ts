import type { Catalog, ClusterEntry, Plan, Service } from "../catalog/index.js";
import { RenderError, SchedulingError } from "../errors/index.js";
import type { TreeReader } from "../gitwriter/index.js";
import { hasTemplate, renderText } from "../render/index.js";
import {
  instanceCounts,
  summarizeInstances,
  type InstanceRecord,
  type InstanceSummary,
  type InstanceSummaryCache,
} from "../repo/index.js";
import { parseLabelSelector, scaleResources, sumResources, type Scheduler } from "../scheduler/index.js";

/**
 * Placement of a new instance: everything the scheduler decides from is derived from the tree
 * the operation sees (the remote tip plus earlier operations of the same push), so two brokers
 * racing on one remote cannot both fill the last slot of a cluster: the loser's operation is
 * re-run on the winner's tip.
 */

type Requests = Record<string, string | number>;

function planRequests(plan: Plan | undefined): Requests | undefined {
  const requests = plan?.context.requests;
  return requests && typeof requests === "object" && !Array.isArray(requests) ? (requests as Requests) : undefined;
}

/** Requests already placed per cluster: the plans' context.requests times their live instances. */
function resourceUsage(summary: InstanceSummary, catalog: Catalog): Map<string, Record<string, string>> {
  const usage = new Map<string, Record<string, string>>();
  for (const [clusterId, plans] of summary.live) {
    const parts: Record<string, string>[] = [];
    for (const [planId, n] of plans) {
      const requests = planRequests(catalog.planById(planId));
      if (requests) parts.push(scaleResources(requests, n));
    }
    usage.set(clusterId, sumResources(parts));
  }
  return usage;
}

/** The plan's `clusterSelector` template, rendered and checked (a broken selector is the plan's fault: 400). */
async function clusterSelector(service: Service, plan: Plan, instance: InstanceRecord): Promise<string | undefined> {
  if (!hasTemplate(plan.templates, "clusterSelector")) return undefined;
  const selector = (
    await renderText({
    action: "clusterSelector",
    templates: plan.templates,
    values: { service: service.raw, plan: plan.raw, instance: instance as unknown as Record<string, unknown>, bindings: [] },
    planName: plan.name,
  })
  ).trim();
  try {
    parseLabelSelector(selector);
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    throw new RenderError(`plan ${plan.name}: template clusterSelector rendered an invalid label selector: ${reason}`, { cause: e });
  }
  return selector;
}

export async function placeInstance(args: {
  tree: TreeReader;
  cache: InstanceSummaryCache;
  scheduler: Scheduler;
  catalog: Catalog;
  clusters: readonly ClusterEntry[];
  service: Service;
  plan: Plan;
  /** The record to be written, without a cluster yet (templates may use its parameters). */
  instance: InstanceRecord;
  /** The summary of `tree`, when the caller has it already. */
  summary?: InstanceSummary;
}): Promise<ClusterEntry> {
  const { tree, cache, scheduler, catalog, clusters, service, plan, instance } = args;
  const summary = args.summary ?? (await summarizeInstances(tree, cache));
  const selector = await clusterSelector(service, plan, instance);
  const requests = planRequests(plan);
  const needsUsage = clusters.some((c) => c.capacity?.resources !== undefined);
  const clusterId = scheduler.schedule({
    clusters,
    instanceId: instance.spec.instanceId,
    planId: plan.id,
    instanceCounts: instanceCounts(summary),
    ...(needsUsage ? { resourceUsage: resourceUsage(summary, catalog) } : {}),
    ...(requests ? { requests } : {}),
    ...(summary.latestProvision ? { lastScheduledCluster: summary.latestProvision.clusterId } : {}),
    ...(selector !== undefined ? { clusterSelector: selector } : {}),
  });
  const cluster = clusters.find((c) => c.id === clusterId);
  if (!cluster) throw new SchedulingError(`scheduler chose cluster ${clusterId}, which is not registered`);
  return cluster;
}
