/**
 * The two setups of bench/ready.ts (polled, nudged) on REAL agents (ADR 0035): one real
 * kube-apiserver and etcd, and on it real Flux (source- and kustomize-controller) or real Argo CD
 * (repo-server, application controller, argocd-server for the webhook), built from their modules by
 * scripts/build-test-tools.sh. Each setup has its own remote, broker, instance namespace and sync
 * object, shaped like examples/flux/sparse-checkout.yaml (a GitRepository polling every POLL_S with
 * the cluster's directory only, a Kustomization with prune and wait) or like the Application
 * examples/argocd/applicationset.yaml generates (auto-sync with prune; Argo CD's
 * timeout.reconciliation POLL_S). The postgres-operator is the stand-in of
 * test/support/real-controllers.ts, Creating for OPERATOR_MS, then Running. The nudged setup's
 * registry says `nudge: {via: annotation}` (Flux) or a signed push event to argocd-server's
 * /api/webhook (Argo CD); the polled one has none.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { stringify } from "yaml";
import { startBroker } from "../src/cli/serve.js";
import { silentLogger } from "../src/log/index.js";
import { clusterNamespacePath, namespaceManifest } from "../src/repo/index.js";
import { samplePlans } from "../test/broker/helpers.js";
import { CREDENTIALS, testConfig } from "../test/support/broker-harness.js";
import { createBareRemote } from "../test/support/git-fixtures.js";
import type { GitHttpServer } from "../test/support/git-http-server.js";
import { osbClient } from "../test/support/osb-client.js";
import { ARGOCD_NAMESPACE, argoCdCrdFiles, repositorySecret, startArgoCd } from "../test/support/real-argocd.js";
import { postgresOperatorStandIn, startOperatorLoop, type OperatorLoop } from "../test/support/real-controllers.js";
import { fluxCrdFiles, gitCredentialsSecret, startFlux } from "../test/support/real-flux.js";
import { startRealKube, type KubeObject, type RealKube } from "../test/support/real-kube.js";
import { buildTestTools } from "../test/support/test-tools.js";
import { sampleCatalogFiles } from "../test/support/sister-cluster.js";
import type { Setup } from "./ready.js";

const OUR_CRDS = path.resolve(import.meta.dirname, "../test/support/crds");
const WEBHOOK_SECRET = "bench-webhook-secret";

/** The sync objects of one setup, named after it, reading clusters/local/ of its remote. */
function syncObjects(agent: "flux" | "argocd", name: Setup["name"], url: string, pollS: number): KubeObject[] {
  if (agent === "flux") {
    return [
      gitCredentialsSecret(`${name}-git`),
      {
        apiVersion: "source.toolkit.fluxcd.io/v1",
        kind: "GitRepository",
        metadata: { name, namespace: "flux-system" },
        spec: { interval: `${pollS}s`, url, ref: { branch: "main" }, secretRef: { name: `${name}-git` }, sparseCheckout: ["clusters/local"], ignore: "/*\n!/clusters/\n/clusters/*\n!/clusters/local/\n" },
      },
      {
        apiVersion: "kustomize.toolkit.fluxcd.io/v1",
        kind: "Kustomization",
        metadata: { name, namespace: "flux-system" },
        spec: { sourceRef: { kind: "GitRepository", name }, path: "./clusters/local", prune: true, wait: true, timeout: "5m", interval: "10m", retryInterval: "1m" },
      },
    ];
  }
  return [
    repositorySecret(`${name}-repo`, url),
    {
      apiVersion: "argoproj.io/v1alpha1",
      kind: "Application",
      metadata: { name, namespace: ARGOCD_NAMESPACE, annotations: { "argocd.argoproj.io/manifest-generate-paths": "/clusters/local" } },
      spec: {
        project: "default",
        source: { repoURL: url, targetRevision: "main", path: "clusters/local", directory: { recurse: true } },
        destination: { name: "local", namespace: `${name}-instances` },
        syncPolicy: { automated: { prune: true, selfHeal: true }, syncOptions: ["CreateNamespace=false", "PruneLast=true", "ApplyOutOfSyncOnly=true"] },
      },
    },
  ];
}

export interface RealSetups {
  setups: Setup[];
  close(): Promise<void>;
}

