import { createHash } from "node:crypto";
import type { StoreName } from "./types.js";

/**
 * The store a new instance goes to (ADR 0027): weighted rendezvous hashing of its id over the
 * stores with a schedulable cluster, each weighted by its number of schedulable clusters. A
 * function of the id and the registry alone, so every replica sends the same new id to the same
 * store, whatever it has fetched: two provisions of one id (a platform's retry, two replicas at
 * once) meet in one store's queue, where the second sees the first's record (200 or 409), and the
 * id is never created twice. Instances spread over the stores in proportion to their clusters;
 * within the store the scheduler places as usual. Undefined when no cluster is schedulable.
 */
export function storeForNewInstance(
  instanceId: string,
  clusters: readonly { id: string; schedulable: boolean }[],
  storeOf: (clusterId: string) => StoreName,
): StoreName | undefined {
  const weights = new Map<StoreName, number>();
  for (const c of clusters) if (c.schedulable) weights.set(storeOf(c.id), (weights.get(storeOf(c.id)) ?? 0) + 1);
  let best: { store: StoreName; score: number } | undefined;
  for (const [store, weight] of weights) {
    // -weight / ln(u), u uniform in (0, 1) from the hash: the largest wins (weighted rendezvous).
    const digest = createHash("sha256").update(`${store}\u0000${instanceId}`).digest();
    const u = (digest.readUIntBE(0, 6) + 1) / (2 ** 48 + 1);
    const score = -weight / Math.log(u);
    if (!best || score > best.score || (score === best.score && store < best.store)) best = { store, score };
  }
  return best?.store;
}
