import { StoreUnavailableError } from "../errors/index.js";
import type { GitWriter } from "../gitwriter/index.js";
import type { Logger } from "../log/index.js";
import type { GitWriterInstruments } from "../metrics/index.js";
import { storeLabel } from "../repo/index.js";
import { backoffDelayMs, type BackoffPolicy } from "../retry/index.js";
import type { StoreName } from "./types.js";

/**
 * Starting the stores (ADR 0027, section of 2026-11-29): a broker starts when the control
 * repository answers. A store that has not answered within `waitMs` (or whose start failed) is
 * unavailable: the requests for its clusters are answered 503 with Retry-After, /readyz names it,
 * `gitops_broker_git_remote_up{store}` is 0, and its start is tried again in the background until
 * it answers; from then on it is served, without a restart.
 */
export interface StoreStarts {
  /** Resolves once every store started, or `waitMs` passed: what has not started by then is unavailable. */
  readonly started: Promise<void>;
  /** Why `name` cannot be served yet; undefined once it started (or for a name that is not a store). */
  unavailable(name: StoreName): StoreUnavailableError | undefined;
  /** Stops the retries (closing). */
  stop(): void;
}

/** Between two attempts to start a store that did not answer. */
const START_RETRY: BackoffPolicy = { baseMs: 1_000, capMs: 30_000 };

export function startStores(
  stores: ReadonlyMap<StoreName, GitWriter>,
  options: { logger: Logger; waitMs: number; metrics?: GitWriterInstruments },
): StoreStarts {
  const { logger } = options;
  /** Stores not started yet, with what their last attempt said (undefined: the first is under way). */
  const pending = new Map<StoreName, string | undefined>([...stores.keys()].map((name) => [name, undefined]));
  const timers = new Set<NodeJS.Timeout>();
  let stopped = false;

  const attempt = (name: StoreName, writer: GitWriter, n: number): Promise<void> =>
    writer.start().then(
      () => {
        const after = pending.get(name);
        pending.delete(name);
        if (after !== undefined || n > 1) logger.info({ store: name, attempts: n }, `store ${name} answers: serving its clusters`);
      },
      (error: unknown) => {
        if (stopped) return;
        const said = error instanceof Error ? error.message : String(error);
        if (pending.get(name) === undefined || n === 1) {
          logger.error({ store: name, err: error }, `store ${name} does not answer: its clusters' requests are answered 503 until it does; retrying`);
        }
        pending.set(name, said);
        options.metrics?.remoteUp.set(0, { store: name });
        const timer = setTimeout(() => {
          timers.delete(timer);
          if (!stopped) void attempt(name, writer, n + 1);
        }, backoffDelayMs(Math.min(n, 10), START_RETRY));
        timer.unref();
        timers.add(timer);
      },
    );

  const all = [...stores].map(([name, writer]) => attempt(name, writer, 1));
  let waitTimer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => {
    waitTimer = setTimeout(resolve, options.waitMs);
    waitTimer.unref();
  });
  const started = Promise.race([Promise.all(all).then(() => undefined), waited]).then(() => {
    clearTimeout(waitTimer);
    for (const [name, said] of pending) {
      options.metrics?.remoteUp.set(0, { store: name });
      if (said === undefined) {
        logger.error({ store: name, waitedMs: options.waitMs }, `store ${name} has not answered at start: serving the other stores; its clusters' requests are answered 503 until it does`);
      }
    }
  });

  return {
    started,
    unavailable(name) {
      if (!pending.has(name)) return undefined;
      const trouble = pending.get(name) ?? `no answer within ${options.waitMs / 1000} s of the broker's start`;
      return new StoreUnavailableError(
        `${storeLabel(name)} has not answered since the broker started (${trouble}); its clusters' requests are answered 503 until it does, nothing was changed: retry later`,
        { store: name },
      );
    },
    stop() {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}
