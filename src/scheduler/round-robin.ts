import { placeableClusters } from "./placement.js";
import type { Scheduler } from "./types.js";

/**
 * `round-robin`: the cluster after the last one scheduled, in id order, wrapping around.
 * Stateless: the caller derives `lastScheduledCluster` from the repo, so the cycle survives
 * restarts and several broker replicas. A last cluster that is drained or full still marks the
 * place in the cycle; one no longer registered (or none) restarts it at the first cluster.
 */
export function roundRobinScheduler(): Scheduler {
  return {
    type: "round-robin",
    schedule(input) {
      const fits = placeableClusters(input);
      const last = input.lastScheduledCluster;
      if (last !== undefined && input.clusters.some((c) => c.id === last)) {
        const next = fits.find((c) => c.id > last);
        if (next) return next.id;
      }
      return fits[0].id;
    },
  };
}
