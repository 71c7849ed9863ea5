import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { pushExternalCommit } from "../support/git-fixtures.js";
import { repoFiles } from "../support/repo-files.js";
import { commitCount, expectOsbError, provisionBody, samplePlans, unchangedRemote, type SamplePlans } from "./helpers.js";

/**
 * Quotas kept in the GitOps repository (quota/*.yaml), enforced as Service Fabrik's checkQuota
 * middleware did: 403 Forbidden, "Not entitled to create service instance" for a limit of 0,
 * "Quota is not sufficient for this request" once it is used up; -1 unlimited; at provision and
 * at a plan change; counted from the instance summary of the tree the commit builds on.
 */

const ASYNC = { query: { accepts_incomplete: "true" } };
const EXEMPT_PLAN = "c0000000-0000-4000-8000-000000000001";

function quota(scope: Record<string, string>, limits: Record<string, unknown>[]): string {
  return stringify({ apiVersion: "gitops-broker.io/v1alpha1", kind: "Quota", scope, limits });
}

function tenant(org: string, space = `${org}-space`, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    organization_guid: org,
    space_guid: space,
    context: { platform: "cloudfoundry", organization_guid: org, space_guid: space, ...extra },
  };
}

let h: Harness;
let plans: SamplePlans;

beforeAll(async () => {
  const files = await repoFiles([{ id: "local" }]);
  // A copy of plan small that Service Fabrik's plan metadata exempts from quotas.
  const exempt = parse(files["catalog/postgresql/plans/small.yaml"]!) as { metadata: unknown; spec: Record<string, unknown> };
  exempt.metadata = { name: "exempt" };
  exempt.spec = { ...exempt.spec, id: EXEMPT_PLAN, name: "exempt", metadata: { skip_quota_check: true } };
  h = await startHarness({
    files: {
      ...files,
      "catalog/postgresql/plans/exempt.yaml": stringify(exempt),
      "quota/org-a.yaml": quota({ organization: "org-a" }, [{ service: "postgresql", plans: ["small"], instances: 2 }]),
      "quota/teams/zero.yaml": [
        quota({ organization: "org-zero" }, [{ service: "postgresql", instances: 0 }]),
        quota({ organization: "org-free" }, [{ service: "postgresql", instances: -1 }]),
      ].join("---\n"),
      "quota/sub.yaml": quota({ subaccount: "sub-1" }, [{ service: "postgresql", instances: 1 }]),
      "quota/moves.yaml": quota({ space: "space-m" }, [
        { service: "postgresql", plans: ["medium"], instances: 1 },
        { service: "postgresql", plans: ["small", "medium"], instances: 3 },
      ]),
    },
  });
  plans = await samplePlans(h.osb);
});
afterAll(async () => {
  await h?.close();
});

const unchanged = <T>(fn: () => Promise<T>): Promise<T> => unchangedRemote(h.remoteDir, fn);

describe("a quota per organization and plan", () => {
  it("lets the organization fill its quota, then answers 403 with Service Fabrik's words and commits nothing", async () => {
    for (const id of ["qa-1", "qa-2"]) expect((await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id, tenant("org-a")))).status).toBe(201);
    const refused = await unchanged(() => h.osb.provision("qa-3", provisionBody(plans.serviceId, plans.small.id, tenant("org-a"))));
    expectOsbError(refused, 403, /^Quota is not sufficient for this request: organization "org-a", service postgresql plan\(s\) small \(quota\/org-a\.yaml limits\[0\]\) allows 2 instance\(s\), 2 live$/, "Forbidden");
    // Other plans and other organizations are not limited by it.
    expect((await h.osb.provision("qa-m", provisionBody(plans.serviceId, plans.medium.id, tenant("org-a")), ASYNC)).status).toBe(202);
    expect((await h.osb.provision("qb-1", provisionBody(plans.serviceId, plans.small.id, tenant("org-b")))).status).toBe(201);
  });

  it("counts a deprovision at once: the freed slot can be taken", async () => {
    const query = { service_id: plans.serviceId, plan_id: plans.small.id };
    expect((await h.osb.deprovision("qa-1", query)).status).toBe(200);
    expect((await h.osb.provision("qa-3", provisionBody(plans.serviceId, plans.small.id, tenant("org-a")))).status).toBe(201);
    const refused = await unchanged(() => h.osb.provision("qa-4", provisionBody(plans.serviceId, plans.small.id, tenant("org-a"))));
    expectOsbError(refused, 403, /^Quota is not sufficient for this request/, "Forbidden");
  });

  it("answers an identical re-provision 200, not 403: the instance is already counted", async () => {
    expect((await h.osb.provision("qa-3", provisionBody(plans.serviceId, plans.small.id, tenant("org-a")))).status).toBe(200);
  });
});

