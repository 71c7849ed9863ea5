import { describe, expect, it } from "vitest";
import { SchedulingError } from "../errors/index.js";
import { capacityShortfalls, parseRequests, sumResources } from "./capacity.js";
import type { ClusterCandidate } from "./types.js";

function cluster(capacity: ClusterCandidate["capacity"]): ClusterCandidate {
  return { id: "a", schedulable: true, labels: {}, capacity };
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
}

describe("capacityShortfalls", () => {
  it.each<[string, ClusterCandidate["capacity"], number, Record<string, string> | undefined, Record<string, string | number>, string[]]>([
    ["no capacity", undefined, 100, { cpu: "1000" }, { cpu: 64 }, []],
    ["below maxInstances", { maxInstances: 3 }, 2, undefined, {}, []],
    ["at maxInstances", { maxInstances: 3 }, 3, undefined, {}, ["3/3 instances"]],
    ["maxInstances 0", { maxInstances: 0 }, 0, undefined, {}, ["0/0 instances"]],
    ["cpu fits exactly", { resources: { cpu: "4" } }, 0, { cpu: "3500m" }, { cpu: "500m" }, []],
    ["cpu one milli over", { resources: { cpu: "4" } }, 0, { cpu: "3501m" }, { cpu: "0.5" }, ["cpu 3501m used + 0.5 requested > 4"]],
    ["cpu as a YAML number", { resources: { cpu: "2" } }, 0, { cpu: "1.5" }, { cpu: 1 }, ["cpu 1.5 used + 1 requested > 2"]],
    ["memory binary vs request", { resources: { memory: "2Gi" } }, 0, { memory: "1536Mi" }, { memory: "512Mi" }, []],
    ["memory binary over", { resources: { memory: "2Gi" } }, 0, { memory: "1536Mi" }, { memory: "513Mi" }, ["memory 1536Mi used + 513Mi requested > 2Gi"]],
    // 2G (decimal) is less than 2Gi: 1Gi + 1Gi does not fit
    ["memory decimal capacity", { resources: { memory: "2G" } }, 0, { memory: "1Gi" }, { memory: "1Gi" }, ["memory 1Gi used + 1Gi requested > 2G"]],
    ["exponent notation", { resources: { memory: "1e9" } }, 0, undefined, { memory: "1G" }, []],
    ["no usage yet", { resources: { cpu: "1" } }, 0, undefined, { cpu: "1" }, []],
    ["request too big for an empty cluster", { resources: { cpu: "1" } }, 0, undefined, { cpu: "1001m" }, ["cpu 0 used + 1001m requested > 1"]],
    ["unrequested resource already over", { resources: { cpu: "4" } }, 0, { cpu: "5" }, {}, ["cpu 5 used > 4"]],
    ["unrequested resource at capacity", { resources: { cpu: "4" } }, 0, { cpu: "4" }, { memory: "1Gi" }, []],
    ["request without a limit", { resources: { cpu: "4" } }, 0, undefined, { "nvidia.com/gpu": 8 }, []],
    [
      "every reason, resources in key order",
      { maxInstances: 1, resources: { memory: "1Gi", cpu: "1" } },
      1,
      { cpu: "1", memory: "1Gi" },
      { cpu: "100m", memory: "1Mi" },
      ["1/1 instances", "cpu 1 used + 100m requested > 1", "memory 1Gi used + 1Mi requested > 1Gi"],
    ],
  ])("%s", (_, capacity, count, usage, requests, reasons) => {
    const input = {
      instanceCounts: new Map([["a", count]]),
      resourceUsage: new Map(usage ? [["a", usage]] : []),
    };
    expect(capacityShortfalls(cluster(capacity), input, parseRequests("p", requests))).toEqual(reasons);
  });

  it.each<[string, () => unknown, string]>([
    [
      "a plan's request",
      () => parseRequests("pg-small", { cpu: "lots" }),
      'plan pg-small: context.requests.cpu "lots" is not a Kubernetes quantity',
    ],
    [
      "a cluster's capacity",
      () => capacityShortfalls(cluster({ resources: { memory: "2GB" } }), { instanceCounts: new Map() }, new Map()),
      'cluster a: capacity.resources.memory "2GB" is not a Kubernetes quantity',
    ],
    [
      "a cluster's usage",
      () =>
        capacityShortfalls(
          cluster({ resources: { cpu: "2" } }),
          { instanceCounts: new Map(), resourceUsage: new Map([["a", { cpu: "1 core" }]]) },
          new Map(),
        ),
      'resource usage of cluster a: cpu "1 core" is not a Kubernetes quantity',
    ],
    [
      "a negative request",
      () => parseRequests("pg-small", { cpu: -1 }),
      'plan pg-small: context.requests.cpu -1 is negative',
    ],
  ])("names an invalid quantity in %s", (_, fn, message) => {
    const error = thrown(fn);
    expect(error).toBeInstanceOf(SchedulingError);
    expect((error as SchedulingError).message).toBe(message);
  });
});

describe("sumResources", () => {
  it("adds exactly, keeping the style of the first summand, keys sorted", () => {
    expect(
      sumResources([
        { memory: "512Mi", cpu: 1 },
        { memory: "1536Mi", cpu: "500m", "nvidia.com/gpu": "1" },
        { cpu: 0.1, memory: "0" },
        { cpu: "0.2" },
      ]),
    ).toEqual({ cpu: "1800m", memory: "2Gi", "nvidia.com/gpu": "1" });
  });

  it("is empty for no requests", () => {
    expect(sumResources([])).toEqual({});
  });

  it("sums decimal memory with decimal suffixes", () => {
    expect(sumResources([{ memory: "1G" }, { memory: "500M" }])).toEqual({ memory: "1500M" });
  });

  it("names an invalid value", () => {
    const error = thrown(() => sumResources([{ cpu: "1" }, { cpu: "x" }]));
    expect(error).toBeInstanceOf(SchedulingError);
    expect((error as SchedulingError).message).toBe('requests.cpu "x" is not a Kubernetes quantity');
  });
});
