import type { KubernetesObject } from "@kubernetes/client-node";
import { KubeApiError } from "../errors/index.js";
import type { KubeStatus } from "../kube/index.js";

/**
 * The bookkeeping of a watch cache (kube-cache.ts), without I/O or timers: the objects of a
 * collection by namespace and name, what a list or a watch event changes in them, where the next
 * watch resumes, and how a watch connection ended. Each function returns what happened; the cache
 * emits it.
 */

export type WatchCacheEventType = "ADDED" | "MODIFIED" | "DELETED";

export interface WatchCacheEvent<T extends KubernetesObject = KubernetesObject> {
  type: WatchCacheEventType;
  object: T;
}

/** `namespace/name` ("" namespace for cluster-scoped objects). */
export function keyOf(object: KubernetesObject): string {
  return `${object.metadata?.namespace ?? ""}/${object.metadata?.name ?? ""}`;
}

/** Stores an object; ADDED or MODIFIED, or nothing when the stored one has its resourceVersion. */
export function putObject<T extends KubernetesObject>(objects: Map<string, T>, object: T): WatchCacheEvent<T> | undefined {
  const key = keyOf(object);
  const previous = objects.get(key);
  if (previous?.metadata?.resourceVersion !== undefined && previous.metadata.resourceVersion === object.metadata?.resourceVersion) return undefined;
  objects.set(key, object);
  return { type: previous === undefined ? "ADDED" : "MODIFIED", object };
}

/** Forgets an object; DELETED, or nothing when it was not there. */
export function removeObject<T extends KubernetesObject>(objects: Map<string, T>, object: T): WatchCacheEvent<T> | undefined {
  return objects.delete(keyOf(object)) ? { type: "DELETED", object } : undefined;
}

/** Replaces the contents with a fresh list: DELETED for what vanished, then ADDED/MODIFIED for what changed. */
export function replaceObjects<T extends KubernetesObject>(objects: Map<string, T>, items: readonly T[]): WatchCacheEvent<T>[] {
  const fresh = new Set(items.map(keyOf));
  const events: WatchCacheEvent<T>[] = [];
  for (const [key, object] of objects) {
    if (fresh.has(key)) continue;
    objects.delete(key);
    events.push({ type: "DELETED", object });
  }
  for (const item of items) {
    const event = putObject(objects, item);
    if (event !== undefined) events.push(event);
  }
  return events;
}

/** What one watch event means for the cache. */
export type WatchStep<T extends KubernetesObject> =
  /** A change (none for a bookmark or an unchanged object) and the resourceVersion to resume from. */
  | { kind: "event"; change?: WatchCacheEvent<T>; resourceVersion?: string }
  /** 410 Gone: the resourceVersion is older than the server keeps; the cache must re-list. */
  | { kind: "expired" }
  /** Another ERROR event: the watch fails with it. */
  | { kind: "failed"; error: KubeApiError };

/** Applies one watch event (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR) to `objects`. */
export function applyWatchEvent<T extends KubernetesObject>(objects: Map<string, T>, type: string, object: T & KubeStatus, path: string): WatchStep<T> {
  if (type === "ERROR") {
    if (object.code === 410) return { kind: "expired" };
    return { kind: "failed", error: new KubeApiError(`watch ${path}: ${object.message ?? "ERROR event"}`, { status: object.code, reason: object.reason }) };
  }
  const change = type === "ADDED" || type === "MODIFIED" ? putObject(objects, object) : type === "DELETED" ? removeObject(objects, object) : undefined;
  const resourceVersion = object.metadata?.resourceVersion;
  return { kind: "event", ...(change === undefined ? {} : { change }), ...(resourceVersion === undefined ? {} : { resourceVersion }) };
}

/** How a watch connection ended; a failure is thrown by the caller instead. */
export type WatchEnd = "ended" | "expired" | "interrupted";

/**
 * The end of a watch from what was seen: ended on purpose (`interrupted`), 410 (an ERROR event or
 * the HTTP status), the error that ended the stream, a failing ERROR event, or a plain end (the
 * server's timeout): resumed from the last resourceVersion.
 */
export function watchEnd(seen: { interrupted: boolean; expired: boolean; failure?: KubeApiError }, error: unknown, path: string): WatchEnd | KubeApiError {
  const statusCode = (error as { statusCode?: unknown } | null)?.statusCode;
  if (seen.interrupted) return "interrupted";
  if (seen.expired || statusCode === 410) return "expired";
  if (error) {
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- whatever the client passed, as it prints
    const message = error instanceof Error ? error.message : String(error);
    return new KubeApiError(`watch ${path} failed: ${message}`, typeof statusCode === "number" ? { status: statusCode } : {}, { cause: error });
  }
  return seen.failure ?? "ended";
}
