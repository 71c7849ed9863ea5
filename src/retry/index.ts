/**
 * The one retry policy of the broker's loops that wait before trying again: the watch caches of
 * the status watcher (after a failed list or watch) and the git writer (after a rejected push, while
 * the remote is unreachable). Exponential, capped, with "equal jitter": half of the step fixed, half
 * random, so retries of many clients spread out and a delay is never 0. Each loop keeps its own
 * steps and what overrides them (a Retry-After, a deadline). Why no library: ADR 0010's addendum.
 */
import { InvalidArgumentError } from "../errors/index.js";

export interface BackoffPolicy {
  /** The step of the first retry. */
  baseMs: number;
  /** No step is longer. */
  capMs: number;
}

/**
 * The wait before retry number `attempt` (1 for the first): between half and all of
 * min(capMs, baseMs * 2^(attempt - 1)). `random` returns a number in [0, 1).
 */
export function backoffDelayMs(attempt: number, { baseMs, capMs }: BackoffPolicy, random: () => number = Math.random): number {
  if (!Number.isInteger(attempt) || attempt < 1) throw new InvalidArgumentError(`backoff attempt must be a whole number from 1: ${attempt}`);
  const step = Math.min(capMs, baseMs * 2 ** (attempt - 1));
  return Math.round(step / 2 + (random() * step) / 2);
}
