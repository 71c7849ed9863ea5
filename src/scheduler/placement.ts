import { SchedulingError } from "../errors/index.js";
import { capacityShortfalls, parseRequests } from "./capacity.js";
import { matchesSelector, type Requirement } from "./selector.js";
import type { ClusterCandidate, SchedulingInput } from "./types.js";

export type NonEmpty<T> = [T, ...T[]];

/** A parsed clusterSelector with the text it came from (for messages). */
export interface Selection {
  text: string;
  requirements: readonly Requirement[];
}

function byId(a: ClusterCandidate, b: ClusterCandidate): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function withLabels(c: ClusterCandidate): string {
  const labels = Object.keys(c.labels).sort().map((k) => `${k}=${c.labels[k]}`);
  return `${c.id}{${labels.join(",")}}`;
}

/**
 * The clusters that can take the new instance, in id order: matching the selection (if any),
 * schedulable, and with room for one more instance and the plan's requests. When none is left,
 * throws SchedulingError saying why each cluster was ruled out.
 */
export function placeableClusters(input: SchedulingInput, selection?: Selection): NonEmpty<ClusterCandidate> {
  const requests = parseRequests(input.planId, input.requests);
  const clusters = [...input.clusters].sort(byId);
  if (clusters.length === 0) throw new SchedulingError("no cluster is registered (registry/clusters/ is empty)");

  const matching = selection ? clusters.filter((c) => matchesSelector(selection.requirements, c.labels)) : clusters;
  if (selection && matching.length === 0) {
    throw new SchedulingError(
      `no cluster matches selector ${JSON.stringify(selection.text)} (clusters: ${clusters.map(withLabels).join(", ")})`,
    );
  }

  const drained: string[] = [];
  const full: string[] = [];
  const fits: ClusterCandidate[] = [];
  for (const c of matching) {
    if (!c.schedulable) {
      drained.push(c.id);
      continue;
    }
    const shortfalls = capacityShortfalls(c, input, requests);
    if (shortfalls.length > 0) full.push(`${c.id} (${shortfalls.join("; ")})`);
    else fits.push(c);
  }
  const [first, ...rest] = fits;
  if (first) return [first, ...rest];
  throw new SchedulingError(noRoom(drained, full, selection?.text));
}

function noRoom(drained: string[], full: string[], selector: string | undefined): string {
  const scope = selector === undefined ? "" : ` matching selector ${JSON.stringify(selector)}`;
  const isDrained = "drained (schedulable: false)";
  if (full.length === 0) {
    return drained.length === 1
      ? `the only cluster${scope} is ${isDrained}: ${drained.join(", ")}`
      : `all ${drained.length} clusters${scope} are ${isDrained}: ${drained.join(", ")}`;
  }
  if (drained.length === 0) return `all schedulable clusters${scope} are full: ${full.join(", ")}`;
  return `no cluster${scope} has room: ${drained.length} ${isDrained}: ${drained.join(", ")}; ${full.length} full: ${full.join(", ")}`;
}
