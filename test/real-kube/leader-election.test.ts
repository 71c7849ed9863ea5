/**
 * Leader election against a REAL kube-apiserver and etcd (test/support/real-kube.ts, ADR 0024):
 * two broker processes with the identity deploy/chart gives them (its ServiceAccount and Lease
 * Role, rendered by Helm itself; a TokenRequest token). Both serve OSB; only the Lease's holder
 * re-renders after a plan change; the holder is killed (-9, no goodbye) in the middle of the work
 * and the other takes the Lease over within its duration and finishes the work from Git. And two
 * electors in this process, one of them behind a proxy that hangs its renewal's PUT: the holder
 * stops believing it leads at its renew deadline, before the other takes over.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createKubeLeaseClient, createLeaseElector, type Leadership, type LeaseClient } from "../../src/leader/index.js";
import { silentLogger } from "../../src/log/index.js";
import { BIN, spawnBroker, type BrokerProcess, type LogLine } from "../write-path/broker-process.js";
import { provisionBody, readyz, samplePlans } from "../broker/helpers.js";
import { commitsIn, editedPlan, filesWith, provisionTemplate, SMALL } from "../broker/reconcile-support.js";
import { createBareRemote, createTempDir, pushExternalCommit } from "../support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import { startHangProxy } from "../support/hang-proxy.js";
import { EVENT_CEILING_MS, PROCESS_TEST_TIMEOUT_MS, runProcess } from "../support/processes.js";
import { helmTemplateObjects, startRealKube, type RealKube } from "../support/real-kube.js";

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const CHART = path.resolve(import.meta.dirname, "../../deploy/chart");
const HOME = "brokers";
const RELEASE = "gb";
const SERVICE_ACCOUNT = "gb-gitops-broker";
const LEASE = "gb-gitops-broker";
const LEASE_PATH = `/apis/coordination.k8s.io/v1/namespaces/${HOME}/leases`;
const INSTANCES = ["db-1", "db-2", "db-3", "db-4", "db-5"];

let root: string;
let kube: RealKube;
let git: GitHttpServer;
let remoteDir: string;
let token: string;
let kubeconfigPath: string;
let configPath: string;

const eventually = <T>(assertion: () => Promise<T>): Promise<T> => vi.waitFor(assertion, { timeout: EVENT_CEILING_MS, interval: 100 });

beforeAll(async () => {
  root = await createTempDir("real-kube-leader-");
  kube = await startRealKube();
  for (const name of [HOME, "elsewhere"]) await kube.apply({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
  const identity = await helmTemplateObjects(CHART, {
    release: RELEASE,
    namespace: HOME,
    templates: ["templates/serviceaccount.yaml", "templates/rbac.yaml"],
    sets: ["config.git.remote=https://git.example/gitops.git"],
  });
  for (const object of identity) await kube.apply(object, "helm");
  token = await kube.tokenFor(HOME, SERVICE_ACCOUNT);
  kubeconfigPath = path.join(root, "broker.kubeconfig");
  await writeFile(kubeconfigPath, kube.kubeconfig({ token }), { mode: 0o600 });

  remoteDir = await createBareRemote(root, "remote.git", await filesWith(({ small }) => (small.spec.autoUpdateInstances = true)));
  git = await startGitHttpServer({ root });
  // Short lease times, so the takeover is quick; one re-render every two seconds, so the
  // leader is still busy when it is killed, however loaded the machine.
  configPath = path.join(root, "config.yaml");
  await writeFile(
    configPath,
    stringify({
      leaderElection: { enabled: true, leaseName: LEASE, namespace: HOME, leaseDurationSeconds: 6, renewDeadlineSeconds: 4, retryPeriodSeconds: 1 },
      reconcile: { maxPerSecond: 0.5, batchSize: 1 },
    }),
  );
});

afterAll(async () => {
  await git?.close();
  await kube?.close();
});

describe("the chart's Lease Role", () => {
  const as = (method: string, urlPath: string, body?: unknown) =>
    kube.request(method, urlPath, body, { token, ...(method === "PATCH" ? { contentType: "application/merge-patch+json" } : {}) });
  const lease = (name: string, namespace = HOME) => ({ apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name, namespace }, spec: { holderIdentity: "probe" } });

  it("is enough: create, get and update of the release's Lease", async () => {
    expect((await as("POST", LEASE_PATH, lease(LEASE))).status).toBe(201);
    const read = await as("GET", `${LEASE_PATH}/${LEASE}`);
    expect(read.status).toBe(200);
    const updated = await as("PUT", `${LEASE_PATH}/${LEASE}`, { ...read.body, spec: { holderIdentity: "" } });
    expect(updated.status).toBe(200);
  });

  it.each([
    ["read another Lease", "GET", `${LEASE_PATH}/kube-scheduler`],
    ["list Leases", "GET", LEASE_PATH],
    ["watch Leases", "GET", `${LEASE_PATH}?watch=true&timeoutSeconds=1`],
    ["delete its Lease", "DELETE", `${LEASE_PATH}/${LEASE}`],
    ["patch its Lease", "PATCH", `${LEASE_PATH}/${LEASE}`, { spec: { holderIdentity: "x" } }],
    ["create a Lease in another namespace", "POST", "/apis/coordination.k8s.io/v1/namespaces/elsewhere/leases", lease(LEASE, "elsewhere")],
    ["read the Leases of kube-system", "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"],
    ["list ConfigMaps", "GET", `/api/v1/namespaces/${HOME}/configmaps`],
  ])("refuses to %s", async (_what, method, urlPath, body?: unknown) => {
    expect((await as(method, urlPath, body)).status).toBe(403);
  });
});

describe("a configuration problem, not a stack", () => {
  it("leader election with a kubeconfig that does not load: exit 2 naming the key, nothing left running", async () => {
    const bad = path.join(root, "bad.kubeconfig");
    await writeFile(bad, "clusters: [\n");
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("GITOPS_BROKER_")));
    const { code, stdout, stderr } = await runProcess(process.execPath, [BIN, "serve", "--data-dir", path.join(root, "bad-data"), "--listen", "127.0.0.1:0"], {
      env: { ...env, KUBECONFIG: bad, GITOPS_BROKER_LEADER_ELECTION: "true", GITOPS_BROKER_GIT_REMOTE: git.url("remote.git") },
      ceilingMs: EVENT_CEILING_MS,
    });
    expect(code).toBe(2);
    expect(stderr).toMatch(/^invalid configuration:\nconfig: leaderElection\.enabled: needs the cluster's API, but its kubeconfig does not load: /);
    expect(stderr).not.toMatch(/\n\s+at /);
    expect(stdout).not.toContain("gitops-broker listening");
  });
});

describe("two replicas, one Lease", () => {
  let a: BrokerProcess;
  let b: BrokerProcess;

  const start = (identity: string): Promise<BrokerProcess> =>
    spawnBroker({
      dataDir: path.join(root, identity),
      remoteUrl: git.url("remote.git"),
      pollIntervalSeconds: 1,
      command: [BIN, "serve", "--config", configPath],
      env: { KUBECONFIG: kubeconfigPath, GITOPS_BROKER_LEADER_ELECTION_IDENTITY: identity, GITOPS_BROKER_METRICS_LISTEN: "127.0.0.1:0" },
    });
  const acquired = (line: LogLine) => line.msg.startsWith("acquired the Lease");
  const rerendered = (p: BrokerProcess) => p.logs.filter((l) => l.msg === "re-rendered").map((l) => l.instance as string);
  const holder = async () => ((await kube.request("GET", `${LEASE_PATH}/${LEASE}`)).body.spec as { holderIdentity?: string }).holderIdentity;
  const metricsUrl = (p: BrokerProcess) => p.logs.find((l) => l.msg === "metrics served")!.url as string;
  async function leaderGauge(p: BrokerProcess): Promise<string | undefined> {
    const text = await (await fetch(metricsUrl(p))).text();
    return text.split("\n").find((l) => l.startsWith("gitops_broker_leader{"));
  }
  async function leaderLine(p: BrokerProcess): Promise<string | undefined> {
    return (await readyz(p.url)).body.checks.find((c) => c.name === "leader")?.message;
  }

  it("only the holder re-renders a plan change; killed, the other takes over within the lease and finishes the work", async () => {
    a = await start("replica-a");
    await a.waitForLog(acquired);
    b = await start("replica-b");
    await b.waitForLog((l) => l.msg.startsWith("leader election: background work waits"));
    expect(await holder()).toBe("replica-a");
    // Both serve OSB, both say who leads.
    const plans = await samplePlans(b.osb);
    for (const [i, id] of INSTANCES.entries()) {
      expect((await (i % 2 === 0 ? a : b).osb.provision(id, provisionBody(plans.serviceId, plans.small.id))).status).toBe(201);
    }
    expect(await leaderLine(a)).toBe(`Lease ${HOME}/${LEASE} held by this replica`);
    expect(await leaderLine(b)).toBe(`Lease ${HOME}/${LEASE} held by replica-a (this replica: replica-b)`);
    expect(await leaderGauge(a)).toBe('gitops_broker_leader{identity="replica-a"} 1');
    expect(await leaderGauge(b)).toBe('gitops_broker_leader{identity="replica-b"} 0');

    // A plan change both replicas fetch (every second): only the holder re-renders.
    const plan = await editedPlan(remoteDir, SMALL, (p) => {
      const t = provisionTemplate(p);
      t.content = t.content.replace(/numberOfInstances: \d+/, "numberOfInstances: 3");
    });
    const change = await pushExternalCommit(remoteDir, { [SMALL]: plan }, "small: three servers");
    await a.waitForLog((l) => l.msg === "re-rendered");
    await a.kill();
    const doneByA = rerendered(a);
    expect(doneByA.length).toBeGreaterThanOrEqual(1);
    expect(doneByA.length).toBeLessThan(INSTANCES.length);
    expect(rerendered(b)).toEqual([]);

    // No release from a killed process: b waits for the Lease to lapse (6 s), then catches up.
    const killedAt = performance.now();
    await b.waitForLog(acquired);
    const takeoverMs = performance.now() - killedAt;
    // The lease (6 s) and a retry period, plus a loaded machine's slack: a ceiling, not a budget.
    expect(takeoverMs).toBeLessThan(30_000);
    expect(await holder()).toBe("replica-b");
    await eventually(async () => {
      const commits = await commitsIn(remoteDir, `${change}..main`);
      expect(commits.map((c) => c.trailers["Instance-Id"]).sort()).toEqual(INSTANCES);
    });
    // Each instance once (above, from Git): what a did before it died, b left alone (its
    // catch-up reads Git). A re-render a pushed in the instant before -9 may have no log line.
    const commits = await commitsIn(remoteDir, `${change}..main`);
    for (const c of commits) expect(c.trailers).toMatchObject({ Reason: "plan-changed", "Plan-Commit": change });
    const doneByB = rerendered(b);
    expect(doneByB.length).toBeGreaterThanOrEqual(1);
    expect(doneByB.filter((id) => doneByA.includes(id))).toEqual([]);
    expect(await leaderLine(b)).toBe(`Lease ${HOME}/${LEASE} held by this replica`);
    expect(await leaderGauge(b)).toBe('gitops_broker_leader{identity="replica-b"} 1');

    // A graceful stop gives the Lease up: a new replica takes it at once, not after 6 s.
    expect(await b.stop()).toBe(0);
    expect(await holder()).toBe("");
    const c = await start("replica-c");
    await c.waitForLog(acquired);
    expect(await holder()).toBe("replica-c");
    expect(await c.stop()).toBe(0);
  });
});

describe("a renewal that hangs", () => {
  it("the holder whose GET answers late and whose PUT hangs stops leading at its renew deadline, before the other takes over", async () => {
    const times = { leaseDurationMs: 6_000, renewDeadlineMs: 4_000, retryPeriodMs: 1_000 };
    const proxy = await startHangProxy(Number(new URL(kube.url).port));
    const behindProxy = new KubeConfig();
    behindProxy.loadFromString(kube.kubeconfig().replace(kube.url, `https://127.0.0.1:${proxy.port}`));
    const lease = { namespace: HOME, name: "hang-test" };
    const real = createKubeLeaseClient({ kubeConfig: behindProxy, ...lease });
    let fault = false;
    // Once `fault` is set: the next GET goes through and is answered at 70 % of the renew
    // deadline; from then on the proxy hangs every new connection (the PUT that follows).
    const a: LeaseClient = {
      async get(signal) {
        const read = await real.get(signal);
        if (fault && !proxy.hungConnections) {
          proxy.setHanging(true);
          await new Promise<void>((resolve, reject) => {
            const timer = setTimeout(resolve, times.renewDeadlineMs * 0.7);
            signal?.addEventListener("abort", () => {
              clearTimeout(timer);
              reject(new Error("aborted"));
            });
          });
        }
        return read;
      },
      create: (l, signal) => real.create(l, signal),
      update: (l, signal) => real.update(l, signal),
    };
    const history: string[] = [];
    const electors: Leadership[] = [];
    const start = (identity: string, client: LeaseClient) => {
      const elector = createLeaseElector({ client, ...lease, identity, ...times, logger: silentLogger() });
      elector.onChange((leading) => history.push(`${identity} ${leading ? "leads" : "stops"}`));
      electors.push(elector);
      return elector;
    };
    try {
      const holder = start("a", a);
      await vi.waitFor(() => expect(holder.isLeader()).toBe(true), { timeout: EVENT_CEILING_MS, interval: 50 });
      const other = start("b", createKubeLeaseClient({ kubeConfig: kube.admin(), ...lease }));
      await vi.waitFor(() => expect(other.holder()).toBe("a"), { timeout: EVENT_CEILING_MS, interval: 50 });
      // Measured when b starts leading, not after a wait: does a still believe it leads?
      const aLeadsWhenBStarts: boolean[] = [];
      other.onChange((leading) => leading && aLeadsWhenBStarts.push(holder.isLeader()));
      fault = true;
      await vi.waitFor(() => expect(other.isLeader()).toBe(true), { timeout: EVENT_CEILING_MS, interval: 50 });
      expect(proxy.hungConnections).toBeGreaterThanOrEqual(1);
      expect(aLeadsWhenBStarts).toEqual([false]);
      expect(history).toEqual(["a leads", "a stops", "b leads"]);
      const stored = await kube.request("GET", `${LEASE_PATH}/hang-test`);
      expect((stored.body.spec as { holderIdentity?: string }).holderIdentity).toBe("b");
    } finally {
      proxy.setHanging(false);
      await Promise.all(electors.map((e) => e.close()));
      await proxy.close();
    }
  });
});
