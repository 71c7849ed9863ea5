/**
 * An imported instance and binding in status mode live: after the sync of the import commit, the
 * plan's status template (Service Fabrik's sample, Go) judges the live objects in the instance's
 * own namespace (`sf-<id>`): last_operation of the `import` entry answers as its provision would,
 * and the imported binding's credentials come from the operator's Secret and Service, as Service
 * Fabrik's status template built them; none of them is in Git.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { remoteFiles } from "../broker/helpers.js";
import { readRemoteFiles } from "../support/git-fixtures.js";
import { EVENT_CEILING_MS } from "../support/processes.js";
import { runImport, startImportLandscape, type ImportLandscape } from "../support/service-fabrik-landscape.js";
import { createSyncAgent, type SyncAgent } from "../support/sync-agent.js";

const eventually = <T>(assertion: () => Promise<T>): Promise<T> => vi.waitFor(assertion, { timeout: EVENT_CEILING_MS, interval: 100 });

let land: ImportLandscape;
let agent: SyncAgent;

beforeAll(async () => {
  land = await startImportLandscape("sf-import-live-", [{ id: "l-1", clusterId: "east", bindings: [{ id: "l-1-b" }] }], { mode: "live" });
  // The postgres-operator double makes the clusters Running and the users' Secrets, as the operator did for Service Fabrik.
  land.east.operator.reconcile();
  agent = createSyncAgent({ kind: "argocd", name: "east", namespace: "argocd", clusterId: "east", remoteDir: land.h.remoteDir, server: land.east.server });
}, 120_000);
afterAll(async () => {
  await agent?.stop();
  await land?.close();
});

describe("an imported instance in status mode live", () => {
  it("answers last_operation from its status template and the binding's credentials from the cluster", async () => {
    const { code, out } = await runImport(["service-fabrik", ...land.args, "--yes"]);
    expect(code).toBe(0);
    expect(out).toContain("imported 1 instance(s) with 1 binding(s) in 1 commit(s)");
    await agent.sync();
    land.east.operator.reconcile();
    const last = await eventually(async () => {
      const reply = await land.h.osb.lastOperation("l-1");
      expect(reply.body.state).toBe("succeeded");
      return reply;
    });
    expect(last.status).toBe(200);
    const binding = await eventually(async () => {
      const reply = await land.h.osb.getBinding("l-1", "l-1-b");
      expect(reply.status).toBe(200);
      expect(reply.body.credentials).toBeDefined();
      return reply.body.credentials as Record<string, string>;
    });
    expect(binding).toMatchObject({ dbname: "main", username: "l-1-b", port: "5432" });
    expect(binding.uri).toMatch(/^postgres:\/\/l-1-b:.+@10\.96\.\d+\.\d+:5432\/main\?sslmode=require$/);
    // The password is the operator's, on the cluster; never in Git.
    const files = await remoteFiles(land.h.remoteDir);
    expect((await readRemoteFiles(land.h.remoteDir, "main", files)).some((text) => text?.includes(binding.password!))).toBe(false);
  });
});
