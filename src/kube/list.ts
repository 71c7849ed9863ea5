import { InvalidArgumentError, KubeApiError } from "../errors/index.js";
import type { KubeApi } from "./request.js";

/**
 * One list of a collection, to its end, in pages (`limit` + `continue`), read as raw JSON so that
 * `metadata.continue` is kept for built-in and custom resources alike. kube-apiserver serves every
 * page of one list from the snapshot of its first page (the `resourceVersion` every page carries),
 * so the pages add up to one consistent list.
 *
 * A continue token expires (410 Expired) when etcd was compacted past that snapshot (every 5
 * minutes by default) before the last page was asked for. The list then starts again from the
 * first page, a new snapshot, up to `restarts` times, and fails with a KubeApiError after: never a
 * list stitched from two snapshots (the 410's own token), which may miss an object that moved or
 * list one twice under two names, and whose resourceVersion would start a watch at the wrong place.
 */

export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  /** Objects per request, `limit` (default 500, as kubectl and client-go's pager). */
  pageSize?: number;
  /** How many times a list whose continue token expired starts again (default 2). */
  restarts?: number;
  /** Ends the list early; it then rejects with a KubeApiError. */
  signal?: AbortSignal;
  /** What is listed, for messages (default `list <path>`). */
  what?: string;
}

/**
 * `keep`: applied to each item as its page arrives; the item is left out where it answers
 * undefined, else replaced by its answer. A large list is then held only as far as it is kept
 * (a page at a time in full), not in full until its last page.
 */
export interface KeepOption<T, U> {
  keep?: (item: T) => U | undefined;
}

export interface ObjectList<T> {
  items: T[];
  /** The snapshot's resourceVersion: where a watch of the same collection resumes. */
  resourceVersion: string;
}

interface ListPage<T> {
  apiVersion?: string;
  kind?: string;
  metadata?: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  items?: T[] | null;
}

export const DEFAULT_PAGE_SIZE = 500;
const DEFAULT_RESTARTS = 2;

/**
 * Every object of the collection at `path` (e.g. `/apis/osb.servicefabrik.io/v1alpha1/sfserviceinstances`,
 * `/api/v1/namespaces/ns/secrets`), each with its apiVersion and kind (kube-apiserver leaves them
 * out of the items of built-in lists).
 */
export async function listAll<T extends object, U = T>(api: KubeApi, path: string, options: ListOptions & KeepOption<T, U> = {}): Promise<ObjectList<U>> {
  const pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(pageSize) || pageSize < 1) throw new InvalidArgumentError(`a list's page size must be a whole number from 1: ${pageSize}`);
  const restarts = options.restarts ?? DEFAULT_RESTARTS;
  const what = options.what ?? `list ${path}`;
  for (let attempt = 1; ; attempt++) {
    const listed = await listOnce<T, U>(api, path, pageSize, what, options);
    if (!("expired" in listed)) return listed;
    if (attempt <= restarts) continue;
    throw new KubeApiError(
      `${what}: the continue token expired before the last page, ${attempt} time(s) (the API server compacted its history meanwhile): ${listed.expired.message}`,
      { status: 410, reason: "Expired" },
      { cause: listed.expired },
    );
  }
}

/** One pass from the first page; `expired` when a later page answered 410 (the list starts again). */
async function listOnce<T extends object, U>(
  api: KubeApi,
  path: string,
  pageSize: number,
  what: string,
  options: ListOptions & KeepOption<T, U>,
): Promise<ObjectList<U> | { expired: KubeApiError }> {
  const items: U[] = [];
  const keep = options.keep ?? ((item: T) => item as unknown as U);
  let resourceVersion: string | undefined;
  let token: string | undefined;
  for (let page = 1; ; page++) {
    const query = { limit: pageSize, labelSelector: options.labelSelector, fieldSelector: options.fieldSelector, continue: token };
    let list: ListPage<T>;
    try {
      ({ body: list } = await api.request<ListPage<T>>({ method: "GET", path, query, what: page === 1 ? what : `${what} (page ${page})`, ...(options.signal ? { signal: options.signal } : {}) }));
    } catch (error) {
      if (token !== undefined && error instanceof KubeApiError && error.status === 410) return { expired: error };
      throw error;
    }
    if (typeof list !== "object" || list === null || !(list.items === undefined || list.items === null || Array.isArray(list.items))) {
      throw new KubeApiError(`${what}: the answer is not a list`, { status: 200 });
    }
    // kube-apiserver leaves apiVersion/kind out of the items of built-in lists; put them back.
    const kind = list.kind?.replace(/List$/, "");
    for (const item of list.items ?? []) {
      const kept = keep({ apiVersion: list.apiVersion, kind, ...item });
      if (kept !== undefined) items.push(kept);
    }
    resourceVersion ??= list.metadata?.resourceVersion ?? "";
    const next = list.metadata?.continue;
    if (next === undefined || next === "") return { items, resourceVersion };
    if (next === token) throw new KubeApiError(`${what}: the API server answered page ${page} with the continue token it was asked for`, { status: 200 });
    token = next;
  }
}
