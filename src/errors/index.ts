/**
 * The one error hierarchy of gitops-broker.
 *
 * Every failure is a BaseError subclass with a static `code` of its own, which is also the
 * `code` and the `name` of its instances: a log reader or a test matches on `NotFoundError.code`
 * without constructing one. Errors that reach an OSB client carry their HTTP status and are turned
 * into the OSB error body by the single error middleware in src/broker (see `toOsbBody`). Nothing
 * else writes error bodies. This folder imports no other folder of src/.
 */

export interface ErrorOptions {
  cause?: unknown;
  data?: Record<string, unknown>;
}

export abstract class BaseError extends Error {
  /** The code (and `name`) of this class's instances; every class sets its own (as `string`, so a subclass can). */
  static readonly code: string = "BaseError";
  /** The class's static `code`. */
  readonly code: string;
  readonly data: Record<string, unknown>;

  constructor(message: string, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = new.target.code;
    this.name = this.code;
    this.data = options.data ?? {};
  }

  /**
   * What a log line needs: the code, the message, and in `data` the context, both what was given
   * as `data` and what a subclass keeps in fields of its own (an HTTP status, a reason, a kind),
   * then the cause the same way.
   */
  toJSON(): Record<string, unknown> {
    const context: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(this)) if (!NOT_CONTEXT.has(key) && value !== undefined) context[key] = value;
    return {
      code: this.code,
      message: this.message,
      data: { ...context, ...this.data },
      ...(this.cause instanceof Error ? { cause: serializeCause(this.cause) } : {}),
    };
  }
}

/** Own fields of every error that are not context of its own. */
const NOT_CONTEXT = new Set(["code", "name", "message", "data", "stack", "cause"]);

function serializeCause(cause: Error): Record<string, unknown> {
  return cause instanceof BaseError ? cause.toJSON() : { name: cause.name, message: cause.message };
}

// ---------------------------------------------------------------------------
// OSB errors: carry an HTTP status and (optionally) an OSB error code.
// ---------------------------------------------------------------------------

export interface OsbErrorOptions extends ErrorOptions {
  /** OSB `instance_usable` (only meaningful for failed update/deprovision). */
  instanceUsable?: boolean;
  /** OSB `update_repeatable`. */
  updateRepeatable?: boolean;
  /** Seconds for a Retry-After header. */
  retryAfter?: number;
}

export abstract class OsbError extends BaseError {
  static override readonly code: string = "OsbError";
  readonly status: number;
  /** The OSB `error` field (e.g. AsyncRequired); undefined for errors with only a description. */
  readonly osbCode: string | undefined;
  readonly instanceUsable: boolean | undefined;
  readonly updateRepeatable: boolean | undefined;
  readonly retryAfter: number | undefined;

  constructor(status: number, osbCode: string | undefined, description: string, options: OsbErrorOptions = {}) {
    super(description, options);
    this.status = status;
    this.osbCode = osbCode;
    this.instanceUsable = options.instanceUsable;
    this.updateRepeatable = options.updateRepeatable;
    this.retryAfter = options.retryAfter;
  }
}

/**
 * A refusal (4xx) an operation decided from what the repository holds: "gone", "not found",
 * "conflict", "in progress". Such an answer is given only from a view known to be current
 * (ADR 0012): the git writer confirms it with a fetch when its view predates the request.
 */
export function isNegativeAnswer(error: unknown): boolean {
  return error instanceof OsbError && error.status >= 400 && error.status < 500;
}

/** 400: malformed request, unknown ids, parameters failing the plan schema. */
export class BadRequestError extends OsbError {
  static override readonly code: string = "BadRequestError";
  constructor(description: string, options?: OsbErrorOptions) {
    super(400, "BadRequest", description, options);
  }
}

/** 400 with a specific OSB-ish code: a template could not be rendered for this request. */
export class RenderError extends OsbError {
  static override readonly code: string = "RenderError";
  constructor(description: string, options?: OsbErrorOptions) {
    super(400, "RenderFailed", description, options);
  }
}

export class UnauthorizedError extends OsbError {
  static override readonly code: string = "UnauthorizedError";
  constructor(description = "authentication required") {
    super(401, undefined, description);
  }
}

/** 413: a request body over the limit of its endpoint. */
export class PayloadTooLargeError extends OsbError {
  static override readonly code: string = "PayloadTooLargeError";
  constructor(description: string, options?: OsbErrorOptions) {
    super(413, undefined, description, options);
  }
}

