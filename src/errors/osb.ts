import { BaseError, type ErrorOptions } from "./base.js";

/**
 * The broker's own answers: errors thrown at the OSB edge (src/broker and the questions every
 * operation on an instance asks, src/materialize) carry their HTTP status and the spec's body
 * (`{error, description, instance_usable?, update_repeatable?}`). The errors of the rooms below
 * (rendering, scheduling, stores, the git writer) carry none: src/broker maps their codes to an
 * answer in one table (ADR 0037).
 */

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

/** 400: malformed request, unknown ids, parameters failing the plan schema. */
export class BadRequestError extends OsbError {
  static override readonly code: string = "BadRequestError";
  constructor(description: string, options?: OsbErrorOptions) {
    super(400, "BadRequest", description, options);
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
