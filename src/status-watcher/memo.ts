/**
 * The status watcher's memo of computed results (watcher.ts): a value is kept with the inputs it
 * was computed from (a cluster's version, the catalog object, a problem's text) and served only
 * while those are the same ones (`Object.is`), so that a poll costs a map lookup and nothing is
 * computed twice from the same view. One abstraction for each cache of the watcher: final
 * statuses (no inputs), statuses in progress, a binding's credentials, an operation's prepared
 * templates.
 *
 * Bounded: once `limit` values are kept, storing another drops the one stored first (insertion
 * order; storing a key again keeps its place), as the watcher's maps did. Not least-recently-used:
 * a lookup stays a plain Map read.
 */
import { InvalidArgumentError } from "../errors/index.js";

export interface Memo<V> {
  /** The value stored for `key` from these `inputs`; undefined when none was, or from others. */
  get(key: string, inputs: readonly unknown[]): V | undefined;
  set(key: string, inputs: readonly unknown[], value: V): void;
  /** The stored value, else `compute()`'s, stored unless `keep` refuses it. */
  through(key: string, inputs: readonly unknown[], compute: () => V, keep?: (value: V) => boolean): V;
  delete(key: string): void;
  /** Every stored value, whatever its inputs, in the order stored. */
  values(): IterableIterator<V>;
  readonly size: number;
}

/** Whether two lists of inputs hold the same values, each compared with Object.is. */
export function sameInputs(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
  return true;
}

export function createMemo<V>(limit: number): Memo<V> {
  if (!Number.isInteger(limit) || limit < 1) throw new InvalidArgumentError(`memo limit must be a whole number from 1: ${limit}`);
  const entries = new Map<string, { inputs: readonly unknown[]; value: V }>();
  const memo: Memo<V> = {
    get(key, inputs) {
      const entry = entries.get(key);
      return entry !== undefined && sameInputs(entry.inputs, inputs) ? entry.value : undefined;
    },
    set(key, inputs, value) {
      if (!entries.has(key) && entries.size >= limit) entries.delete(entries.keys().next().value!);
      entries.set(key, { inputs, value });
    },
    through(key, inputs, compute, keep) {
      const entry = entries.get(key);
      if (entry !== undefined && sameInputs(entry.inputs, inputs)) return entry.value;
      const value = compute();
      if (keep === undefined || keep(value)) memo.set(key, inputs, value);
      return value;
    },
    delete: (key) => void entries.delete(key),
    *values() {
      for (const entry of entries.values()) yield entry.value;
    },
    get size() {
      return entries.size;
    },
  };
  return memo;
}
