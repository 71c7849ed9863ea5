import {
  BaseError,
  ClusterMoveConflictError,
  ClusterMovedError,
  ClusterMoveRefusedError,
  ClusterMovingError,
  GitRemoteError,
  GitWriterClosedError,
  InstanceMoveAcrossStoresError,
  InternalError,
  OsbError,
  RenderError,
  SchedulingError,
  StoreUnavailableError,
  toOsbBody,
  type OsbErrorBody,
} from "../errors/index.js";
import { requestError } from "./hostile-input.js";

/**
 * How an error becomes an OSB answer (ADR 0037). The broker's own errors (OsbError) carry their
 * status and body. The rooms below it (rendering, scheduling, stores, the git writer) throw
 * errors with a code and data and know nothing of HTTP: this table is the one place that says
 * how each code a client may see is answered. Anything else is a 500 "internal broker error".
 */

/** An error answer: HTTP status, OSB body, Retry-After seconds, and the code the request's log line names. */
export interface OsbErrorAnswer {
  status: number;
  body: OsbErrorBody;
  retryAfter?: number;
  code: string;
}

interface Rule<E extends BaseError> {
  status: number;
  /** OSB `error` (e.g. RenderFailed); none: a description only. */
  error?: string;
  retryAfter?: number;
  /** The description; default the error's message. `read`: the request only reads. */
  description?: (error: E, read: boolean) => string;
}

type ErrorClass<E extends BaseError> = { readonly code: string; readonly prototype: E };

function rule<E extends BaseError>(cls: ErrorClass<E>, answer: Rule<E>): [string, Rule<BaseError>] {
  return [cls.code, answer as Rule<BaseError>];
}

/** A Git remote's failure names the repository, and says what it means for the request (ADR 0005's addendum of 2026-11-29). */
function remoteFailure(err: GitRemoteError, read: boolean): string {
  const remote = err.repository ? `the Git remote of ${err.repository}` : "the Git remote";
  if (err.kind === "hook") return `${remote} refused the change: ${err.remoteMessage}`;
  if (read) return `${remote} could not be reached to answer this read; nothing is known to be missing, retry later: ${err.remoteMessage}`;
  if (err.inDoubt) {
    return `${remote} did not say whether it took the change; retry the same request, it is answered from the repository: ${err.remoteMessage}`;
  }
  return `${remote} could not be reached; nothing was changed, retry later: ${err.remoteMessage}`;
}

/** The one table: every code of the rooms below the broker that reaches an OSB client, and its answer. */
const ANSWERS = new Map<string, Rule<BaseError>>([
  // A template that cannot be rendered for this request (the plan's, or what the request gave it).
  rule(RenderError, { status: 400, error: "RenderFailed" }),
  // No cluster can take the instance, or its selector or requests are not valid.
  rule(SchedulingError, { status: 422 }),
  // Stores (ADR 0027, ADR 0036).
  rule(InstanceMoveAcrossStoresError, { status: 422 }),
  rule(ClusterMoveRefusedError, { status: 422 }),
  rule(ClusterMoveConflictError, { status: 409 }),
  rule(ClusterMovingError, { status: 503, retryAfter: 5 }),
  rule(ClusterMovedError, { status: 503, retryAfter: 1 }),
  rule(StoreUnavailableError, { status: 503, retryAfter: 10 }),
  // The git writer: nothing was changed (or, in doubt, retrying is safe).
  rule(GitRemoteError, { status: 503, retryAfter: 5, description: remoteFailure }),
  rule(GitWriterClosedError, { status: 503, retryAfter: 5, description: () => "the broker is shutting down; nothing was changed, retry" }),
]);

/** The codes the table answers (for the test that every error class is answered or said not to be). */
export const ANSWERED_CODES: readonly string[] = [...ANSWERS.keys()];

function fromOsbError(error: OsbError, code = error.code): OsbErrorAnswer {
  return { status: error.status, body: toOsbBody(error), ...(error.retryAfter !== undefined ? { retryAfter: error.retryAfter } : {}), code };
}

/** The answer of an error the broker knows: an OsbError, or a code of the table; undefined for anything else (a defect). */
export function knownAnswer(error: unknown, read = false): OsbErrorAnswer | undefined {
  if (error instanceof OsbError) return fromOsbError(error);
  if (!(error instanceof BaseError)) return undefined;
  const answer = ANSWERS.get(error.code);
  if (!answer) return undefined;
  const body: OsbErrorBody = { description: answer.description?.(error, read) ?? error.message };
  if (answer.error !== undefined) body.error = answer.error;
  return { status: answer.status, body, ...(answer.retryAfter !== undefined ? { retryAfter: answer.retryAfter } : {}), code: error.code };
}

/**
 * The answer to any error: a known one (knownAnswer), a failure of the request's transport (body
 * parser, bad percent-encoding, zlib: a 4xx), else 500 "internal broker error" (its cause stays
 * in the log).
 */
export function osbAnswer(error: unknown, read: boolean): OsbErrorAnswer {
  const known = knownAnswer(error, read);
  if (known) return known;
  return fromOsbError(requestError(error) ?? new InternalError("internal broker error", { cause: error }));
}

/**
 * A refusal (4xx) an operation decided from what the repository holds: "gone", "not found",
 * "conflict", "in progress", "no room". Such an answer is given only from a view known to be
 * current (ADR 0012): the git writer confirms it with a fetch when its view predates the request
 * (its `confirmRejection`).
 */
export function isNegativeAnswer(error: unknown): boolean {
  const answer = knownAnswer(error);
  return answer !== undefined && answer.status >= 400 && answer.status < 500;
}
