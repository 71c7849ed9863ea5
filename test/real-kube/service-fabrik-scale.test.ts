/**
 * A Service Fabrik landscape of 1,250 instances on real kube-apiservers (the master, which is also
 * the sister `west`, and the sister `east`: test/support/real-service-fabrik.ts), with Kubernetes'
 * garbage collector running (ADR 0031), imported through the CLI as a process
 * (`bin/gitops-broker.js import service-fabrik`) with the default page size of 500: every list
 * the import reads spans several pages (1,250 SFServiceInstances on the master, about 625
 * postgresqls on each sister).
 *
 * - The dry run plans every importable instance and writes nothing.
 * - `--yes` is killed (-9) once its first batch is on the remote (the remote's branch moved); run
 *   again, it imports the rest: every instance is in the remote's history exactly once.
 * - `--yes --hand-over` is killed (-9) in its step 4, once 150 of east's SFServiceInstances were
 *   deleted (seen on a watch); run again, it completes.
 * Then an independent re-list of both clusters (every page, `continue` followed by the test
 * itself): no Service Fabrik resource of an imported instance is left, every object the
 * provisioner applied has the uid it was created with, and only the instances not imported are
 * still owned by Service Fabrik.
 *
 * Cost (docs/benchmarks.md, "Importing a Service Fabrik landscape"): creating the landscape on the
 * real servers and the five CLI runs take minutes on a loaded machine; the figures of a run are
 * printed.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { gitLog, remoteHead } from "../support/git-fixtures.js";
import { PROCESS_TEST_TIMEOUT_MS, startProcess, waitUntil, type TrackedProcess } from "../support/processes.js";
import type { KubeObject, RealKube } from "../support/real-kube.js";
import { startRealLandscape, type RealLandscape } from "../support/real-service-fabrik.js";
import type { SfInstanceSpec } from "../support/service-fabrik-landscape.js";

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS * 2, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../bin/gitops-broker.js");
const COUNT = 1250;
const BATCH = 250;
const OSB = "/apis/osb.servicefabrik.io/v1alpha1";
const PG = "/apis/acid.zalan.do/v1/postgresqls";

const id = (i: number) => `sf-${String(i).padStart(4, "0")}`;
const LANDSCAPE: SfInstanceSpec[] = Array.from({ length: COUNT }, (_, i) => ({
  id: id(i),
  clusterId: i % 2 === 0 ? "east" : "west",
  // Service Fabrik's two layouts: a namespace per instance (sf-<id>), and its shared namespace
  // for the others (fewer objects to create: the landscape's creation is most of the file's time).
  ...(i % 10 === 3 ? {} : { namespace: "sf-services" }),
  ...(i % 10 === 0 ? { bindings: [{ id: `${id(i)}-b` }] } : {}),
  ...(i % 250 === 1 ? { state: "in progress" } : i % 250 === 2 ? { state: "failed" } : {}),
}));
const IMPORTED = LANDSCAPE.filter((s) => s.state === undefined);
const NOT_IMPORTED = LANDSCAPE.filter((s) => s.state !== undefined);
const BINDINGS = IMPORTED.reduce((n, s) => n + (s.bindings?.length ?? 0), 0);

let land: RealLandscape;
const figures: string[] = [];

/** `gitops-broker import service-fabrik <flags>` as a process. */
const startImport = (...flags: string[]): TrackedProcess =>
  startProcess(process.execPath, [BIN, "import", "service-fabrik", ...land.args, "--differences", "summary", "--batch-size", String(BATCH), ...flags]);

