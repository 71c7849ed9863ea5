/**
 * The base of the one error hierarchy (ADR 0010, ADR 0037): a code, data, a cause, and a log line
 * that keeps them (toJSON).
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
