import { describe, expect, it } from "vitest";
import { SchedulingError } from "../errors/index.js";
import { createScheduler, type ClusterCandidate, type SchedulerConfig, type SchedulingInput } from "./index.js";

type Options = Partial<Omit<ClusterCandidate, "id">>;
const cluster = (id: string, options: Options = {}): ClusterCandidate => ({ id, schedulable: true, labels: {}, ...options });
const drained = (id: string, options: Options = {}) => cluster(id, { ...options, schedulable: false });

function failure(type: SchedulerConfig["type"], clusters: ClusterCandidate[], extra: Partial<SchedulingInput> = {}): SchedulingError {
  try {
    createScheduler({ type }).schedule({ clusters, instanceId: "i-1", planId: "p-1", instanceCounts: new Map(), ...extra });
  } catch (e) {
    if (e instanceof SchedulingError) return e;
    throw e;
  }
  throw new Error(`scheduler ${type} placed the instance`);
}

const ALL: SchedulerConfig["type"][] = ["single", "round-robin", "least-utilized", "label-selector"];
const MANY: SchedulerConfig["type"][] = ["round-robin", "least-utilized", "label-selector"];

describe("why no cluster fits", () => {
  it.each(ALL)("%s: none registered", (type) => {
    expect(failure(type, []).message).toBe("no cluster is registered (registry/clusters/ is empty)");
  });

  it.each(ALL)("%s: the only cluster drained", (type) => {
    expect(failure(type, [drained("a")]).message).toBe("the only cluster is drained (schedulable: false): a");
  });

  it.each(ALL)("%s: all drained", (type) => {
    expect(failure(type, [drained("b"), drained("a")]).message).toBe("all 2 clusters are drained (schedulable: false): a, b");
  });

  it.each(ALL)("%s: the only schedulable cluster full, beside drained ones", (type) => {
    const error = failure(type, [drained("a"), cluster("b", { capacity: { maxInstances: 3 } })], {
      instanceCounts: new Map([["b", 3]]),
    });
    expect(error.message).toBe("no cluster has room: 1 drained (schedulable: false): a; 1 full: b (3/3 instances)");
  });

  it.each(MANY)("%s: all full, each with its reasons", (type) => {
    const error = failure(
      type,
      [
        cluster("b", { capacity: { resources: { cpu: "4" } } }),
        cluster("a", { capacity: { maxInstances: 3 } }),
        cluster("c", { capacity: { maxInstances: 2, resources: { memory: "8Gi" } } }),
      ],
      {
        instanceCounts: new Map([["a", 3], ["c", 2]]),
        resourceUsage: new Map<string, Record<string, string>>([["b", { cpu: "3500m" }], ["c", { memory: "7Gi" }]]),
        requests: { cpu: 1, memory: "2Gi" },
      },
    );
    expect(error.message).toBe(
      "all schedulable clusters are full: a (3/3 instances), b (cpu 3500m used + 1 requested > 4), c (2/2 instances; memory 7Gi used + 2Gi requested > 8Gi)",
    );
  });

  it.each(MANY)("%s: some drained, the others full", (type) => {
    const error = failure(
      type,
      [drained("d"), cluster("a", { capacity: { maxInstances: 1 } }), drained("b"), cluster("c", { capacity: { resources: { cpu: "1" } } })],
      { instanceCounts: new Map([["a", 1]]), resourceUsage: new Map([["c", { cpu: "2" }]]) },
    );
    expect(error.message).toBe(
      "no cluster has room: 2 drained (schedulable: false): b, d; 2 full: a (1/1 instances), c (cpu 2 used > 1)",
    );
  });

  it("single: more than one schedulable cluster", () => {
    expect(failure("single", [cluster("b"), drained("c"), cluster("a")]).message).toBe(
      'scheduler "single" needs exactly one schedulable cluster, found 2: b, a',
    );
  });

  it("single: an invalid request of the plan", () => {
    expect(failure("single", [cluster("a")], { requests: { memory: "1 GB" } }).message).toBe(
      'plan p-1: context.requests.memory "1 GB" is not a Kubernetes quantity',
    );
  });
});

describe("why no cluster fits the selector", () => {
  const clusters = [
    cluster("b", { labels: { env: "prod", tier: "gold" } }),
    drained("a", { labels: { env: "dev" } }),
    cluster("c"),
  ];

  it("no cluster matches: every cluster with its labels", () => {
    expect(failure("label-selector", clusters, { clusterSelector: "plan=x" }).message).toBe(
      'no cluster matches selector "plan=x" (clusters: a{env=dev}, b{env=prod,tier=gold}, c{})',
    );
  });

  it("the only match is drained", () => {
    expect(failure("label-selector", clusters, { clusterSelector: "env=dev\n" }).message).toBe(
      'the only cluster matching selector "env=dev" is drained (schedulable: false): a',
    );
  });

  const fullB = {
    instanceCounts: new Map([["b", 2]]),
    resourceUsage: new Map([["b", { memory: "1Gi" }]]),
    requests: { memory: "512Mi" },
  };
  const cappedB = clusters.map((c) => (c.id === "b" ? { ...c, capacity: { maxInstances: 2, resources: { memory: "1Gi" } } } : c));

  it("the matches are full", () => {
    expect(failure("label-selector", cappedB, { clusterSelector: "env=prod", ...fullB }).message).toBe(
      'all schedulable clusters matching selector "env=prod" are full: b (2/2 instances; memory 1Gi used + 512Mi requested > 1Gi)',
    );
  });

  it("the matches are drained or full", () => {
    expect(failure("label-selector", cappedB, { clusterSelector: "env", ...fullB }).message).toBe(
      'no cluster matching selector "env" has room: 1 drained (schedulable: false): a; 1 full: b (2/2 instances; memory 1Gi used + 512Mi requested > 1Gi)',
    );
  });

  it("an invalid selector names the column and token", () => {
    const error = failure("label-selector", clusters, { clusterSelector: "env in prod" });
    expect(error.message).toBe('invalid cluster selector "env in prod": column 8: found "prod", expected "("');
    expect(error.data).toEqual({ selector: "env in prod", column: 8, found: "prod" });
  });

  it.each(ALL)("%s fails with a SchedulingError (which the broker answers 422)", (type) => {
    expect(failure(type, []).code).toBe(SchedulingError.code);
  });
});
