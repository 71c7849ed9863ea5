import { writeFile } from "node:fs/promises";
import path from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { runClusters, runMove } from "../../src/cli/admin-commands.js";
import { instanceManifestDir, instanceRecordPath } from "../../src/repo/index.js";
import { provisionBody, remoteFiles, remoteHead, samplePlans, headMessage } from "../broker/helpers.js";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { readRemoteFile } from "../support/git-fixtures.js";
import { repoFiles } from "../support/repo-files.js";

let h: Harness;
let configArgs: string[];

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on("data", (c: Buffer) => chunks.push(c));
  return { stream, text: () => Buffer.concat(chunks).toString("utf8") };
}

beforeAll(async () => {
  h = await startHarness({
    scheduler: "least-utilized",
    files: await repoFiles([
      { id: "east", capacity: { maxInstances: 2 }, labels: { region: "east" } },
      { id: "west", capacity: { maxInstances: 2 }, labels: { region: "west" } },
      { id: "old", schedulable: false },
    ]),
  });
  const plans = await samplePlans(h.osb);
  for (const id of ["m-1", "m-2", "m-3"]) {
    expect((await h.osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
  }
  expect((await h.osb.bind("m-1", "m-1-app", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(201);
  const configFile = path.join(h.root, "cli.yaml");
  await writeFile(configFile, stringify({ dataDir: path.join(h.root, "cli-data"), git: { remote: h.remoteUrl } }));
  configArgs = ["--config", configFile];
});
afterAll(async () => {
  await h?.close();
});

describe("gitops-broker clusters", () => {
  it("lists clusters with labels, capacity, live instance counts and drain state", async () => {
    const json = capture();
    expect(await runClusters(["--json", ...configArgs], json.stream)).toBe(0);
    const report = JSON.parse(json.text()) as { id: string; instances: number; schedulable: boolean }[];
    expect(report.map((c) => [c.id, c.instances, c.schedulable])).toEqual([
      ["east", 2, true],
      ["old", 0, false],
      ["west", 1, true],
    ]);

    const text = capture();
    expect(await runClusters(configArgs, text.stream)).toBe(0);
    const lines = text.text().trim().split("\n");
    expect(lines[0]).toMatch(/^CLUSTER\s+SCHEDULABLE\s+INSTANCES\s+CAPACITY\s+NAMESPACE\s+STATUS\s+LABELS$/);
    expect(lines[1]).toMatch(/^east\s+yes\s+2\s+2 instances\s+gitops-broker-instances\s+default\s+region=east$/);
    expect(lines[2]).toMatch(/^old\s+no \(drained\)\s+0\s+-/);
  });
});

describe("gitops-broker move", () => {
  it("moves an instance and its bindings to another cluster in one commit", async () => {
    // least-utilized placed m-1 and m-3 on east, m-2 on west.
    const record = parse((await readRemoteFile(h.remoteDir, "main", instanceRecordPath("m-1"))) ?? "");
    expect(record.spec.clusterId).toBe("east");
    const [from, to] = ["east", "west"];
    const before = await remoteFiles(h.remoteDir, instanceManifestDir(from, "m-1"));
    expect(before.length).toBeGreaterThan(0);

    // Without --yes (or --dry-run) nothing runs: the move deletes the objects on the old cluster.
    const head = await remoteHead(h.remoteDir);
    const refused = capture();
    expect(await runMove(["m-1", to, ...configArgs], capture().stream, refused.stream)).toBe(2);
    expect(refused.text()).toMatch(/the database there is dropped[\s\S]*--dry-run[\s\S]*--yes/);

    // --dry-run lists what the commit would delete and write, and commits nothing.
    const dry = capture();
    expect(await runMove(["m-1", to, "--dry-run", ...configArgs], dry.stream, capture().stream)).toBe(0);
    expect(dry.text()).toMatch(new RegExp(`^dry run: moving instance m-1 from ${from} to ${to} would commit:\n`));
    for (const file of before) expect(dry.text()).toContain(`  delete ${file}\n`);
    expect(dry.text()).toContain(`  write  ${instanceRecordPath("m-1")}\n`);
    expect(dry.text()).toMatch(new RegExp(`  write  ${instanceManifestDir(to, "m-1")}/`));
    expect(dry.text()).toMatch(/its data there is dropped\); nothing was committed\n$/);
    expect(await remoteHead(h.remoteDir)).toBe(head);

    const out = capture();
    const err = capture();
    const code = await runMove(["m-1", to, "--yes", ...configArgs], out.stream, err.stream);
    expect(err.text()).toBe("");
    expect(code).toBe(0);
    expect(out.text()).toMatch(new RegExp(`moved instance m-1 from ${from} to ${to} in commit [0-9a-f]{40}`));
    for (const file of before) expect(out.text()).toContain(`  delete ${file}\n`);
    expect(await headMessage(h.remoteDir)).toMatch(new RegExp(`^move postgresql/small instance m-1 from ${from} to ${to}\n`));
    expect(await remoteFiles(h.remoteDir, instanceManifestDir(from, "m-1"))).toEqual([]);
    expect((await remoteFiles(h.remoteDir, instanceManifestDir(to, "m-1"))).length).toBeGreaterThan(0);
    // The instance's objects on the new cluster still carry its binding (a database user per binding).
    const files = await remoteFiles(h.remoteDir, instanceManifestDir(to, "m-1"));
    const texts = await Promise.all(files.map((f) => readRemoteFile(h.remoteDir, "main", f)));
    expect(texts.join("\n")).toContain("m-1-app");
    const moved = parse((await readRemoteFile(h.remoteDir, "main", instanceRecordPath("m-1"))) ?? "");
    expect(moved.spec.clusterId).toBe(to);

    // The broker picks the move up and keeps the instance on its new cluster.
    await h.broker.writer.refresh();
    const plans = await samplePlans(h.osb);
    expect((await h.osb.update("m-1", { service_id: plans.serviceId, parameters: { storageGB: 11 } })).status).toBe(200);
    expect((await remoteFiles(h.remoteDir, instanceManifestDir(to, "m-1"))).length).toBeGreaterThan(0);
    expect(await remoteFiles(h.remoteDir, instanceManifestDir(from, "m-1"))).toEqual([]);
  });

  it("refuses a full or drained target and an unknown instance, committing nothing", async () => {
    const head = await remoteHead(h.remoteDir);
    for (const [args, message] of [
      [["m-2", "old"], /move refused: the only cluster is drained \(schedulable: false\): old/],
      [["ghost", "west"], /move refused: instance ghost does not exist/],
      [["m-2", "nowhere"], /move refused: cluster nowhere is not in the registry/],
    ] as const) {
      const err = capture();
      expect(await runMove([...args, "--yes", ...configArgs], capture().stream, err.stream)).toBe(1);
      expect(err.text()).toMatch(message);
    }
    expect(await remoteHead(h.remoteDir)).toBe(head);
  });
});