/** 415: a Content-Encoding or charset the broker does not read. */
export class UnsupportedMediaTypeError extends OsbError {
  static override readonly code: string = "UnsupportedMediaTypeError";
  constructor(description: string, options?: OsbErrorOptions) {
    super(415, undefined, description, options);
  }
}

/**
 * 403: the request is refused by a rule of the catalog or the quota (a deprecated plan, no quota
 * left). `error` is Service Fabrik's `Forbidden`, as its broker answered.
 */
export class ForbiddenError extends OsbError {
  static override readonly code: string = "ForbiddenError";
  constructor(description: string, options?: OsbErrorOptions) {
    super(403, "Forbidden", description, options);
  }
}

export class NotFoundError extends OsbError {
  static override readonly code: string = "NotFoundError";
  constructor(description: string, options?: OsbErrorOptions) {
    super(404, undefined, description, options);
  }
}

export class ConflictError extends OsbError {
  static override readonly code: string = "ConflictError";
  constructor(description: string, options?: OsbErrorOptions) {
    super(409, undefined, description, options);
  }
}

export class GoneError extends OsbError {
  static override readonly code: string = "GoneError";
  constructor(description: string, options?: OsbErrorOptions) {
    super(410, undefined, description, options);
  }
}

export class PreconditionFailedError extends OsbError {
  static override readonly code: string = "PreconditionFailedError";
  constructor(description: string, options?: OsbErrorOptions) {
    super(412, undefined, description, options);
  }
}

export class AsyncRequiredError extends OsbError {
  static override readonly code: string = "AsyncRequiredError";
  constructor(description = "This service plan requires client support for asynchronous service operations.") {
    super(422, "AsyncRequired", description);
  }
}

export class ConcurrencyError extends OsbError {
  static override readonly code: string = "ConcurrencyError";
  constructor(description: string, options?: OsbErrorOptions) {
    super(422, "ConcurrencyError", description, options);
  }
}

export class MaintenanceInfoConflictError extends OsbError {
  static override readonly code: string = "MaintenanceInfoConflictError";
  constructor(description: string) {
    super(422, "MaintenanceInfoConflict", description);
  }
}

export class RequiresAppError extends OsbError {
  static override readonly code: string = "RequiresAppError";
  constructor(description = "This service supports generation of credentials through binding an application only.") {
    super(422, "RequiresApp", description);
  }
}

/** 422 without a spec code: the request is well-formed but cannot be carried out (e.g. plan not updateable). */
export class UnprocessableEntityError extends OsbError {
  static override readonly code: string = "UnprocessableEntityError";
  constructor(description: string, options?: OsbErrorOptions) {
    super(422, undefined, description, options);
  }
}

/** 422: no cluster can take a new instance (none registered, all drained, all full, no selector match). */
export class SchedulingError extends OsbError {
  static override readonly code: string = "SchedulingError";
  constructor(description: string, options?: OsbErrorOptions) {
    super(422, undefined, description, options);
  }
}

/** 503: the Git remote did not accept the change in time; nothing was acknowledged. */
export class ServiceUnavailableError extends OsbError {
  static override readonly code: string = "ServiceUnavailableError";
  constructor(description: string, options?: OsbErrorOptions) {
    super(503, undefined, description, { retryAfter: 5, ...options });
  }
}

/**
 * 503: the platform closed the connection of a provision or bind before its operation was
 * committed, so nothing was (OSB orphan mitigation, ADR 0034). Nobody reads the answer; it is the
 * request's log line.
 */
export class AbandonedRequestError extends OsbError {
  static override readonly code: string = "AbandonedRequestError";
  constructor(description: string, options?: OsbErrorOptions) {
    super(503, undefined, description, options);
  }
}

/**
 * 500: a broker bug. The description never leaks internals beyond the message. Also the one class
 * for an internal invariant that cannot fail ("cannot happen"): its message says which.
 */
export class InternalError extends OsbError {
  static override readonly code: string = "InternalError";
  constructor(description: string, options?: OsbErrorOptions) {
    super(500, undefined, description, options);
  }
}

// ---------------------------------------------------------------------------
// Component errors (never sent as-is; wrapped into an OsbError where they reach HTTP).
// ---------------------------------------------------------------------------

/** One problem in a configuration or repository file, located by a JSON-pointer-like path. */
export interface Problem {
  /** File (repo-relative) or "config"/"env". */
  file: string;
  /** Path inside the document, e.g. `spec.templates[2].content` ("" for the whole file). */
  path: string;
  message: string;
}

export function formatProblem(p: Problem): string {
  return p.path ? `${p.file}: ${p.path}: ${p.message}` : `${p.file}: ${p.message}`;
}

