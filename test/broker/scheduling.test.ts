import { afterEach, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { clusterRegistryPath, instanceManifestDir, instanceRecordPath } from "../../src/repo/index.js";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { pushExternalCommit, readRemoteFile } from "../support/git-fixtures.js";
import { repoFiles, sampleCatalogFiles } from "../support/repo-files.js";
import { commitCount, expectOsbError, provisionBody, readyz, remoteFiles, remoteHead, samplePlans } from "./helpers.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function clusterOf(harness: Harness, instanceId: string): Promise<string> {
  const record = parse((await readRemoteFile(harness.remoteDir, "main", instanceRecordPath(instanceId))) ?? "");
  return record.spec.clusterId as string;
}

async function provisionAll(harness: Harness, ids: string[]): Promise<number[]> {
  const plans = await samplePlans(harness.osb);
  const out: number[] = [];
  for (const id of ids) out.push((await harness.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status);
  return out;
}

describe("scheduling across sister clusters", () => {
  it("least-utilized spreads a 3-cluster setup and writes only into the chosen cluster's directory", async () => {
    h = await startHarness({ scheduler: "least-utilized", files: await repoFiles([{ id: "c1" }, { id: "c2" }, { id: "c3" }]) });
    const ids = ["i-1", "i-2", "i-3", "i-4", "i-5", "i-6"];
    expect(await provisionAll(h, ids)).toEqual(ids.map(() => 201));
    const placed = await Promise.all(ids.map((id) => clusterOf(h!, id)));
    expect(placed).toEqual(["c1", "c2", "c3", "c1", "c2", "c3"]);
    // One listing of the tip for all 18 (instance, cluster) pairs.
    const all = await remoteFiles(h.remoteDir);
    for (const [i, id] of ids.entries()) {
      for (const cluster of ["c1", "c2", "c3"]) {
        const files = all.filter((f) => f.startsWith(`${instanceManifestDir(cluster, id)}/`));
        expect(files.length > 0, `${id} on ${cluster}`).toBe(cluster === placed[i]);
      }
    }
  });

  it("round-robin continues where it left off after a restart (position derived from the repo)", async () => {
    h = await startHarness({ scheduler: "round-robin", files: await repoFiles([{ id: "a" }, { id: "b" }, { id: "c" }]) });
    expect(await provisionAll(h, ["rr-1", "rr-2"])).toEqual([201, 201]);
    const restarted = await h.startReplica("restarted");
    const plans = await samplePlans(restarted.osb);
    for (const id of ["rr-3", "rr-4"]) {
      expect((await restarted.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    }
    expect(await Promise.all(["rr-1", "rr-2", "rr-3", "rr-4"].map((id) => clusterOf(h!, id)))).toEqual(["a", "b", "c", "a"]);
  });

  it("never over-fills a cluster with capacity 1, even with two brokers racing on one remote", async () => {
    h = await startHarness({ scheduler: "least-utilized", files: await repoFiles([{ id: "tiny", capacity: { maxInstances: 1 } }]) });
    const other = await h.startReplica("racer");
    const plans = await samplePlans(h.osb);
    const body = provisionBody(plans.serviceId, plans.small.id);
    const before = await commitCount(h.remoteDir);
    const replies = await Promise.all([
      h.osb.provision("race-1", body),
      other.osb.provision("race-2", body),
      h.osb.provision("race-3", body),
      other.osb.provision("race-4", body),
    ]);
    const statuses = replies.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 422, 422, 422]);
    for (const r of replies.filter((x) => x.status === 422)) {
      expectOsbError(r, 422, /all schedulable clusters are full: tiny \(1\/1 instances\)/);
    }
    expect(await commitCount(h.remoteDir)).toBe(before + 1);
  });

  it("skips drained clusters, and fails fast naming why when none is left (nothing committed)", async () => {
    h = await startHarness({
      scheduler: "least-utilized",
      files: await repoFiles([{ id: "open" }, { id: "drained", schedulable: false }]),
    });
    expect(await provisionAll(h, ["d-1", "d-2"])).toEqual([201, 201]);
    expect(await clusterOf(h, "d-1")).toBe("open");
    expect(await clusterOf(h, "d-2")).toBe("open");

    await pushExternalCommit(
      h.remoteDir,
      { [clusterRegistryPath("open")]: stringify({ apiVersion: "gitops-broker.io/v1alpha1", kind: "Cluster", metadata: { name: "open" }, spec: { schedulable: false } }) },
      "drain cluster open",
    );
    await h.broker.writer.refresh();
    const head = await remoteHead(h.remoteDir);
    const plans = await samplePlans(h.osb);
    const res = await h.osb.provision("d-3", provisionBody(plans.serviceId, plans.small.id));
    expectOsbError(res, 422, /all 2 clusters are drained \(schedulable: false\): drained, open/);
    expect(await remoteHead(h.remoteDir)).toBe(head);
    // Existing instances on a drained cluster keep working.
    expect((await h.osb.update("d-1", { service_id: plans.serviceId, parameters: { storageGB: 7 } })).status).toBe(200);
  });

  it("label-selector places by the plan's clusterSelector template; a broken selector is the plan's 400", async () => {
    const catalog = await sampleCatalogFiles();
    const small = parse(catalog["catalog/postgresql/plans/small.yaml"]!) as Record<string, any>;
    const gold = structuredClone(small);
    gold.metadata.name = gold.spec.id = "9f0d8a56-6f57-4c59-9d0a-1c1f0c0e7a11";
    gold.spec.name = "gold";
    gold.spec.templates.push({ action: "clusterSelector", type: "handlebars", content: "tier=gold,region in (eu, us)" });
    const broken = structuredClone(small);
    broken.metadata.name = broken.spec.id = "0b6f4b1e-8a3c-4f0e-9d55-3b1a2c4d5e6f";
    broken.spec.name = "broken";
    broken.spec.templates.push({ action: "clusterSelector", type: "handlebars", content: "tier in gold" });
    h = await startHarness({
      scheduler: "label-selector",
      files: await repoFiles(
        [
          { id: "plain", labels: { tier: "silver", region: "eu" } },
          { id: "gold-us", labels: { tier: "gold", region: "us" } },
          { id: "gold-ap", labels: { tier: "gold", region: "ap" } },
        ],
        {
          "catalog/postgresql/plans/gold.yaml": stringify(gold),
          "catalog/postgresql/plans/broken.yaml": stringify(broken),
        },
      ),
    });
    const plans = await samplePlans(h.osb);
    const ok = await h.osb.provision("g-1", provisionBody(plans.serviceId, gold.spec.id));
    expect(ok.status).toBe(201);
    expect(await clusterOf(h, "g-1")).toBe("gold-us");
    // Plans without a selector match every cluster: least-utilized among all.
    expect((await h.osb.provision("s-1", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    expect(await clusterOf(h, "s-1")).toBe("gold-ap");

    const bad = await h.osb.provision("b-1", provisionBody(plans.serviceId, broken.spec.id));
    expectOsbError(bad, 400, /plan broken: template clusterSelector rendered an invalid label selector: .*"tier in gold"/);
  });

  it("refuses a registry that drops a cluster with live instances, keeping the last good one, across a restart too", async () => {
    h = await startHarness({
      scheduler: "least-utilized",
      files: await repoFiles([{ id: "keep" }, { id: "busy" }]),
      configure: (c) => void (c.metrics.listen = { host: "127.0.0.1", port: 0 }),
    });
    expect(await provisionAll(h, ["o-1", "o-2"])).toEqual([201, 201]);
    expect(await clusterOf(h, "o-1")).toBe("busy");
    await pushExternalCommit(h.remoteDir, { [clusterRegistryPath("busy")]: null }, "remove cluster busy");
    await h.broker.writer.refresh();

    // Said on /readyz as a warning: the broker stays ready, as it keeps serving (ADR 0021).
    const ready = await readyz(h.broker.url);
    expect(ready.status).toBe(200);
    expect(ready.body.checks.find((c) => c.name === "repository")).toMatchObject({
      ok: false,
      severity: "warning",
      message: expect.stringMatching(/cluster busy is missing from the registry but holds 1 live instance/),
    });
    // The last good registry is still in force: the instance on "busy" can be updated and bound.
    const plans = await samplePlans(h.osb);
    expect((await h.osb.update("o-1", { service_id: plans.serviceId, parameters: { storageGB: 9 } })).status).toBe(200);

    // A broker started now (a restart, a new replica) finds that registry in the branch's history
    // and answers as the running one does (it used to serve the tip's: 422, "not in the registry").
    const restarted = await h.startReplica("restarted");
    expect((await restarted.osb.update("o-1", { service_id: plans.serviceId, parameters: { storageGB: 10 } })).status).toBe(200);
    expect((await readyz(restarted.broker.url)).body.checks.find((c) => c.name === "registry-source")).toMatchObject({
      ok: false,
      severity: "warning",
      message: expect.stringMatching(/^serving the last good cluster registry, of commit [0-9a-f]{40}, found 1 registry change\(s\) back/),
    });
    const metrics = (await (await fetch(restarted.broker.metricsUrl!)).text()).split("\n");
    expect(metrics).toEqual(expect.arrayContaining(['gitops_broker_registry_state{state="last-good"} 1', 'gitops_broker_registry_state{state="tip"} 0']));
  });
});
