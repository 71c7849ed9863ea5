import { SchedulingError } from "../errors/index.js";
import { placeableClusters } from "./placement.js";
import type { Scheduler } from "./types.js";

/** `single`: the one schedulable cluster of the registry (more than one is a configuration error). */
export function singleScheduler(): Scheduler {
  return {
    type: "single",
    schedule(input) {
      const schedulable = input.clusters.filter((c) => c.schedulable);
      if (schedulable.length > 1) {
        throw new SchedulingError(
          `scheduler "single" needs exactly one schedulable cluster, found ${schedulable.length}: ${schedulable.map((c) => c.id).join(", ")}`,
        );
      }
      return placeableClusters(input)[0].id;
    },
  };
}
