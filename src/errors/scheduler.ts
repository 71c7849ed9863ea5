import { BaseError } from "./base.js";

/**
 * No cluster can take a new instance (none registered, all drained, all full, no selector
 * match), or a scheduling input is not valid (a selector, a quantity). The broker answers it 422
 * (ADR 0037).
 */
export class SchedulingError extends BaseError {
  static override readonly code: string = "SchedulingError";
}
