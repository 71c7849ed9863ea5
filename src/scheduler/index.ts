import { labelSelectorScheduler } from "./label-selector.js";
import { leastUtilizedScheduler } from "./least-utilized.js";
import { roundRobinScheduler } from "./round-robin.js";
import { singleScheduler } from "./single.js";
import type { Scheduler, SchedulerConfig } from "./types.js";

/**
 * Schedulers pick the sister cluster of a new instance. They decide from the repository view
 * they are given and write nothing. An instance stays on its cluster for life, so only
 * provision consults a scheduler. Every scheduler skips drained clusters and clusters without
 * room (capacity.maxInstances, capacity.resources), and says why when none is left.
 */
export function createScheduler(config: SchedulerConfig): Scheduler {
  switch (config.type) {
    case "single":
      return singleScheduler();
    case "round-robin":
      return roundRobinScheduler();
    case "least-utilized":
      return leastUtilizedScheduler();
    case "label-selector":
      return labelSelectorScheduler();
  }
}

export type { ClusterCandidate, Scheduler, SchedulerConfig, SchedulingInput } from "./types.js";
export { parseLabelSelector, matchesSelector } from "./selector.js";
export type { Requirement, SelectorOperator } from "./selector.js";
export { parseQuantity, formatQuantity } from "./quantity.js";
export type { Quantity } from "./quantity.js";
export { scaleResources, sumResources } from "./capacity.js";
