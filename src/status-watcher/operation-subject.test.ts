import { describe, expect, it } from "vitest";
import type { Catalog, ClusterEntry, Plan, Service } from "../catalog/index.js";
import type { BindingRecord, InstanceRecord, OperationEntry } from "../repo/index.js";
import type { LiveCluster } from "./live-cluster.js";
import { resolveSubject } from "./operation-subject.js";
import type { StatusView } from "./types.js";

const plan = { id: "plan-1", name: "small" } as Plan;
const service = { id: "svc-1", plans: [plan] } as unknown as Service;
const catalog = { services: [service], serviceById: (id: string) => (id === service.id ? service : undefined) } as Catalog;
const east = { id: "east", namespace: "pg" } as ClusterEntry;
const plain = { id: "plain", namespace: "pg", statusMode: "commit" } as ClusterEntry;
const north = { id: "north", namespace: "pg", statusMode: "live" } as ClusterEntry;
const view: StatusView = { catalog: () => catalog, clusters: () => [east, plain, north] };
const live = { entry: east } as LiveCluster;
const liveNorth = { entry: north } as LiveCluster;
const liveOf = (id: string) => (id === "east" ? live : id === "north" ? liveNorth : undefined);

const instance = (clusterId: string, planId = plan.id) =>
  ({ spec: { instanceId: "db-1", serviceId: service.id, planId, clusterId }, metadata: { name: "db-1", namespace: "pg" } }) as unknown as InstanceRecord;
const binding = { spec: { bindingId: "app-1", instanceId: "db-1" } } as unknown as BindingRecord;
const operation: OperationEntry = { id: "op-1", action: "provision", at: "2026-03-01T10:00:00Z" };

describe("resolveSubject", () => {
  it("the live subject of a watched cluster, keyed by instance or binding and operation", () => {
    expect(resolveSubject(view, "live", liveOf, instance("east"), undefined, operation)).toEqual({
      subject: { instance: instance("east"), operation, service, plan, cluster: live },
      key: "i db-1 op-1",
    });
    expect(resolveSubject(view, "live", liveOf, instance("east"), binding, operation)).toEqual({
      subject: { instance: instance("east"), binding, operation, service, plan, cluster: live },
      key: "b db-1 app-1 op-1",
    });
  });

  it("commit mode for a cluster in that mode (its own, else the default), or one not watched live", () => {
    expect(resolveSubject(view, "live", liveOf, instance("plain"), undefined, operation)).toEqual({ commit: true });
    expect(resolveSubject(view, "commit", liveOf, instance("east"), undefined, operation)).toEqual({ commit: true });
    expect(resolveSubject(view, "live", () => undefined, instance("east"), undefined, operation)).toEqual({ commit: true });
    expect(resolveSubject(view, "commit", liveOf, instance("north"), undefined, operation)).toMatchObject({ subject: { cluster: liveNorth }, key: "i db-1 op-1" });
  });

  it("a cluster the registry does not hold: in progress in live mode, commit mode by default", () => {
    expect(resolveSubject(view, "live", liveOf, instance("west"), undefined, operation)).toEqual({
      status: { state: "in progress", description: "instance db-1 is placed on cluster west, which is not in the cluster registry" },
    });
    expect(resolveSubject(view, "commit", liveOf, instance("west"), undefined, operation)).toEqual({ commit: true });
  });

  it("a plan the catalog does not hold: in progress", () => {
    expect(resolveSubject(view, "live", liveOf, instance("east", "plan-2"), undefined, operation)).toEqual({
      status: { state: "in progress", description: "plan plan-2 of instance db-1 is not in the catalog" },
    });
  });
});
