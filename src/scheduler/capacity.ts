import { SchedulingError } from "../errors/index.js";
import { formatQuantity, parseQuantity, type Quantity } from "./quantity.js";
import type { ClusterCandidate, SchedulingInput } from "./types.js";

/** A plan's requests, parsed once per scheduling decision: the written text beside the exact value. */
export type ParsedRequests = ReadonlyMap<string, { text: string; quantity: Quantity }>;

/** Requests, capacities and usage are amounts: a negative one would make room out of nothing. */
function parseOrThrow(value: string | number, where: string): Quantity {
  const quantity = parseQuantity(value);
  if (!quantity) throw new SchedulingError(`${where} ${JSON.stringify(value)} is not a Kubernetes quantity`);
  if (quantity.nano < 0n) throw new SchedulingError(`${where} ${JSON.stringify(value)} is negative`);
  return quantity;
}

export function parseRequests(planId: string, requests: SchedulingInput["requests"]): ParsedRequests {
  return new Map(
    Object.entries(requests ?? {}).map(([key, value]) => [
      key,
      { text: String(value), quantity: parseOrThrow(value, `plan ${planId}: context.requests.${key}`) },
    ]),
  );
}

/**
 * Why the cluster cannot take one more instance with these requests ("3/3 instances",
 * "cpu 3 used + 2 requested > 4"), or an empty list if it can. Only resources named in the
 * cluster's capacity are limited; usage already above capacity blocks even a request of nothing.
 */
export function capacityShortfalls(
  cluster: ClusterCandidate,
  input: Pick<SchedulingInput, "instanceCounts" | "resourceUsage">,
  requests: ParsedRequests,
): string[] {
  const reasons: string[] = [];
  const count = input.instanceCounts.get(cluster.id) ?? 0;
  const max = cluster.capacity?.maxInstances;
  if (max !== undefined && count >= max) reasons.push(`${count}/${max} instances`);

  const usage = input.resourceUsage?.get(cluster.id) ?? {};
  const limits = cluster.capacity?.resources ?? {};
  for (const key of Object.keys(limits).sort()) {
    const limitText = limits[key] ?? "";
    const limit = parseOrThrow(limitText, `cluster ${cluster.id}: capacity.resources.${key}`);
    const usedText = usage[key] ?? "0";
    const used = parseOrThrow(usedText, `resource usage of cluster ${cluster.id}: ${key}`);
    const request = requests.get(key);
    if (used.nano + (request?.quantity.nano ?? 0n) <= limit.nano) continue;
    reasons.push(
      request
        ? `${key} ${usedText} used + ${request.text} requested > ${limitText}`
        : `${key} ${usedText} used > ${limitText}`,
    );
  }
  return reasons;
}

/**
 * Sums resource requests (e.g. the `context.requests` of the plans of a cluster's live
 * instances) into the `resourceUsage` shape, keys sorted. Each sum keeps the binary or decimal
 * style of its first summand, as Kubernetes does: `512Mi` + `1536Mi` = `2Gi`.
 */
export function sumResources(requests: Iterable<Record<string, string | number>>): Record<string, string> {
  const sums = new Map<string, Quantity>();
  for (const request of requests) {
    for (const [key, value] of Object.entries(request)) {
      const quantity = parseOrThrow(value, `requests.${key}`);
      const sum = sums.get(key);
      sums.set(key, sum ? { nano: sum.nano + quantity.nano, binary: sum.binary } : quantity);
    }
  }
  const sorted = [...sums].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(sorted.map(([key, sum]) => [key, formatQuantity(sum)]));
}

/** `request` times `factor` (e.g. the requests of one plan times its live instances on a cluster). */
export function scaleResources(request: Record<string, string | number>, factor: number): Record<string, string> {
  const scaled: Record<string, string> = {};
  for (const [key, value] of Object.entries(request)) {
    const q = parseOrThrow(value, `requests.${key}`);
    scaled[key] = formatQuantity({ nano: q.nano * BigInt(factor), binary: q.binary });
  }
  return scaled;
}
