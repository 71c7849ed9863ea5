import type { KubernetesObject } from "@kubernetes/client-node";
import { KubeApiError } from "../errors/index.js";
import type { Logger } from "../log/index.js";
import type { KubeStatus, ListWatchTransport, WatchHandle } from "../kube/index.js";
import { watchEnd, type WatchEnd, type WatchStep } from "./watch-state.js";

/**
 * One watch connection of a watch cache (kube-cache.ts), from a resourceVersion until the server
 * ends it, it fails or the cache interrupts it. What an event changes is the cache's `apply`; here
 * is what the connection needs to know of it: a 410, a failing ERROR event, whether it ended on
 * purpose.
 */

export interface WatchConnection {
  /** How the watch ended; rejects with the KubeApiError that ended it, or why it could not start. */
  ended: Promise<WatchEnd>;
  /** Ends the watch on purpose (a re-list due, stop): it ends "interrupted". Nothing once it ended. */
  interrupt(): void;
}

export interface WatchConnectionOptions<T extends KubernetesObject> {
  transport: ListWatchTransport<T>;
  resourceVersion: string;
  /** The collection, for messages. */
  path: string;
  logger: Logger;
  /** Applies one event to the cache and says what it meant. */
  apply(type: string, object: T & KubeStatus): WatchStep<T>;
  /** The server answered 200: the watch runs. */
  onStarted(): void;
}

export function openWatch<T extends KubernetesObject>(options: WatchConnectionOptions<T>): WatchConnection {
  const seen: { interrupted: boolean; expired: boolean; failure?: KubeApiError } = { interrupted: false, expired: false };
  let handle: WatchHandle | undefined;
  let finished = false;
  const onEvent = (type: string, object: T & KubeStatus): void => {
    // The transport's stream swallows what its callback throws: catch here so nothing is lost silently.
    try {
      const step = options.apply(type, object);
      if (step.kind === "expired") seen.expired = true;
      else if (step.kind === "failed") seen.failure = step.error;
    } catch (error) {
      options.logger.error({ err: error, type }, "watch cache failed to apply an event");
    }
  };
  const ended = new Promise<WatchEnd>((resolve, reject) => {
    const onDone = (error: unknown): void => {
      finished = true;
      const end = watchEnd(seen, error, options.path);
      if (end instanceof KubeApiError) reject(end);
      else resolve(end);
    };
    options.transport.watch(options.resourceVersion, onEvent, onDone).then((h) => {
      handle = h;
      if (seen.interrupted) h.abort();
      // The watch resolves once the response head arrived: not finished yet means HTTP 200.
      else if (!finished) options.onStarted();
    }, reject);
  });
  return {
    ended,
    interrupt() {
      if (finished) return;
      seen.interrupted = true;
      handle?.abort();
    },
  };
}
