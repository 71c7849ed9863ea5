import { BaseError, type ErrorOptions } from "./base.js";

/**
 * Rendering: templates, Helm charts and the WebAssembly module that runs Go's engines. None of
 * them knows HTTP: the broker answers a RenderError 400 with `error: RenderFailed` (ADR 0037).
 */

/**
 * A template could not be rendered for this request (a plan's template, a value it renders, a
 * selector it produces); the message names the plan and the template.
 */
export class RenderError extends BaseError {
  static override readonly code: string = "RenderError";
}

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
