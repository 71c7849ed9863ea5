import { describe, expect, it } from "vitest";
import type { Plan } from "../catalog/index.js";
import { UnprocessableEntityError } from "../errors/index.js";
import type { InstanceRecord } from "../repo/index.js";
import { dashboardUrl } from "./dashboard-url.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const planWith = (template: string | undefined): Plan => ({
  id: "plan-1", name: "small", description: "", serviceId: "svc-1", async: true, asyncBinding: false,
  context: {}, templates: [], file: "catalog/plan.yaml", raw: { spec: { id: "plan-1", name: "small" } },
  ...(template === undefined ? {} : { dashboardUrlTemplate: template }),
});
const instance = {
  apiVersion: "v1", kind: "ServiceInstance", metadata: { name: "inst-1", namespace: "ns" },
  spec: { instanceId: "inst-1", serviceId: "svc-1", planId: "plan-1", clusterId: "c1", organizationGuid: "org-1", spaceGuid: "space-1", context: { platform: "cloudfoundry" } },
  status: { operations: [] },
} as unknown as InstanceRecord;

describe("dashboardUrl (Service Fabrik manager.settings.dashboard_url_template)", () => {
  it("is undefined without a template", () => {
    expect(dashboardUrl(planWith(undefined), instance)).toBeUndefined();
  });

  it("interpolates ${...} property paths over plan, instance and the ids; a missing one is empty as in lodash", () => {
    const template = "https://dash.example.com/manage/${ service_id }/${plan_id}/${instance_id}?plan=${plan.name}&org=${instance.organization_guid}&on=${context.platform}&c=${instance.cluster_id}&x=${context.nope}";
    expect(dashboardUrl(planWith(b64(template)), instance)).toBe(
      "https://dash.example.com/manage/svc-1/plan-1/inst-1?plan=small&org=org-1&on=cloudfoundry&c=c1&x=",
    );
  });

  it("accepts base64 split over lines as YAML block scalars write it", () => {
    const encoded = b64("https://dash.example.com/${instance_id}");
    expect(dashboardUrl(planWith(`${encoded.slice(0, 8)}\n${encoded.slice(8)}\n`), instance)).toBe("https://dash.example.com/inst-1");
  });

  it.each([
    ["not base64", "%%%", /is not base64/],
    ["not a URL", b64("dashboard for ${instance_id}"), /renders "dashboard for inst-1", which is not a valid URL/],
    ["not http(s)", b64("javascript:alert(${instance_id})"), /not an http\(s\) URL/],
    ["an expression", b64("https://x/${instance_id.toUpperCase()}"), /only property paths/],
  ])("refuses a template that is %s with a 422", (_what, template, message) => {
    const run = () => dashboardUrl(planWith(template), instance);
    expect(run).toThrow(UnprocessableEntityError);
    expect(run).toThrow(message);
  });
});
