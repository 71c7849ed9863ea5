/**
 * The Service Fabrik hand-over (ADR 0026) delivered by REAL Argo CD (ADR 0035), as
 * docs/migrating-from-service-fabrik.md has an operator do it: a Service Fabrik instance and
 * binding live on a real kube-apiserver (a master that is its own sister, SFCluster "1"),
 * `gitops-broker import service-fabrik --yes --hand-over` commits the instance's objects and
 * releases them, then the application controller syncs `clusters/1/` with automated sync and no
 * prune: every object `configured` or `unchanged`, none `created`, the live postgresql kept (same
 * uid) and tracked by the Application; then `prune: true`, after which a deprovision prunes it.
 * The Application has the shape examples/argocd/applicationset.yaml gives cluster "1"; the
 * project is examples/argocd/appproject.yaml with Service Fabrik's instance namespaces
 * (`sf-*`) among its destinations. kube-controller-manager runs: Argo CD's prune deletes with
 * foreground propagation, which its garbage collector completes.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Harness } from "../support/broker-harness.js";
import { remoteHead } from "../support/git-fixtures.js";
import { EVENT_CEILING_MS, PROCESS_TEST_TIMEOUT_MS } from "../support/processes.js";
import { argoCdCrdFiles, ARGOCD_NAMESPACE, repositorySecret, startArgoCd, type RealArgoCd } from "../support/real-argocd.js";
import { exampleObjects } from "../support/real-flux.js";
import { startRealKube, type RealKube } from "../support/real-kube.js";
import { runImport, SF_PLAN_ID, SF_SERVICE_ID } from "../support/service-fabrik-landscape.js";
import { managers, PG_PATH, SERVICE_FABRIK_CRD_FILES, startHandOver, type HandOver, type Live } from "./hand-over.js";

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const eventually = <T>(assertion: () => Promise<T>): Promise<T> => vi.waitFor(assertion, { timeout: EVENT_CEILING_MS, interval: 200 });
const INSTANCES = "gitops-broker-instances";
const APPLICATION = `/apis/argoproj.io/v1alpha1/namespaces/${ARGOCD_NAMESPACE}/applications/gitops-broker-1`;

let kube: RealKube;
let argocd: RealArgoCd;
let handOver: HandOver;
let h: Harness;
let args: string[];

const get = async (p: string) => (await kube.request("GET", p)).body as Live;
type AppStatus = {
  sync?: { status: string; revision: string };
  operationState?: { phase: string; syncResult?: { resources?: { kind: string; namespace: string; name: string; message: string }[] } };
  resources?: { kind: string; name: string }[];
};
const appStatus = async () => ((await get(APPLICATION)).status ?? {}) as AppStatus;

beforeAll(async () => {
  kube = await startRealKube();
  await kube.installCrds([...SERVICE_FABRIK_CRD_FILES, ...argoCdCrdFiles()]);
  handOver = await startHandOver(kube, [INSTANCES]);
  ({ h, args } = handOver);
  // After the CRDs and the objects: the collector learns the kinds discovery serves at its start.
  await kube.startControllerManager();
  // The cluster registered in Argo CD under its cluster id, as examples/argocd/README.md says.
  argocd = await startArgoCd(kube, { clusterName: "1" });
});

afterAll(async () => {
  await handOver?.close();
  await argocd?.close();
  await kube?.close();
});

/** The Application applicationset.yaml makes of clusters/1/, its automated sync with `prune`. */
async function applyApplication(prune: boolean): Promise<void> {
  await kube.apply({
    apiVersion: "argoproj.io/v1alpha1",
    kind: "Application",
    metadata: { name: "gitops-broker-1", namespace: ARGOCD_NAMESPACE, labels: { "gitops-broker.io/cluster-id": "1" }, annotations: { "argocd.argoproj.io/manifest-generate-paths": "/clusters/1" } },
    spec: {
      project: "gitops-broker",
      source: { repoURL: h.remoteUrl, targetRevision: "main", path: "clusters/1", directory: { recurse: true } },
      destination: { name: "1", namespace: INSTANCES },
      syncPolicy: { automated: { prune, selfHeal: true }, syncOptions: ["CreateNamespace=false", "ApplyOutOfSyncOnly=true"] },
    },
  }, "kubectl");
}

