import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { instanceManifestDir } from "../../src/repo/index.js";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { pushExternalCommit, readRemoteFile } from "../support/git-fixtures.js";
import { headMessage, provisionBody, samplePlans, type SamplePlans } from "./helpers.js";

let h: Harness;
let plans: SamplePlans;

beforeAll(async () => {
  h = await startHarness();
  plans = await samplePlans(h.osb);
});
afterAll(async () => {
  await h?.close();
});

function override(name: string, patch: Record<string, unknown>, kind = "postgresql"): string {
  return stringify({
    apiVersion: "gitops-broker.io/v1alpha1",
    kind: "Override",
    description: "more replicas for the load test",
    target: { apiVersion: kind === "postgresql" ? "acid.zalan.do/v1" : "v1", kind, name },
    patch,
  });
}

interface Pg {
  metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  spec: { numberOfInstances: number; volume: { size: string }; users: Record<string, string[]> };
}

async function postgresql(instanceId: string): Promise<Pg> {
  const text = await readRemoteFile(h.remoteDir, "main", `${instanceManifestDir("local", instanceId)}/postgresql-pg-${instanceId}.yaml`);
  if (text === null) throw new Error(`no postgresql manifest for ${instanceId}`);
  return parse(text) as Pg;
}

describe("manual overrides by pull request", () => {
  it("a human override survives update, bind and unbind, shows in the manifests and is cited in each commit", async () => {
    expect((await h.osb.provision("ov-1", provisionBody(plans.serviceId, plans.small.id, { parameters: { storageGB: 2 } }))).status).toBe(201);
    await pushExternalCommit(
      h.remoteDir,
      {
        "overrides/ov-1/replicas.yaml": override("pg-ov-1", {
          metadata: { annotations: { "example.com/owner": "dba-team" }, labels: { "app.kubernetes.io/managed-by": "a-human" } },
          spec: { numberOfInstances: 2, volume: { size: "7Gi" } },
        }),
      },
      "ov-1: two servers for the load test",
    );

    expect((await h.osb.update("ov-1", { service_id: plans.serviceId, parameters: { storageGB: 3 } })).status).toBe(200);
    let pg = await postgresql("ov-1");
    expect(pg.spec).toMatchObject({ numberOfInstances: 2, volume: { size: "7Gi" } });
    expect(pg.metadata.annotations).toEqual({ "example.com/owner": "dba-team" });
    // The broker's labels win over an override, as they do over templates.
    expect(pg.metadata.labels).toMatchObject({ "app.kubernetes.io/managed-by": "gitops-broker", "gitops-broker.io/instance-id": "ov-1" });
    expect(await headMessage(h.remoteDir)).toMatch(/^update postgresql\/small instance ov-1\n[\s\S]*\nOverrides: overrides\/ov-1\/replicas\.yaml\n/);

    const bind = { service_id: plans.serviceId, plan_id: plans.small.id };
    expect((await h.osb.bind("ov-1", "ov-app", bind)).status).toBe(201);
    pg = await postgresql("ov-1");
    expect(pg.spec).toMatchObject({ numberOfInstances: 2, volume: { size: "7Gi" }, users: { "ov-app": [] } });
    expect(await headMessage(h.remoteDir)).toMatch(/^bind postgresql\/small instance ov-1 binding ov-app\n[\s\S]*\nOverrides: overrides\/ov-1\/replicas\.yaml\n/);

    expect((await h.osb.unbind("ov-1", "ov-app", bind)).status).toBe(200);
    pg = await postgresql("ov-1");
    expect(pg.spec.numberOfInstances).toBe(2);
    expect(pg.spec.users).not.toHaveProperty("ov-app");
    expect(await headMessage(h.remoteDir)).toMatch(/\nOverrides: overrides\/ov-1\/replicas\.yaml\n/);
  });

  it("an override that cannot apply is skipped: the request succeeds and the other overrides apply", async () => {
    expect((await h.osb.provision("ov-2", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    await pushExternalCommit(
      h.remoteDir,
      {
        "overrides/ov-2/a-missing.yaml": override("no-such-map", { data: { a: "b" } }, "ConfigMap"),
        "overrides/ov-2/b-rename.yaml": override("pg-ov-2", { metadata: { name: "renamed" } }),
        "overrides/ov-2/c-disk.yaml": override("pg-ov-2", { spec: { volume: { size: "9Gi" } } }),
      },
      "ov-2: overrides",
    );
    expect((await h.osb.update("ov-2", { service_id: plans.serviceId, parameters: { storageGB: 4 } })).status).toBe(200);
    expect((await postgresql("ov-2")).spec.volume.size).toBe("9Gi");
    const message = await headMessage(h.remoteDir);
    expect(message).toMatch(/\nOverrides: overrides\/ov-2\/c-disk\.yaml\n/);
  });

  it("commits without overrides carry no Overrides trailer", async () => {
    expect((await h.osb.provision("ov-3", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    expect(await headMessage(h.remoteDir)).not.toMatch(/Overrides:/);
  });
});