/** Runs the import to its end; resolves with its exit code and output. */
async function runImport(what: string, ...flags: string[]): Promise<{ code: number | null; out: string }> {
  const started = performance.now();
  const p = startImport(...flags);
  const { code } = await p.exited;
  figures.push(`${what}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return { code, out: `${p.stdout()}${p.stderr()}` };
}

/** Starts the import, kills it (-9) once `reached` resolves, and resolves with what it printed. */
async function importKilledWhen(what: string, flags: string[], reached: () => Promise<void>): Promise<string> {
  const started = performance.now();
  const p = startImport(...flags);
  const exitedFirst = p.exited.then(({ code }) => {
    throw new Error(`the import ended (${String(code)}) before it was killed: ${p.stdout().slice(-2000)}${p.stderr()}`);
  });
  try {
    await Promise.race([reached(), exitedFirst]);
  } finally {
    await p.killGroup();
    exitedFirst.catch(() => undefined);
  }
  figures.push(`${what}: killed after ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return p.stdout();
}

/** Waits until `count` events that `match` accepts came on a watch of `urlPath`. */
function events(kube: RealKube, urlPath: string, count: number, match: (type: string, o: KubeObject) => boolean, what: string): () => Promise<void> {
  return async () => {
    let seen = 0;
    const watch = kube.watch(urlPath, ({ type, object }) => {
      if (match(type, object)) seen++;
    });
    try {
      await waitUntil(() => seen >= count, what, { ceilingMs: PROCESS_TEST_TIMEOUT_MS, intervalMs: 20 });
    } finally {
      watch.stop();
    }
  };
}

/** The commit the remote's `main` names, read from the ref file git updates (a loose ref, or packed-refs). */
async function branchTip(): Promise<string> {
  try {
    return (await readFile(path.join(land.remoteDir, "refs/heads/main"), "utf8")).trim();
  } catch {
    return remoteHead(land.remoteDir);
  }
}

/** The Instance-Id trailers of the remote's import commits (Reason: import), oldest first: one per instance written. */
async function importedIds(): Promise<string[]> {
  const commits = (await gitLog(land.remoteDir)).reverse().filter((c) => /^Reason: import$/m.test(c.message));
  return commits.flatMap((c) => [...c.message.matchAll(/^Instance-Id: (.*)$/gm)].map((m) => m[1]!));
}

beforeAll(async () => {
  const started = performance.now();
  land = await startRealLandscape("sf-scale-", LANDSCAPE, { controllerManager: true });
  figures.push(`landscape: ${land.created.objects} objects created in ${(land.created.ms / 1000).toFixed(1)} s (${((performance.now() - started) / 1000).toFixed(1)} s with the control planes)`);
});
afterAll(async () => {
  console.log(`importing ${COUNT} Service Fabrik instances on real kube-apiservers:\n  ${figures.join("\n  ")}`);
  await land?.close();
});

describe(`importing ${COUNT} Service Fabrik instances on real kube-apiservers, lists of 500 a page`, () => {
  it("the dry run plans every importable instance and writes nothing", async () => {
    const head = await remoteHead(land.remoteDir);
    const { code, out } = await runImport("dry run");
    expect(out).toContain(`to import: ${IMPORTED.length} instance(s) with ${BINDINGS} binding(s)`);
    expect(out).toContain(`SFServiceInstances: ${COUNT} found = ${IMPORTED.length} to import + 0 already imported + 0 refused + ${NOT_IMPORTED.length} skipped`);
    expect(out).toContain(`SFServiceBindings: ${BINDINGS} found = ${BINDINGS} to import + 0 already imported + 0 refused + 0 skipped`);
    // Incomplete: the instances in progress or failed stay with Service Fabrik.
    expect(code).toBe(3);
    expect(await remoteHead(land.remoteDir)).toBe(head);
  });

  it("--yes killed once its first batch is on the remote, then run again: every instance imported exactly once", async () => {
    const head = await remoteHead(land.remoteDir);
    await importKilledWhen("--yes", ["--yes"], () => waitUntil(async () => (await branchTip()) !== head, "the remote's branch moved by the import's first push", { ceilingMs: PROCESS_TEST_TIMEOUT_MS, intervalMs: 20 }));
    const partial = await importedIds();
    expect(partial.length).toBeGreaterThanOrEqual(BATCH);
    expect(partial.length).toBeLessThan(IMPORTED.length);

    const { code, out } = await runImport("--yes again", "--yes");
    expect(out).toContain(`already in the GitOps repository: ${partial.length} instance(s)`);
    expect(out).toContain(`SFServiceInstances: ${COUNT} found = ${IMPORTED.length - partial.length} imported + ${partial.length} already imported + 0 refused + ${NOT_IMPORTED.length} skipped`);
    expect(code).toBe(3);
    const ids = await importedIds();
    expect(ids).toHaveLength(IMPORTED.length);
    expect(new Set(ids)).toEqual(new Set(IMPORTED.map((s) => s.id)));
  });

  it("--yes --hand-over killed in its step 4 (150 of east's SFServiceInstances deleted, seen on a watch), then run again: complete", async () => {
    await importKilledWhen(
      "--yes --hand-over",
      ["--yes", "--hand-over"],
      events(land.east, `${OSB}/sfserviceinstances`, 150, (type) => type === "DELETED", "150 of east's SFServiceInstances deleted"),
    );
    expect((await land.east.listAll(`${OSB}/sfserviceinstances`)).length).toBeGreaterThan(NOT_IMPORTED.length);
    const { code, out } = await runImport("--yes --hand-over again", "--yes", "--hand-over");
    expect(out).not.toContain("FAILED");
    expect(out).toContain(`hand-over incomplete: no imported object is owned by a Service Fabrik resource; ${NOT_IMPORTED.length} instance(s) and 0 binding(s) stay with Service Fabrik`);
    expect(code).toBe(3);
  });

  it("an independent re-list finds every imported object with its uid, unowned, and Service Fabrik's resources of the imported instances gone", async () => {
    const imported = new Set(IMPORTED.map((s) => s.id));
    const names = async (kube: RealKube, plural: string) => (await kube.listAll(`${OSB}/${plural}`)).map((o) => o.metadata.name).sort();
    // Collected: the orphaning deletes waited for the collector, which has worked through them.
    await waitUntil(async () => (await names(land.master, "sfserviceinstances")).length === NOT_IMPORTED.length, "the master's imported SFServiceInstances gone", { intervalMs: 500 });
    await Promise.all([land.master.collectorBarrier(), land.east.collectorBarrier()]);
    expect(await names(land.master, "sfserviceinstances")).toEqual(NOT_IMPORTED.map((s) => s.id).sort());
    expect(await names(land.east, "sfserviceinstances")).toEqual(NOT_IMPORTED.filter((s) => s.clusterId === "east").map((s) => s.id).sort());
    const notImportedBindings = NOT_IMPORTED.flatMap((s) => (s.bindings ?? []).map((b) => b.id)).sort();
    expect(await names(land.master, "sfservicebindings")).toEqual(notImportedBindings);

    for (const [cluster, kube] of [["west", land.master], ["east", land.east]] as const) {
      const live = new Map((await kube.listAll(PG)).map((o) => [`${String(o.metadata.namespace)}/${o.metadata.name}`, o]));
      const expected = LANDSCAPE.filter((s) => s.clusterId === cluster);
      expect(live.size, cluster).toBe(expected.length);
      const wrong: string[] = [];
      for (const s of expected) {
        const created = land.applied.get(s.id)![0]!;
        const now = live.get(`${String(created.metadata.namespace)}/${created.metadata.name}`);
        const owners = (now?.metadata.ownerReferences as unknown[] | undefined)?.length ?? 0;
        if (now?.metadata.uid !== created.metadata.uid) wrong.push(`${s.id}: uid ${String(now?.metadata.uid)}, created ${String(created.metadata.uid)}`);
        else if (imported.has(s.id) !== (owners === 0)) wrong.push(`${s.id}: ${owners} owner reference(s)`);
      }
      expect(wrong, cluster).toEqual([]);
    }
  });
});
