import type { Draft, GitWriter, Operation, SubmitResult } from "../gitwriter/index.js";
import { CompositeDraft, type PlacementScope } from "./composite-draft.js";
import type { Placement, StoreSet } from "./store-set.js";
import type { StoreName } from "./types.js";

/**
 * The one hop into stores/ of everything that writes (ADR 0036): the broker's operations, the
 * re-renders, the admin moves and cleanups, the import. Each says what its operation is placed on
 * (an instance, or a cluster a human chose) and never which repository: with stores, the store
 * set routes it (StoreSet.route) and queues it there (StoreSet.submitTo); without, the one
 * repository's writer takes it.
 */
export interface RoutedWriter {
  /** Queues `op` in the repository `placement` routes to; resolves once its commit is on that repository's remote. */
  submit<R>(placement: Placement, op: Operation<R>): Promise<SubmitResult<R>>;
  /** `items` grouped by the repository their placements route to, in their order (one group without stores). */
  partition<T>(items: readonly T[], placement: (item: T) => Placement): Promise<T[][]>;
  /** The clusters among `clusters` a provision running on `draft` may place its instance on (see CompositeDraft.placeable). */
  placeable<C extends { id: string }>(draft: Draft, clusters: readonly C[]): Promise<PlacementScope<C>>;
}

export function routedWriter(writer: GitWriter, stores?: StoreSet): RoutedWriter {
  if (!stores) {
    return {
      submit: (_placement, op) => writer.submit(op),
      partition: (items) => Promise.resolve(items.length === 0 ? [] : [[...items]]),
      placeable: (_draft, clusters) => Promise.resolve({ clusters: [...clusters] }),
    };
  }
  return {
    submit: async (placement, op) => stores.submitTo(await stores.route(placement), op),
    async partition<T>(items: readonly T[], placement: (item: T) => Placement): Promise<T[][]> {
      const routes = new Map<string, Promise<StoreName>>();
      const groups = new Map<StoreName, T[]>();
      for (const item of items) {
        const p = placement(item);
        const key = JSON.stringify([p.cluster, p.instance, p.cluster === undefined && p.provision === true]);
        let routed = routes.get(key);
        if (!routed) routes.set(key, (routed = stores.route(p)));
        const store = await routed;
        const group = groups.get(store);
        if (group) group.push(item);
        else groups.set(store, [item]);
      }
      return [...groups.values()];
    },
    placeable: (draft, clusters) => (draft instanceof CompositeDraft ? draft.placeable(clusters) : Promise.resolve({ clusters: [...clusters] })),
  };
}