describe("hand-over of a Service Fabrik instance to real Argo CD", () => {
  it("import --hand-over, then automated sync without prune: the application controller takes the live postgresql over, nothing created, same uid", async () => {
    const before = await get(PG_PATH);
    expect(before.metadata.ownerReferences).toHaveLength(2);
    const imported = await runImport(["service-fabrik", ...args, "--yes", "--hand-over"]);
    expect(imported.out).toMatch(/imported 1 instance\(s\) with 1 binding\(s\) in 1 commit\(s\)/);
    expect(imported.code).toBe(0);
    expect((await get(PG_PATH)).metadata.ownerReferences).toBeUndefined();

    await kube.apply(repositorySecret("gitops-broker-repo", h.remoteUrl), "kubectl");
    const [project] = await exampleObjects("argocd/appproject.yaml", h.remoteUrl);
    await kube.apply({ ...project!, spec: { ...(project!.spec as object), sourceRepos: [h.remoteUrl], destinations: [{ name: "1", namespace: INSTANCES }, { name: "1", namespace: "sf-*" }] } }, "kubectl");
    await applyApplication(false);
    const tip = await remoteHead(h.remoteDir);
    await eventually(async () => {
      const status = await appStatus();
      expect(status.sync, argocd.logs()).toMatchObject({ status: "Synced", revision: tip });
      expect(status.operationState?.phase).toBe("Succeeded");
    });
    // The runbook's check (step 4): every object configured or unchanged, none created. kubectl
    // says of each object Service Fabrik made that it lacks the last-applied annotation ("...
    // created declaratively by either create --save-config or apply"), not that it created it.
    const results = (await appStatus()).operationState?.syncResult?.resources ?? [];
    expect(results.map((r) => `${r.kind}/${r.name}`)).toContain("postgresql/sapcp-r-1");
    for (const r of results) expect(r.message).toMatch(/^\S+ (configured|unchanged)\b/);
    const after = await get(PG_PATH);
    expect(after.metadata.uid).toBe(before.metadata.uid);
    expect(after.metadata.annotations?.["argocd.argoproj.io/tracking-id"]).toBe("gitops-broker-1:acid.zalan.do/postgresql:sf-r-1/sapcp-r-1");
    expect(managers(after)).toContain("argocd-controller/Update");
    expect(after.spec.users).toEqual({ main: ["superuser", "createdb"], "r-1-b": ["superuser"] });
  });

  it("then prune on: still the same object; a deprovision prunes it", async () => {
    const uid = (await get(PG_PATH)).metadata.uid;
    await applyApplication(true);
    await eventually(async () => {
      const app = await get(APPLICATION);
      expect(((app.spec as { syncPolicy: { automated: { prune: boolean } } }).syncPolicy.automated.prune)).toBe(true);
      expect(((app.status ?? {}) as AppStatus).sync?.status).toBe("Synced");
    });
    expect((await get(PG_PATH)).metadata.uid).toBe(uid);

    const query = { service_id: SF_SERVICE_ID, plan_id: SF_PLAN_ID };
    expect((await h.osb.unbind("r-1", "r-1-b", query)).status).toBe(200);
    const gone = await h.osb.deprovision("r-1", query, { query: { accepts_incomplete: "true" } });
    expect([200, 202]).toContain(gone.status);
    // Commit mode: the broker nudges no agent; the refresh an operator would ask for.
    await kube.request("PATCH", APPLICATION, { metadata: { annotations: { "argocd.argoproj.io/refresh": "normal" } } }, { contentType: "application/merge-patch+json" });
    await eventually(async () => {
      expect((await kube.request("GET", PG_PATH)).status, argocd.logs()).toBe(404);
      expect(((await appStatus()).resources ?? []).map((r) => `${r.kind}/${r.name}`)).not.toContain("postgresql/sapcp-r-1");
    });
  });
});