export class ConfigError extends BaseError {
  static override readonly code: string = "ConfigError";
  readonly problems: Problem[];
  constructor(problems: Problem[], options?: ErrorOptions) {
    super(`invalid configuration:\n${problems.map(formatProblem).join("\n")}`, options);
    this.problems = problems;
  }
}

export class CatalogError extends BaseError {
  static override readonly code: string = "CatalogError";
  readonly problems: Problem[];
  constructor(problems: Problem[], options?: ErrorOptions) {
    super(`invalid catalog:\n${problems.map(formatProblem).join("\n")}`, options);
    this.problems = problems;
  }
}

/** Where a GitRemoteError happened, and what is known of a push that got no answer. */
export interface GitRemoteErrorDetails extends ErrorOptions {
  /** The repository's name in messages: "the control repository" or "store <name>" (see storeLabel). */
  repository?: string | undefined;
  /**
   * A push that got no verdict after its pack may have reached the remote: the remote may still
   * accept it. Its operations are never answered "nothing was changed" before the remote's branch
   * shows whether it did (ADR 0005's addendum of 2026-11-29).
   */
  inDoubt?: boolean;
  /** The command was killed for want of an answer (a remote that hangs), rather than failing. */
  timedOut?: boolean;
}

/** A Git remote refused a push (non-fast-forward, hook) or could not be reached. */
export class GitRemoteError extends BaseError {
  static override readonly code: string = "GitRemoteError";
  /** `rejected`: non-fast-forward (someone else pushed); `hook`: refused by a server hook; `unreachable`. */
  readonly kind: "rejected" | "hook" | "unreachable";
  /** What the remote said (stderr of git, `remote:` lines), for logs and OSB descriptions. */
  readonly remoteMessage: string;
  /** The repository's name in messages ("the control repository", "store eu"); undefined: not known here. */
  readonly repository: string | undefined;
  /** See GitRemoteErrorDetails. */
  readonly inDoubt: boolean;
  readonly timedOut: boolean;
  constructor(kind: "rejected" | "hook" | "unreachable", remoteMessage: string, details: GitRemoteErrorDetails = {}) {
    const { repository, inDoubt = false, timedOut = false, ...options } = details;
    super(`git remote ${kind}${repository ? ` (${repository})` : ""}: ${remoteMessage}`, options);
    this.kind = kind;
    this.remoteMessage = remoteMessage;
    this.repository = repository;
    this.inDoubt = inDoubt;
    this.timedOut = timedOut;
  }
}

/** Another process holds the data directory (see lockDataDir). */
export class DataDirLockedError extends BaseError {
  static override readonly code: string = "DataDirLocked";
  readonly holderPid: number | undefined;
  constructor(dataDir: string, role: string, holderPid: number | undefined, holderHost: string | undefined, options?: ErrorOptions) {
    const holder = holderPid === undefined ? "another process (PID unknown)" : `PID ${holderPid}${holderHost ? ` on ${holderHost}` : ""}`;
    const who = role === "serve" ? "gitops-broker serve" : "a gitops-broker command";
    super(`data directory ${dataDir} is in use by ${who}: ${holder}`, {
      ...options,
      data: { dataDir, role, holderPid, holderHost },
    });
    this.holderPid = holderPid;
  }
}

/**
 * A Git repository is not what it should be: in the writer's local repository an object missing
 * or of another type, a malformed object, pack, pack index or ref, a git command answering less
 * than asked; or a revision a record names that the remote does not have. Never an OSB answer of
 * its own: the operation fails as an internal error.
 */
export class GitRepositoryError extends BaseError {
  static override readonly code: string = "GitRepositoryError";
}

/**
 * A function was called with arguments its caller should have refused: a bug, never a user's
 * input (the configuration loader and the OSB edge refuse bad input first). The argument guards
 * of src/ throw it (a path, a commit message, an option out of range). Not an OsbError, so one
 * that reaches the error middleware is answered as any unexpected failure: 500 "internal broker
 * error", its message in the log only (ADR 0010).
 */
export class InvalidArgumentError extends BaseError {
  static override readonly code: string = "InvalidArgument";
}

/** The git writer takes no operations: not started yet, or closed for shutdown. */
export class GitWriterClosedError extends BaseError {
  static override readonly code: string = "GitWriterClosed";
}

/**
 * Telling a cluster's Argo CD / Flux about a push failed (webhook answer, annotation patch, secret).
 * Logged and counted only: it never fails an OSB request (polling stays the fallback).
 */
