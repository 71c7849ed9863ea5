import { describe, expect, it } from "vitest";
import { createScheduler, type ClusterCandidate, type SchedulerConfig, type SchedulingInput } from "./index.js";

type Options = Partial<Omit<ClusterCandidate, "id">>;
const cluster = (id: string, options: Options = {}): ClusterCandidate => ({ id, schedulable: true, labels: {}, ...options });
const drained = (id: string, options: Options = {}) => cluster(id, { ...options, schedulable: false });
const full = (id: string, options: Options = {}) => cluster(id, { ...options, capacity: { maxInstances: 0 } });

function input(clusters: ClusterCandidate[], extra: Partial<SchedulingInput> = {}): SchedulingInput {
  return { clusters, instanceId: "i-1", planId: "p-1", instanceCounts: new Map(), ...extra };
}
const counts = (entries: Record<string, number>) => new Map(Object.entries(entries));

describe("single", () => {
  it.each<[string, ClusterCandidate[], string]>([
    ["the one cluster", [cluster("a")], "a"],
    ["the one schedulable cluster among drained ones", [drained("a"), cluster("b"), drained("c")], "b"],
    ["regardless of labels", [cluster("a", { labels: { env: "dev" } })], "a"],
  ])("chooses %s", (_, clusters, expected) => {
    expect(createScheduler({ type: "single" }).schedule(input(clusters))).toBe(expected);
  });

  it("ignores the selector and the last cluster", () => {
    const chosen = createScheduler({ type: "single" }).schedule(
      input([cluster("a")], { clusterSelector: "env=prod", lastScheduledCluster: "a" }),
    );
    expect(chosen).toBe("a");
  });
});

describe("round-robin", () => {
  const abc = [cluster("c"), cluster("a"), cluster("b")];
  it.each<[string, ClusterCandidate[], string | undefined, string]>([
    ["the first id without a last cluster", abc, undefined, "a"],
    ["the next id", abc, "a", "b"],
    ["the next id again", abc, "b", "c"],
    ["the first id after the last one (wrap around)", abc, "c", "a"],
    ["the first id when the last cluster is no longer registered", abc, "bb", "a"],
    ["past a drained cluster", [cluster("a"), drained("b"), cluster("c")], "a", "c"],
    ["past a full cluster", [cluster("a"), full("b"), cluster("c")], "a", "c"],
    ["after a last cluster that is now drained", [cluster("a"), drained("b"), cluster("c")], "b", "c"],
    ["after a last cluster that is now full, wrapping", [cluster("a"), cluster("b"), full("c")], "c", "a"],
    ["the same cluster when it is the only one", [cluster("a")], "a", "a"],
    ["the last cluster again when all others are drained", [cluster("a"), drained("b")], "a", "a"],
    ["a cluster registered since, in id order", [cluster("a"), cluster("b"), cluster("bb"), cluster("c")], "b", "bb"],
  ])("chooses %s", (_, clusters, last, expected) => {
    const extra = last === undefined ? {} : { lastScheduledCluster: last };
    expect(createScheduler({ type: "round-robin" }).schedule(input(clusters, extra))).toBe(expected);
  });

  it("continues the cycle after a restart from the last cluster recorded in the repo", () => {
    // The "repo": the clusters of past provisions, newest last.
    const placed: string[] = [];
    const provision = (scheduler: ReturnType<typeof createScheduler>) => {
      const last = placed.at(-1);
      placed.push(scheduler.schedule(input(abc, last === undefined ? {} : { lastScheduledCluster: last })));
    };
    const before = createScheduler({ type: "round-robin" });
    provision(before);
    provision(before);
    const afterRestart = createScheduler({ type: "round-robin" });
    provision(afterRestart);
    provision(afterRestart);
    provision(afterRestart);
    expect(placed).toEqual(["a", "b", "c", "a", "b"]);
  });
});

