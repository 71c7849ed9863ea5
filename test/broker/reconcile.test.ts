import { afterEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { pushExternalCommit } from "../support/git-fixtures.js";
import { provisionBody, remoteHead, samplePlans, type SamplePlans } from "./helpers.js";
import { commitsIn, editedPlan, filesWith, MEDIUM, postgresql, provisionTemplate, SMALL } from "./reconcile-support.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A harness whose plan `small` has autoUpdateInstances: true (medium has not). */
async function autoUpdating(): Promise<{ h: Harness; plans: SamplePlans }> {
  const harness = await startHarness({ files: await filesWith(({ small }) => (small.spec.autoUpdateInstances = true)) });
  h = harness;
  return { h: harness, plans: await samplePlans(harness.osb) };
}

/** Someone's merged pull request: push it, let the broker fetch it, wait for the re-renders it calls for. */
async function merge(harness: Harness, files: Record<string, string | null>, message: string): Promise<string> {
  const sha = await pushExternalCommit(harness.remoteDir, files, message);
  await harness.broker.writer.refresh();
  await harness.broker.reconciler.idle();
  return sha;
}

describe("re-rendering on repository changes", () => {
  it("autoUpdateInstances re-renders exactly the live instances of the changed plan, one commit each", async () => {
    const { h, plans } = await autoUpdating();
    const medium = (id: string) => h.osb.provision(id, provisionBody(plans.serviceId, plans.medium.id), { query: { accepts_incomplete: "true" } });
    for (const id of ["a-1", "a-2", "gone-1"]) expect((await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    expect((await medium("m-1")).status).toBe(202);
    expect((await h.osb.deprovision("gone-1", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(200);
    const mediumBefore = await postgresql(h.remoteDir, "m-1");

    // One pull request changes both plans: only small's instances follow.
    const sha = await merge(
      h,
      {
        [SMALL]: await editedPlan(h.remoteDir, SMALL, (p) => {
          const t = provisionTemplate(p);
          t.content = t.content.replace("numberOfInstances: 1", "numberOfInstances: 2");
        }),
        [MEDIUM]: await editedPlan(h.remoteDir, MEDIUM, (p) => (p.spec.context.numberOfInstances = 5)),
      },
      "small: two servers; medium: five",
    );
    const after = await commitsIn(h.remoteDir, `${sha}..main`);
    expect(after.map((c) => c.subject).sort()).toEqual(["re-render postgresql/small instance a-1", "re-render postgresql/small instance a-2"]);
    for (const c of after) {
      expect(c.trailers).toEqual({
        Reason: "plan-changed",
        "Plan-Commit": sha,
        "Instance-Id": c.subject.split(" ").pop(),
        "Broker-Version": "gitops-broker/test",
      });
    }
    expect((await postgresql(h.remoteDir, "a-1")).spec.numberOfInstances).toBe(2);
    expect((await postgresql(h.remoteDir, "a-2")).spec.numberOfInstances).toBe(2);
    expect(await postgresql(h.remoteDir, "m-1")).toEqual(mediumBefore);

    // A plan without autoUpdateInstances changes alone: nothing is re-rendered.
    const only = await merge(h, { [MEDIUM]: await editedPlan(h.remoteDir, MEDIUM, (p) => (p.spec.context.numberOfInstances = 6)) }, "medium: six");
    expect(await remoteHead(h.remoteDir)).toBe(only);
    // A change that renders the same (a comment in the document) commits nothing either.
    const same = await merge(h, { [SMALL]: `# reviewed\n${await editedPlan(h.remoteDir, SMALL, (p) => (p.spec.description += "."))}` }, "small: wording");
    expect(await remoteHead(h.remoteDir)).toBe(same);
  });

  it("an override merged by pull request re-renders that instance in one commit citing it", async () => {
    const { h, plans } = await autoUpdating();
    for (const id of ["o-1", "o-2"]) expect((await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    const override = stringify({
      apiVersion: "gitops-broker.io/v1alpha1",
      kind: "Override",
      target: { apiVersion: "acid.zalan.do/v1", kind: "postgresql", name: "pg-o-1" },
      patch: { spec: { numberOfInstances: 3 } },
    });
    const sha = await merge(h, { "overrides/o-1/replicas.yaml": override, "overrides/nobody/x.yaml": override }, "o-1: three servers");
    const after = await commitsIn(h.remoteDir, `${sha}..main`);
    expect(after).toEqual([
      {
        sha: expect.any(String),
        subject: "re-render postgresql/small instance o-1",
        trailers: {
          Reason: "override-changed",
          "Override-Commit": sha,
          "Instance-Id": "o-1",
          Overrides: "overrides/o-1/replicas.yaml",
          "Broker-Version": "gitops-broker/test",
        },
      },
    ]);
    expect((await postgresql(h.remoteDir, "o-1")).spec.numberOfInstances).toBe(3);
    expect((await postgresql(h.remoteDir, "o-2")).spec.numberOfInstances).toBe(1);

    // Removing the override renders the instance back.
    const removal = await merge(h, { "overrides/o-1": null }, "o-1: back to one server");
    expect((await commitsIn(h.remoteDir, `${removal}..main`)).map((c) => [c.subject, c.trailers["Override-Commit"]])).toEqual([
      ["re-render postgresql/small instance o-1", removal],
    ]);
    expect((await postgresql(h.remoteDir, "o-1")).spec.numberOfInstances).toBe(1);
  });
});
