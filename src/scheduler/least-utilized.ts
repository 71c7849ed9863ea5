import { placeableClusters, type NonEmpty } from "./placement.js";
import type { ClusterCandidate, Scheduler, SchedulingInput } from "./types.js";

/** The candidate with the fewest live instances; ties go to the smallest id, so the choice is deterministic. */
export function leastUtilized(
  candidates: NonEmpty<ClusterCandidate>,
  counts: SchedulingInput["instanceCounts"],
): ClusterCandidate {
  const load = (c: ClusterCandidate) => counts.get(c.id) ?? 0;
  return candidates.reduce((best, c) =>
    load(c) < load(best) || (load(c) === load(best) && c.id < best.id) ? c : best,
  );
}

/** `least-utilized`: the placeable cluster with the fewest live instances. */
export function leastUtilizedScheduler(): Scheduler {
  return {
    type: "least-utilized",
    schedule(input) {
      return leastUtilized(placeableClusters(input), input.instanceCounts).id;
    },
  };
}
