import type { Plan, ReadinessCheck, RepoView, Service } from "../catalog/index.js";
import { AbandonedRequestError, formatProblem } from "../errors/index.js";
import type { CommitSpec, Draft, GitWriter, Operation, OperationOutcome, SubmitResult, TreeReader } from "../gitwriter/index.js";
import type { Logger } from "../log/index.js";
import type { BrokerInstruments } from "../metrics/index.js";
import type { Scheduler } from "../scheduler/index.js";
import type { StatusWatcher } from "../status-watcher/index.js";
import { brokerTrailers, readBrokerTrailers, type InstanceSummaryCache, type OperationEntry, type QuotaSet } from "../repo/index.js";
import type { ClientCertificateAuth } from "./auth.js";
import type { OsbRequestInfo } from "./headers.js";
import type { Rendered } from "../materialize/index.js";
import type { Reconciler } from "../reconcile/index.js";
import type { Placement, RoutedWriter, StoreSet } from "../stores/index.js";

/** Everything the broker depends on, passed in (see createApp). */
export interface BrokerDeps {
  /** The control repository's writer, or the store set spanning it and the stores (ADR 0027). */
  writer: GitWriter;
  /** With stores (ADR 0027): what `writer` spans, for the operations routed to a store (ADR 0036) and a cluster's move. */
  stores?: StoreSet;
  view: RepoView;
  scheduler: Scheduler;
  status: StatusWatcher;
  logger: Logger;
  /** The HTTP surface's instruments (default: record nothing). */
  metrics?: BrokerInstruments;
  credentials: { username: string; password: string };
  /** Client-certificate authentication (TLS with a client CA), and how it combines with `credentials`; none: basic auth only. */
  clientCertificates?: ClientCertificateAuth;
  /** Clock for operation timestamps. */
  now?: () => Date;
  /** Source of operation ids (random by default). */
  newId?: () => string;
  /** Reported in commit trailers. */
  brokerVersion?: string;
  /** Memo of instance summaries (share it with the repo view); created when not given. */
  summaries?: InstanceSummaryCache;
  /** Extra readiness checks for /readyz (e.g. last catalog load had no problems). */
  readiness?: () => Promise<ReadinessCheck[]>;
  /** Re-rendering (POST /admin/rerender) and the push webhook (POST /admin/webhook); none: no such endpoints. */
  reconcile?: ReconcileEndpoints;
}

export interface ReconcileEndpoints {
  reconciler: Reconciler;
  /** The branch the broker writes: only pushes to it trigger a fetch. */
  branch: string;
  /** Shared secret of the webhook; null: POST /admin/webhook does not exist (404). */
  webhookSecret: string | null;
  /** The stores' repositories: a push event naming one fetches that store only (ADR 0027). */
  stores?: { name: string; remote: string; branch: string }[];
}

/** A handler's answer: status, JSON body, optional Retry-After seconds. */
export interface OsbResponse {
  status: number;
  body: Record<string, unknown>;
  retryAfter?: number;
}

export interface Ctx {
  deps: Required<Omit<BrokerDeps, "readiness" | "summaries" | "reconcile" | "clientCertificates" | "stores">> &
    Pick<BrokerDeps, "readiness" | "reconcile" | "clientCertificates" | "stores">;
  /** Memo of per-subtree instance summaries (scheduling input), shared by all operations. */
  summaries: InstanceSummaryCache;
  /** The quotas of a tree (`quota/`), read once per version. */
  quotas: (tree: TreeReader) => Promise<QuotaSet>;
  /** Where every write goes: the repository its placement routes to (routedWriter over `writer` and `stores`). */
  routed: RoutedWriter;
}

/** Plan-level value, else the service's (OSB inheritance rule for bindable / plan_updateable). */
export function planBindable(service: Service, plan: Plan): boolean {
  return plan.bindable ?? service.bindable;
}

export function planUpdateable(service: Service, plan: Plan): boolean {
  return plan.planUpdateable ?? service.planUpdateable;
}

/** Commit message: `<action> <service>/<plan> instance <id>` plus audit trailers. */
export function commitSpec(
  ctx: Ctx,
  args: {
    action: string;
    service: Service;
    plan: Plan;
    instanceId: string;
    bindingId?: string;
    /** A rotation's predecessor (OSB predecessor_binding_id): named in the subject and a trailer. */
    predecessorBindingId?: string | undefined;
    operationId: string;
    osb: OsbRequestInfo;
    /** Override files the operation's renders applied (see appliedOverrides). */
    overrides?: string[];
  },
): CommitSpec {
  const subject =
    `${args.action} ${args.service.name}/${args.plan.name} instance ${args.instanceId}` +
    (args.bindingId ? ` binding ${args.bindingId}` : "") +
    (args.predecessorBindingId ? `, successor of ${args.predecessorBindingId}` : "");
  const trailers = brokerTrailers({
    operation: args.operationId,
    instanceId: args.instanceId,
    bindingId: args.bindingId,
    predecessorBindingId: args.predecessorBindingId,
    originatingIdentity: args.osb.originatingIdentity,
    requestIdentity: args.osb.requestIdentity,
    overrides: args.overrides,
    brokerVersion: ctx.deps.brokerVersion,
  });
  return { subject, trailers };
}

