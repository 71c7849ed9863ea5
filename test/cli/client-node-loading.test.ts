import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { osbClient } from "../support/osb-client.js";
import { PROCESS_TEST_TIMEOUT_MS, runProcess, startProcess, trackedTempDir } from "../support/processes.js";

/**
 * @kubernetes/client-node (~0.8 s of CPU to import) is loaded only when a cluster is talked to:
 * a broker in commit status mode never loads it. Nor does a broker that encrypts nothing load
 * age-encryption (~0.16 s), which only sensitive parameters need (src/sops). Every module a child process loads is recorded
 * by a loader hook (test/support/record-loads.mjs); the control shows that the recording sees the
 * module when the lazy load does happen, through the same loader chain (tsx registered after the
 * recorder, as bin/gitops-broker.js does when the build is not fresh).
 */
const PROJECT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const BIN = path.join(PROJECT, "bin/gitops-broker.js");
const RECORDER = path.join(PROJECT, "test/support/record-loads.mjs");
const CLIENT_NODE = "/node_modules/@kubernetes/client-node/";

async function recorded(file: string): Promise<string[]> {
  return (await readFile(file, "utf8")).split("\n").filter((url) => url !== "");
}

const clientNodeUrls = (urls: string[]) => urls.filter((url) => url.includes(CLIENT_NODE));

describe("loading @kubernetes/client-node", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("a commit-mode broker starts, provisions and stops without loading it", async () => {
    const cwd = await trackedTempDir("client-node-loading-");
    const loads = path.join(cwd, "loads");
    // The embedded default: a local remote seeded with the sample catalog, status mode commit.
    const broker = startProcess(process.execPath, ["--import", RECORDER, BIN, "serve", "--listen", "127.0.0.1:0"], {
      cwd,
      env: { ...process.env, RECORD_LOADS_FILE: loads },
    });
    const line = await broker.waitForLine((l) => l.includes('"gitops-broker listening"'), "the listening log line");
    const url = (JSON.parse(line) as { url: string }).url;
    const password = (await readFile(path.join(cwd, ".gitops-broker/password"), "utf8")).trim();
    const osb = osbClient(url, { username: "broker", password });
    const catalog = await osb.catalog();
    expect(catalog.status).toBe(200);
    const [service] = catalog.body.services as { id: string; plans: { id: string; name: string }[] }[];
    const plan = service!.plans.find((p) => p.name === "small")!;
    // A commit, a push (the nudger hears of it) and a status read by the commit-mode watcher.
    expect((await osb.provision("lazy-1", { service_id: service!.id, plan_id: plan.id, organization_guid: "o", space_guid: "s" })).status).toBe(201);
    expect((await osb.getInstance("lazy-1")).status).toBe(200);
    broker.signal("SIGTERM");
    expect((await broker.exited).code).toBe(0);

    const urls = await recorded(loads);
    // The recording saw the broker's own wiring (sources or build) and its dependencies.
    expect(urls.some((u) => /\/(src|dist)\/kube\/client-node\.(ts|js)$/.test(u))).toBe(true);
    expect(urls.some((u) => u.includes("/node_modules/express/"))).toBe(true);
    const loaded = clientNodeUrls(urls);
    expect(loaded.slice(0, 3), `${loaded.length} modules of client-node loaded`).toEqual([]);
    const age = urls.filter((url) => url.includes("/node_modules/age-encryption/"));
    expect(age.slice(0, 3), `${age.length} modules of age-encryption loaded`).toEqual([]);
  });

  it("control: the recording sees the module once src/kube loads it", async () => {
    const cwd = await trackedTempDir("client-node-loading-");
    const loads = path.join(cwd, "loads");
    const script = [
      `const { loadClientNode } = await import(${JSON.stringify(path.join(PROJECT, "src/kube/index.ts"))});`,
      "const k8s = await loadClientNode();",
      "if (k8s !== await loadClientNode()) throw new Error('loaded twice');",
      "console.log(typeof k8s.KubeConfig);",
    ].join("\n");
    const { code, stdout, stderr } = await runProcess(process.execPath, ["--import", RECORDER, "--import", "tsx", "--input-type=module", "-e", script], {
      cwd: PROJECT,
      env: { ...process.env, RECORD_LOADS_FILE: loads },
    });
    expect({ code, stdout, stderr }).toEqual({ code: 0, stdout: "function\n", stderr: "" });
    expect(clientNodeUrls(await recorded(loads))).toContain(`file://${PROJECT}/node_modules/@kubernetes/client-node/dist/index.js`);
  });
});
