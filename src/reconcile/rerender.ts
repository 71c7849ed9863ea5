import { formatProblem } from "../errors/index.js";
import type { Draft, Operation } from "../gitwriter/index.js";
import type { Logger } from "../log/index.js";
import { brokerTrailers, readInstance } from "../repo/index.js";
import type { StatusWatcher } from "../status-watcher/index.js";
import type { RepoView } from "../catalog/index.js";
import { renderInstanceInto, runningOperation } from "../materialize/index.js";

/**
 * One re-render: the instance's objects (and its bindings') rendered again from its records as
 * they are, with the catalog, registry and overrides of the tree the operation runs on. The
 * records do not change; when the result is identical, the writer makes no commit.
 */

export type RerenderReason = "plan-changed" | "override-changed" | "manual";

export interface RerenderRequest {
  /** The instance id, or its key (`overrides/<key>/` knows only the key; records are found by either). */
  instance: string;
  reason: RerenderReason;
  /** The commit that caused it, cited as Plan-Commit / Override-Commit. */
  cause?: string;
}

/** busy: an operation of the instance is in progress (retry later); gone: no live instance. */
export type RerenderResult = "rendered" | "busy" | "gone";

export interface RerenderDeps {
  view: RepoView;
  status: Pick<StatusWatcher, "instanceStatus">;
  logger: Logger;
  brokerVersion: string;
}

/** The trailer that cites the cause. */
const CAUSE_FIELD: Record<RerenderReason, "planCommit" | "overrideCommit" | undefined> = {
  "plan-changed": "planCommit",
  "override-changed": "overrideCommit",
  manual: undefined,
};

export function rerenderOperation(deps: RerenderDeps, request: RerenderRequest): Operation<RerenderResult> {
  return async (draft: Draft) => {
    await deps.view.sync(draft);
    const record = await readInstance(draft, request.instance);
    if (!record || record.status.deleted) return { commit: null, result: "gone" };
    if (runningOperation(deps.status, record)) return { commit: null, result: "busy" };

    const { instanceId, serviceId, planId } = record.spec;
    const catalog = deps.view.catalog();
    const rendered = await renderInstanceInto(draft, { catalog, clusters: deps.view.clusters() }, instanceId);
    for (const p of rendered.problems) {
      deps.logger.warn({ instanceId, file: p.file, path: p.path }, `override not applied: ${formatProblem(p)}`);
    }
    // renderInstanceInto found both, or it would have thrown.
    const service = catalog.serviceById(serviceId)!;
    const plan = catalog.planById(planId)!;

    const cause = CAUSE_FIELD[request.reason];
    const trailers = brokerTrailers({
      reason: request.reason,
      ...(cause && request.cause ? { [cause]: request.cause } : {}),
      instanceId,
      overrides: rendered.overrides,
      brokerVersion: deps.brokerVersion,
    });
    return { commit: { subject: `re-render ${service.name}/${plan.name} instance ${instanceId}`, trailers }, result: "rendered" };
  };
}
