import { beforeAll, describe, expect, it } from "vitest";
import { loadExampleCatalog } from "../../test/support/example-catalog.js";
import type { Plan, Service } from "../catalog/index.js";
import { RenderError } from "../errors/index.js";
import type { InstanceRecord } from "../repo/index.js";
import { renderInstanceMetadataNow } from "./instance-metadata.js";

/** The example catalog's postgresql plans have a metadata template (labels and attributes). */
let service: Service;
let plan: Plan;
beforeAll(async () => {
  service = (await loadExampleCatalog()).services[0]!;
  plan = service.plans.find((p) => p.name === "small")!;
});

function instance(id: string, clusterId: string): InstanceRecord {
  return {
    apiVersion: "gitops-broker.io/v1alpha1",
    kind: "ServiceInstance",
    metadata: { name: id },
    spec: { instanceId: id, serviceId: plan.serviceId, planId: plan.id, clusterId },
    status: { operations: [] },
  } as unknown as InstanceRecord;
}

const metadataOf = (id: string, clusterId: string, p: Plan = plan) => renderInstanceMetadataNow({ service, plan: p, instance: instance(id, clusterId), bindings: [] });

describe("instance metadata", () => {
  it("is what the template renders for each instance", () => {
    const eu = metadataOf("a", "eu-1");
    expect(eu.labels).toMatchObject({ "gitops-broker.io/cluster": "eu-1", "gitops-broker.io/plan": "small" });
    expect(metadataOf("b", "us-1").labels?.["gitops-broker.io/cluster"]).toBe("us-1");
    expect(metadataOf("c", "eu-1")).toEqual(eu);
  });

  it("gives every instance its own copy: changing one instance's metadata changes no other's", () => {
    const first = metadataOf("d", "ap-1");
    const second = metadataOf("e", "ap-1");
    expect(second).toEqual(first);
    second.labels!["gitops-broker.io/cluster"] = "changed";
    second.attributes!["postgresql-version"] = "changed";
    first.labels!["gitops-broker.io/plan"] = "changed";
    const third = metadataOf("f", "ap-1");
    expect(third.labels).toMatchObject({ "gitops-broker.io/cluster": "ap-1", "gitops-broker.io/plan": "small" });
    expect(third.attributes!["postgresql-version"]).not.toBe("changed");
  });

  it("refuses output of another shape every time it is rendered", () => {
    const broken: Plan = {
      ...plan,
      templates: plan.templates.map((t) => (t.action === "metadata" ? { ...t, content: "labels: [not, a, map]\n" } : t)),
    };
    for (const id of ["g", "h"]) expect(() => metadataOf(id, "eu-1", broken)).toThrow(RenderError);
  });
});