describe("limits 0 and -1", () => {
  it("0: 403 Not entitled to create service instance", async () => {
    const refused = await unchanged(() => h.osb.provision("qz-1", provisionBody(plans.serviceId, plans.small.id, tenant("org-zero"))));
    expectOsbError(refused, 403, /^Not entitled to create service instance: organization "org-zero", service postgresql \(quota\/teams\/zero\.yaml documents\[0\]\.limits\[0\]\) allows none$/, "Forbidden");
  });

  it("a plan with Service Fabrik's metadata.skip_quota_check is not limited", async () => {
    expect((await h.osb.provision("qz-2", provisionBody(plans.serviceId, EXEMPT_PLAN, tenant("org-zero")))).status).toBe(201);
  });

  it("-1: unlimited", async () => {
    for (const id of ["qf-1", "qf-2", "qf-3"]) expect((await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id, tenant("org-free")))).status).toBe(201);
  });
});

describe("a quota per subaccount (SAP Service Manager's context.subaccount_id)", () => {
  it("counts the instances of the subaccount across organizations", async () => {
    const body = (org: string) => provisionBody(plans.serviceId, plans.small.id, tenant(org, `${org}-space`, { platform: "sapcp", subaccount_id: "sub-1" }));
    expect((await h.osb.provision("qs-1", body("org-s1"))).status).toBe(201);
    const refused = await unchanged(() => h.osb.provision("qs-2", body("org-s2")));
    expectOsbError(refused, 403, /^Quota is not sufficient for this request: subaccount "sub-1", service postgresql/, "Forbidden");
  });
});

describe("a plan change", () => {
  it("is checked against the target plan's limits, and not within plans counted together", async () => {
    const body = (plan: string) => provisionBody(plans.serviceId, plan, tenant("org-m", "space-m"));
    expect((await h.osb.provision("qm-1", body(plans.medium.id), ASYNC)).status).toBe(202);
    expect((await h.osb.provision("qm-2", body(plans.small.id))).status).toBe(201);
    // medium is full (1): small -> medium refused with the 403, nothing committed.
    const refused = await unchanged(() => h.osb.update("qm-2", { service_id: plans.serviceId, plan_id: plans.medium.id }, ASYNC));
    expectOsbError(refused, 403, /^Quota is not sufficient for this request: space "space-m", service postgresql plan\(s\) medium \(quota\/moves\.yaml limits\[0\]\) allows 1 instance\(s\), 1 live$/, "Forbidden");
    // The total of small and medium is 2 of 3: a third instance is still possible...
    expect((await h.osb.provision("qm-3", body(plans.small.id))).status).toBe(201);
    const full = await unchanged(() => h.osb.provision("qm-4", body(plans.small.id)));
    expectOsbError(full, 403, /^Quota is not sufficient for this request: space "space-m", service postgresql plan\(s\) medium, small \(quota\/moves\.yaml limits\[1\]\) allows 3 instance\(s\), 3 live$/);
    // ...and medium -> small stays within small+medium (Service Fabrik's same-SKU update), so it is not checked.
    expect((await h.osb.update("qm-1", { service_id: plans.serviceId, plan_id: plans.small.id }, ASYNC)).status).toBe(202);
  });
});

describe("a quota raised by a pull request the broker has not fetched yet", () => {
  it("is not refused from the stale view: the refusal is confirmed on the remote's tip first (ADR 0012)", async () => {
    const body = provisionBody(plans.serviceId, plans.small.id, tenant("org-raise"));
    const file = "quota/raise.yaml";
    await pushExternalCommit(h.remoteDir, { [file]: quota({ organization: "org-raise" }, [{ service: "postgresql", instances: 1 }]) }, "quota: org-raise gets one");
    expect((await h.osb.provision("qu-1", body)).status).toBe(201);
    expectOsbError(await unchanged(() => h.osb.provision("qu-2", body)), 403, /^Quota is not sufficient for this request: organization "org-raise"/);
    // Merged, not fetched by the broker (no webhook; polling is slow in the tests).
    await pushExternalCommit(h.remoteDir, { [file]: quota({ organization: "org-raise" }, [{ service: "postgresql", instances: 2 }]) }, "quota: org-raise gets two");
    expect((await h.osb.provision("qu-2", body)).status).toBe(201);
  });
});

describe("the last slot", () => {
  it("goes to one of two concurrent provisions on two brokers; the other gets 403 and no commit", async () => {
    const replica = await h.startReplica("broker-2");
    const before = await commitCount(h.remoteDir);
    const body = provisionBody(plans.serviceId, plans.small.id, tenant("org-race"));
    await pushExternalCommit(h.remoteDir, { "quota/race.yaml": quota({ organization: "org-race" }, [{ service: "postgresql", instances: 1 }]) }, "quota: org-race gets one");
    const answers = await Promise.all([h.osb.provision("qr-1", body), replica.osb.provision("qr-2", body)]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 403]);
    expectOsbError(answers.find((a) => a.status === 403)!, 403, /^Quota is not sufficient for this request: organization "org-race"/, "Forbidden");
    // The external quota commit and one provision.
    expect(await commitCount(h.remoteDir)).toBe(before + 2);
  });
});