export class NudgeError extends BaseError {
  static override readonly code: string = "NudgeError";
  readonly clusterId: string;
  /** HTTP status of the webhook or Kubernetes API answer, when there was one. */
  readonly status: number | undefined;
  constructor(clusterId: string, message: string, details: { status?: number } = {}, options: ErrorOptions = {}) {
    super(`cluster ${clusterId}: ${message}`, options);
    this.clusterId = clusterId;
    this.status = details.status;
  }
}

/** A Kubernetes API request failed (HTTP error with a Status, or no answer). */
export class KubeApiError extends BaseError {
  static override readonly code: string = "KubeApiError";
  /** HTTP status or Status code; undefined for network failures. */
  readonly status: number | undefined;
  /** Status `reason` (e.g. `Expired`, `TooManyRequests`) when the server sent one. */
  readonly reason: string | undefined;
  /** From Retry-After on a 429/503 list response. */
  readonly retryAfterMs: number | undefined;
  constructor(
    message: string,
    details: { status?: number; reason?: string; retryAfterMs?: number } = {},
    options: ErrorOptions = {},
  ) {
    super(message, options);
    this.status = details.status;
    this.reason = details.reason;
    this.retryAfterMs = details.retryAfterMs;
  }
}

/**
 * The Service Fabrik import cannot account for what it read (ADR 0026): the instances or bindings
 * the master listed do not add up to imported + already imported + refused + skipped, or an
 * instance it pushed is not on the remote when read back. `unaccounted`: what is missing or
 * counted twice, named.
 */
export class ImportAccountingError extends BaseError {
  static override readonly code: string = "ImportAccountingError";
  readonly unaccounted: readonly string[];
  constructor(message: string, unaccounted: readonly string[]) {
    super(message);
    this.unaccounted = unaccounted;
  }
}

// ---------------------------------------------------------------------------
// Rendering: templates, Helm charts and the WebAssembly module that runs Go's engines.
// ---------------------------------------------------------------------------

/**
 * A template engine's failure, already described for the user; the renderer turns it into a
 * RenderError naming the plan and the template. `data` says which limit stopped it, if one did.
 */
export class TemplateFailure extends BaseError {
  static override readonly code: string = "TemplateFailure";
}

/**
 * A chart that does not load, download or render: the message is Helm's where Helm has one.
 * `debugHint`: Helm would add "Use --debug flag to render out invalid YAML".
 */
export class ChartError extends BaseError {
  static override readonly code: string = "ChartError";
  readonly debugHint: boolean;
  constructor(message: string, options: ErrorOptions & { debugHint?: boolean } = {}) {
    const { debugHint = false, ...rest } = options;
    super(message, rest);
    this.debugHint = debugHint;
  }
}

/** A call that the WebAssembly module answered with an error (its text), or that could not complete. */
export class WasmCallError extends BaseError {
  static override readonly code: string = "WasmCallError";
  readonly reason: "error" | "timeout" | "exited";
  constructor(message: string, reason: "error" | "timeout" | "exited", options?: ErrorOptions) {
    super(message, options);
    this.reason = reason;
  }
}

/**
 * Not a failure: a synchronous render (`renderTextNow`) that the caller must come back for once
 * `settled` resolves. The promise is no context for a log line, so it stays out of `toJSON()`.
 */
export class RenderPending extends BaseError {
  static override readonly code: string = "RenderPending";
  readonly #settled: Promise<void>;
  constructor(settled: Promise<void>) {
    super("the template is being rendered");
    this.#settled = settled;
  }
  get settled(): Promise<void> {
    return this.#settled;
  }
}

/**
 * What was thrown, as an Error: itself when it is one, else an InternalError whose message is its
 * text (throwing a non-Error is a bug; STYLE: never throw non-Errors).
 */
export function toError(thrown: unknown): Error {
  return thrown instanceof Error ? thrown : new InternalError(String(thrown), { cause: thrown });
}

export function isOsbError(e: unknown): e is OsbError {
  return e instanceof OsbError;
}

/** The OSB error body: `{error?, description, instance_usable?, update_repeatable?}`. */
export interface OsbErrorBody {
  error?: string;
  description: string;
  instance_usable?: boolean;
  update_repeatable?: boolean;
}

export function toOsbBody(e: OsbError): OsbErrorBody {
  const body: OsbErrorBody = { description: e.message };
  if (e.osbCode !== undefined) body.error = e.osbCode;
  if (e.instanceUsable !== undefined) body.instance_usable = e.instanceUsable;
  if (e.updateRepeatable !== undefined) body.update_repeatable = e.updateRepeatable;
  return body;
}

export { formatAjvErrors } from "./schema-errors.js";
