import { KubeApiError } from "../errors/index.js";
import { backoffDelayMs, type BackoffPolicy } from "../retry/index.js";

/**
 * The bookkeeping of a watch cache's lists, watches and failures (kube-cache.ts), without I/O or
 * timers: what `state()` shows, where the next watch resumes, whether the next step is a list,
 * and how long to wait after a failure.
 */

export interface WatchCacheState {
  /** The first list succeeded: the cache holds the collection (possibly stale while `lastError` is set). */
  synced: boolean;
  /** The most recent failure, cleared by the next successful list or watch. */
  lastError?: string;
  /** End of the last successful list. */
  lastSyncAt?: Date;
  /** The resourceVersion the next watch starts from (advanced by events and bookmarks). */
  resourceVersion: string;
  /** Lists after the first one (410, periodic, after a failed list). */
  relists: number;
  /** Watches started after the first one. */
  watchRestarts: number;
}

/** After a failed list or watch: 1 s..2 s, doubling up to 15 s..30 s. */
export const WATCH_BACKOFF: BackoffPolicy = { baseMs: 2_000, capMs: 30_000 };

/** What was thrown, as an Error: anything else is wrapped in a KubeApiError. */
export function asFailure(error: unknown): Error {
  return error instanceof Error ? error : new KubeApiError("watch cache failed", {}, { cause: error });
}

/**
 * The wait before trying again after `failures` failures in a row, the last one `failure`: the
 * server's Retry-After (a 429), else the backoff of WATCH_BACKOFF.
 */
export function retryDelayMs(failure: Error, failures: number, random: () => number): number {
  const retryAfterMs = failure instanceof KubeApiError ? failure.retryAfterMs : undefined;
  return retryAfterMs ?? backoffDelayMs(failures, WATCH_BACKOFF, random);
}

export interface WatchProgress {
  /** Where the next watch starts: the last list's resourceVersion, advanced by events and bookmarks. */
  resourceVersion: string;
  /** The next step is a list: none yet, a 410, a periodic re-list due. */
  needList: boolean;
  /** The most recent failure since the last success. */
  readonly lastFailure: Error | undefined;
  /** A list succeeded at `at`: true when it was a re-list (not the first list). */
  listed(resourceVersion: string, at: Date): boolean;
  /** A watch starts. */
  watching(): void;
  /** A list or watch succeeded: the failures are forgotten. */
  succeeded(): void;
  /** A list or watch failed: as an Error, the failures in a row, the wait before the next try. */
  failed(error: unknown, random: () => number): { failure: Error; failures: number; delayMs: number };
  state(): WatchCacheState;
}

export function createWatchProgress(): WatchProgress {
  const status: Omit<WatchCacheState, "resourceVersion"> = { synced: false, relists: 0, watchRestarts: 0 };
  let watches = 0;
  /** Consecutive failures: the backoff exponent. */
  let failures = 0;
  let lastFailure: Error | undefined;
  const progress: WatchProgress = {
    resourceVersion: "",
    needList: true,
    get lastFailure() {
      return lastFailure;
    },
    listed(resourceVersion, at) {
      const relisted = status.synced;
      if (relisted) status.relists++;
      progress.resourceVersion = resourceVersion;
      status.synced = true;
      status.lastSyncAt = at;
      progress.needList = false;
      progress.succeeded();
      return relisted;
    },
    watching() {
      if (watches++ > 0) status.watchRestarts++;
    },
    succeeded() {
      failures = 0;
      delete status.lastError;
      lastFailure = undefined;
    },
    failed(error, random) {
      const failure = asFailure(error);
      failures++;
      status.lastError = failure.message;
      lastFailure = failure;
      return { failure, failures, delayMs: retryDelayMs(failure, failures, random) };
    },
    state: () => ({ ...status, resourceVersion: progress.resourceVersion }),
  };
  return progress;
}