describe("least-utilized", () => {
  it.each<[string, ClusterCandidate[], Record<string, number>, string]>([
    ["the cluster with the fewest instances", [cluster("a"), cluster("b"), cluster("c")], { a: 3, b: 1, c: 2 }, "b"],
    ["a cluster missing from the counts (0 instances)", [cluster("a"), cluster("b")], { a: 1 }, "b"],
    ["the smallest id on a tie", [cluster("c"), cluster("b"), cluster("a")], { a: 2, b: 1, c: 1 }, "b"],
    ["the smallest id when all are empty", [cluster("z"), cluster("y")], {}, "y"],
    ["not a drained cluster, however empty", [drained("a"), cluster("b")], { a: 0, b: 9 }, "b"],
    ["not a full cluster, however empty", [cluster("a", { capacity: { maxInstances: 2 } }), cluster("b")], { a: 2, b: 5 }, "b"],
    ["counts of unregistered clusters are ignored", [cluster("b")], { a: 0, b: 4 }, "b"],
  ])("chooses %s", (_, clusters, live, expected) => {
    expect(createScheduler({ type: "least-utilized" }).schedule(input(clusters, { instanceCounts: counts(live) }))).toBe(expected);
  });
});

describe("label-selector", () => {
  const clusters = [
    cluster("dev-1", { labels: { env: "dev", plan: "small" } }),
    cluster("prod-1", { labels: { env: "prod", plan: "small", "example.com/zone": "eu-1" } }),
    cluster("prod-2", { labels: { env: "prod", plan: "large", "example.com/zone": "eu-2" } }),
    cluster("prod-3", { labels: { env: "prod", plan: "small", "example.com/zone": "eu-2", legacy: "true" } }),
  ];
  const live = counts({ "dev-1": 0, "prod-1": 4, "prod-2": 1, "prod-3": 2 });
  it.each<[string | undefined, string]>([
    [undefined, "dev-1"],
    ["", "dev-1"],
    [" \n", "dev-1"],
    ["env=prod", "prod-2"],
    ["env==prod,plan=small", "prod-3"],
    ["plan=small,env!=dev", "prod-3"],
    ["plan=small,!legacy", "dev-1"],
    ["env=prod,plan=small,!legacy", "prod-1"],
    ["example.com/zone in (eu-1,eu-2), plan notin (large)", "prod-3"],
    ["example.com/zone", "prod-2"],
    ["legacy", "prod-3"],
    ["env=prod,plan=small\n", "prod-3"],
  ])("selector %j chooses %s", (clusterSelector, expected) => {
    const extra = clusterSelector === undefined ? {} : { clusterSelector };
    expect(createScheduler({ type: "label-selector" }).schedule(input(clusters, { instanceCounts: live, ...extra }))).toBe(expected);
  });

  it("skips matching clusters that are drained or full", () => {
    const chosen = createScheduler({ type: "label-selector" }).schedule(
      input(
        [
          drained("a", { labels: { env: "prod" } }),
          full("b", { labels: { env: "prod" } }),
          cluster("c", { labels: { env: "prod" } }),
          cluster("d", { labels: { env: "dev" } }),
        ],
        { clusterSelector: "env=prod", instanceCounts: counts({ c: 7 }) },
      ),
    );
    expect(chosen).toBe("c");
  });
});

describe("capacity, for every scheduler", () => {
  const types: SchedulerConfig["type"][] = ["single", "round-robin", "least-utilized", "label-selector"];
  it.each(types)("%s places a 1-cpu instance only where it fits", (type) => {
    const clusters = [
      drained("a"),
      cluster("b", { capacity: { resources: { cpu: "2", memory: "4Gi" } } }),
    ];
    const base = { requests: { cpu: 1, memory: "1Gi" }, resourceUsage: new Map([["b", { cpu: "1", memory: "3Gi" }]]) };
    expect(createScheduler({ type }).schedule(input(clusters, base))).toBe("b");
    const tighter = { ...base, requests: { cpu: "1001m", memory: "1Gi" } };
    expect(() => createScheduler({ type }).schedule(input(clusters, tighter))).toThrow(
      "no cluster has room: 1 drained (schedulable: false): a; 1 full: b (cpu 1 used + 1001m requested > 2)",
    );
  });

  it.each(types.filter((t) => t !== "single"))("%s never exceeds maxInstances", (type) => {
    const clusters = [cluster("a", { capacity: { maxInstances: 1 } }), cluster("b", { capacity: { maxInstances: 5 } })];
    const chosen = createScheduler({ type }).schedule(
      input(clusters, { instanceCounts: counts({ a: 1, b: 4 }), lastScheduledCluster: "b" }),
    );
    expect(chosen).toBe("b");
  });
});