/**
 * The override files an operation's renders applied, for its `Overrides` trailer. Overrides that
 * could not be applied do not fail the operation (a pull request must not break OSB requests):
 * they are logged here and reported by `gitops-broker validate`.
 */
export function appliedOverrides(ctx: Ctx, instanceId: string, ...rendered: Rendered[]): string[] {
  const logged = new Set<string>();
  for (const p of rendered.flatMap((r) => r.problems)) {
    const line = formatProblem(p);
    if (logged.has(line)) continue;
    logged.add(line);
    ctx.deps.logger.warn({ instanceId, file: p.file, path: p.path }, `override not applied: ${line}`);
  }
  return [...new Set(rendered.flatMap((r) => r.overrides))];
}

/**
 * Queue an operation on an instance: `ctx.routed` is the one hop into stores/, which names the
 * repository its placement routes to (ADR 0036). It first brings the catalog and registry in line
 * with its base tree.
 */
export async function submitOp<R>(ctx: Ctx, op: Operation<R>, placement: Placement): Promise<SubmitResult<R>> {
  let spec: CommitSpec | null = null;
  const run: Operation<R> = async (draft) => {
    await ctx.deps.view.sync(draft);
    const outcome = await op(draft);
    spec = outcome.commit; // the last run's outcome is the one that was pushed
    return outcome;
  };
  const submitted = await ctx.routed.submit(placement, run);
  const trailers = (spec as CommitSpec | null)?.trailers;
  if (submitted.commit && trailers) {
    const { operation, instanceId, bindingId, requestIdentity } = readBrokerTrailers(trailers);
    // The platform counts maximum_polling_duration from the answer about to be given.
    if (operation) ctx.deps.status.acknowledged?.(operation);
    ctx.deps.logger.info(
      { commit: submitted.commit, operation, instanceId, bindingId, requestIdentity },
      (spec as CommitSpec | null)?.subject ?? "committed",
    );
  }
  return submitted;
}

/** A new OSB operation's id and time (RFC 3339), for its record entry, commit and answer. */
export interface OperationIds {
  operationId: string;
  at: string;
}

/** A request the platform may abandon (its connection closes first), and what it asks, for the log and error. */
export interface Abandonable {
  signal: AbortSignal | undefined;
  /** e.g. `provision of instance db-1`. */
  what: string;
}

/**
 * The prologue every OSB write shares: a new operation id and time, then `run` queued on the
 * writer (see submitOp). Resolves with its result once its commit is on the remote. With
 * `abandonable`, a run (or re-run) that starts after the platform closed the connection commits
 * nothing: a provision or bind nobody waits for any more is not created (ADR 0034).
 */
export async function runOperation<R>(
  ctx: Ctx,
  run: (draft: Draft, ids: OperationIds) => Promise<OperationOutcome<R>>,
  placement: Placement,
  abandonable?: Abandonable,
): Promise<R> {
  const ids: OperationIds = { operationId: ctx.deps.newId(), at: ctx.deps.now().toISOString() };
  const { result } = await submitOp(
    ctx,
    (draft) => {
      if (abandonable?.signal?.aborted) {
        ctx.deps.logger.warn({ operation: ids.operationId }, `${abandonable.what}: the platform closed the connection before it was committed; nothing committed`);
        throw new AbandonedRequestError(`the platform closed the connection before the ${abandonable.what} was committed: nothing was committed (OSB orphan mitigation)`);
      }
      return run(draft, ids);
    },
    placement,
  );
  return result;
}

/** An operation entry for a record, with the request's identities. */
export function operationEntry<A extends string>(
  action: A,
  id: string,
  at: string,
  osb: OsbRequestInfo,
  extra: Partial<OperationEntry<A>> = {},
): OperationEntry<A> {
  return {
    id,
    action,
    at,
    ...extra,
    ...(osb.requestIdentity ? { requestIdentity: osb.requestIdentity } : {}),
    ...(osb.originatingIdentity ? { originatingIdentity: osb.originatingIdentity } : {}),
  };
}