/** Starts the control plane, the agent and both setups; the agents poll from the start. */
export async function startRealSetups(agent: "flux" | "argocd", root: string, git: GitHttpServer, pollS: number, operatorMs: number): Promise<RealSetups> {
  await buildTestTools();
  const kube = await startRealKube();
  const stops: (() => Promise<void>)[] = [() => kube.close()];
  const close = async () => {
    for (const stop of stops.reverse()) await stop();
  };
  try {
    await kube.installCrds([path.join(OUR_CRDS, "postgresqls.acid.zalan.do.yaml"), ...(agent === "flux" ? fluxCrdFiles() : argoCdCrdFiles())]);
    await kube.apply({ apiVersion: "v1", kind: "Namespace", metadata: { name: "flux-system" } });
    const kubeconfigPath = path.join(root, "local.kubeconfig");
    await writeFile(kubeconfigPath, kube.kubeconfig(), { mode: 0o600 });
    const secretPath = path.join(root, "webhook-secret");
    await writeFile(secretPath, WEBHOOK_SECRET, { mode: 0o600 });
    let webhookUrl = "";
    if (agent === "flux") {
      const flux = await startFlux(kube);
      stops.push(() => flux.close());
    } else {
      const argocd = await startArgoCd(kube, { webhookSecret: WEBHOOK_SECRET, reconciliation: `${pollS}s` });
      stops.push(() => argocd.close());
      webhookUrl = argocd.webhookUrl;
    }
    const setups: Setup[] = [];
    for (const name of ["polled", "nudged"] as const) {
      const setup = await startRealSetup({ agent, name, root, git, kube, kubeconfigPath, pollS, operatorMs, nudge: name === "polled" ? undefined : agent === "flux" ? { via: "annotation" } : { via: "webhook", url: webhookUrl, secret: { path: secretPath } } });
      stops.push(setup.stop);
      setups.push(setup.setup);
    }
    return { setups, close };
  } catch (error) {
    await close();
    throw error;
  }
}

async function startRealSetup(o: {
  agent: "flux" | "argocd";
  name: Setup["name"];
  root: string;
  git: GitHttpServer;
  kube: RealKube;
  kubeconfigPath: string;
  pollS: number;
  operatorMs: number;
  nudge: Record<string, unknown> | undefined;
}): Promise<{ setup: Setup; stop: () => Promise<void> }> {
  const namespace = `${o.name}-instances`;
  const remoteUrl = o.git.url(`${o.name}.git`);
  await createBareRemote(path.join(o.root, "remotes"), `${o.name}.git`, {
    ...(await sampleCatalogFiles()),
    "registry/clusters/local.yaml": stringify({
      apiVersion: "gitops-broker.io/v1alpha1",
      kind: "Cluster",
      metadata: { name: "local" },
      spec: {
        namespace,
        kubeconfig: { path: o.kubeconfigPath },
        status: { mode: "live" },
        sync: { kind: o.agent, name: o.name, namespace: o.agent === "flux" ? "flux-system" : ARGOCD_NAMESPACE, ...(o.nudge ? { nudge: o.nudge } : {}) },
      },
    }),
    [clusterNamespacePath("local")]: namespaceManifest(namespace),
  });
  const created = new Map<string, number>();
  const running = new Map<string, number>();
  let loop: OperatorLoop | undefined;
  const config = testConfig(o.root, `broker-${o.name}`, remoteUrl, { pushTimeoutSeconds: 120 });
  config.status = { ...config.status, mode: "live" };
  const broker = await startBroker(config, { version: "bench", logger: silentLogger() });
  const osb = osbClient(broker.url, CREDENTIALS);
  const plans = await samplePlans(osb);
  const setup: Setup = {
    name: o.name,
    broker,
    osb,
    serviceId: plans.serviceId,
    planId: plans.medium.id,
    created,
    running,
    startAgent: async () => {
      for (const object of syncObjects(o.agent, o.name, remoteUrl, o.pollS)) await o.kube.apply(object, "kubectl");
      const operator = postgresOperatorStandIn(o.kube, namespace, {
        readyAfterMs: o.operatorMs,
        observe: (pg, event) => (event === "seen" ? created : running).set(pg, performance.now()),
      });
      loop = startOperatorLoop(operator, 100);
    },
  };
  return {
    setup,
    stop: async () => {
      await broker.close();
      await loop?.stop();
    },
  };
}
