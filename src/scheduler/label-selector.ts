import { leastUtilized } from "./least-utilized.js";
import { placeableClusters } from "./placement.js";
import { parseLabelSelector } from "./selector.js";
import type { Scheduler } from "./types.js";

/**
 * `label-selector`: the clusters whose labels match the plan's rendered clusterSelector
 * (Kubernetes label selector syntax), then the least utilized of them. No selector, or an
 * empty one, matches every cluster.
 */
export function labelSelectorScheduler(): Scheduler {
  return {
    type: "label-selector",
    schedule(input) {
      // Templates often leave a trailing newline; it means nothing to the selector.
      const text = (input.clusterSelector ?? "").trim();
      const requirements = parseLabelSelector(text);
      const selection = requirements.length > 0 ? { text, requirements } : undefined;
      return leastUtilized(placeableClusters(input, selection), input.instanceCounts).id;
    },
  };
}
