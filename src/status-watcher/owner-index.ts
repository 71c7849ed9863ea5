import type { KubernetesObject } from "@kubernetes/client-node";
import { LABEL_BINDING, LABEL_INSTANCE } from "../repo/index.js";
import type { WatchCacheEvent } from "./watch-state.js";

/**
 * The broker's live objects of a cluster by the instance and binding keys their labels carry
 * (live-cluster.ts), kept up to date from the owned watch caches' events: a deprovision or unbind
 * asks which objects of an instance or binding are still there without scanning every cache.
 */

export type OwnerLabel = "instance" | "binding";

export interface OwnerIndex {
  /** An event of the owned cache `watchKey` (one per kind watch, so equal names of two kinds differ). */
  apply(watchKey: string, event: WatchCacheEvent): void;
  /** The objects whose `label` carries `key`. */
  ownedBy(label: OwnerLabel, key: string): KubernetesObject[];
}

const LABELS = [
  ["instance", LABEL_INSTANCE],
  ["binding", LABEL_BINDING],
] as const;

const objectKey = (o: KubernetesObject) => `${o.metadata?.namespace ?? ""}/${o.metadata?.name ?? ""}`;

export function createOwnerIndex(): OwnerIndex {
  /** label -> key -> objects (by kind watch and object key). */
  const index = { instance: new Map<string, Map<string, KubernetesObject>>(), binding: new Map<string, Map<string, KubernetesObject>>() };
  /** The reverse: object -> the key it is indexed under, per label. */
  const owners = { instance: new Map<string, string>(), binding: new Map<string, string>() };
  return {
    apply(watchKey, event) {
      const key = `${watchKey} ${objectKey(event.object)}`;
      const labels = event.object.metadata?.labels ?? {};
      for (const [label, name] of LABELS) {
        const previous = owners[label].get(key);
        const was = previous === undefined ? undefined : index[label].get(previous);
        if (was?.delete(key) && was.size === 0) index[label].delete(previous!);
        const value = labels[name];
        if (event.type === "DELETED" || value === undefined) {
          owners[label].delete(key);
          continue;
        }
        owners[label].set(key, value);
        const objects = index[label].get(value) ?? new Map<string, KubernetesObject>();
        objects.set(key, event.object);
        index[label].set(value, objects);
      }
    },
    ownedBy: (label, key) => [...(index[label].get(key)?.values() ?? [])],
  };
}
