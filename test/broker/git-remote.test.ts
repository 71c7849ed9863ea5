import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { instanceRecordPath } from "../../src/repo/index.js";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { fsck, pushExternalCommit, readRemoteFile, readRemoteFiles } from "../support/git-fixtures.js";
import { validateManifest } from "../support/kube-validate.js";
import { commitCount, provisionBody, remoteFiles, samplePlans, type SamplePlans } from "./helpers.js";

const run = promisify(execFile);

let h: Harness;
let plans: SamplePlans;

beforeAll(async () => {
  h = await startHarness();
  plans = await samplePlans(h.osb);
});
afterAll(async () => {
  await h?.close();
});

describe("the Git remote as the system of record", () => {
  it("50 concurrent provisions -> 50 commits, linear history, none lost, fsck-clean", async () => {
    const before = await commitCount(h.remoteDir);
    const ids = Array.from({ length: 50 }, (_, i) => `conc-${i}`);
    const replies = await Promise.all(ids.map((id) => h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))));
    expect(replies.map((r) => r.status)).toEqual(ids.map(() => 201));

    expect(await commitCount(h.remoteDir)).toBe(before + 50);
    const { stdout: merges } = await run("git", ["rev-list", "--merges", "--count", "main"], { cwd: h.remoteDir });
    expect(merges.trim()).toBe("0");
    for (const [i, record] of (await readRemoteFiles(h.remoteDir, "main", ids.map(instanceRecordPath))).entries()) expect(record, ids[i]).not.toBeNull();
    const { stdout: subjects } = await run("git", ["log", "--format=%s", `-50`, "main"], { cwd: h.remoteDir });
    expect(new Set(subjects.trim().split("\n"))).toEqual(new Set(ids.map((id) => `provision postgresql/small instance ${id}`)));
    await fsck(h.remoteDir);
  });

  it("a commit pushed by someone else between two operations does not block the broker", async () => {
    expect((await h.osb.provision("ext-1", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    await pushExternalCommit(h.remoteDir, { "docs/NOTES.md": "a human was here\n" }, "docs: add notes");
    const res = await h.osb.provision("ext-2", provisionBody(plans.serviceId, plans.small.id));
    expect(res.status).toBe(201);
    expect(await readRemoteFile(h.remoteDir, "main", "docs/NOTES.md")).toBe("a human was here\n");
    expect(await readRemoteFile(h.remoteDir, "main", instanceRecordPath("ext-2"))).not.toBeNull();
    const { stdout } = await run("git", ["log", "--format=%s", "-3", "main"], { cwd: h.remoteDir });
    expect(stdout.trim().split("\n")).toEqual([
      "provision postgresql/small instance ext-2",
      "docs: add notes",
      "provision postgresql/small instance ext-1",
    ]);
  });

  it("a second broker on the same remote sees existing instances after (re)start", async () => {
    expect((await h.osb.provision("seen-1", provisionBody(plans.serviceId, plans.small.id, { parameters: { storageGB: 2 } }))).status).toBe(201);
    const replica = await h.startReplica("broker-2");
    const again = await replica.osb.provision("seen-1", provisionBody(plans.serviceId, plans.small.id, { parameters: { storageGB: 2 } }));
    expect(again.status).toBe(200);
    expect((await replica.osb.getInstance("seen-1")).body).toMatchObject({ parameters: { storageGB: 2 } });
    expect((await replica.osb.lastOperation("seen-1")).body).toMatchObject({ state: "succeeded" });
    // And writes from the replica land on the same history.
    expect((await replica.osb.provision("seen-2", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    expect(await readRemoteFile(h.remoteDir, "main", instanceRecordPath("seen-2"))).not.toBeNull();
  });

  it("every commit is fsck-clean and clusters/ holds only valid Kubernetes manifests", async () => {
    // Make sure bindings and updates are represented too.
    expect((await h.osb.provision("shape-1", provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    expect((await h.osb.bind("shape-1", "shape-b", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(201);
    await fsck(h.remoteDir);

    const files = await remoteFiles(h.remoteDir, "clusters");
    expect(files.length).toBeGreaterThan(50);
    let validatedWithModel = 0;
    const texts = await readRemoteFiles(h.remoteDir, "main", files);
    for (const [i, file] of files.entries()) {
      expect(file).toMatch(/\.yaml$/);
      const text = texts[i] ?? "";
      const docs = parseAllDocuments(text);
      expect(docs, file).toHaveLength(1);
      const [doc] = docs;
      expect(doc?.errors, file).toEqual([]);
      const object = doc?.toJS() as Record<string, unknown>;
      expect(object, file).toMatchObject({ apiVersion: expect.any(String), kind: expect.any(String), metadata: { name: expect.any(String) } });
      if (validateManifest(object)) validatedWithModel++;
    }
    // The Namespace of the cluster at least has a model.
    expect(validatedWithModel).toBeGreaterThan(0);
  });
});
