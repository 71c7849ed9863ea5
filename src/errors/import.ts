import { BaseError } from "./base.js";

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
