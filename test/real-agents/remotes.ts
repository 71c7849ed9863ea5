/**
 * What the real-agent lifecycle tests (flux.test.ts, argocd.test.ts) start besides the agent: the
 * control remote (the sample catalog, plan `broken` under `brokenPlanId`, the registry entry of
 * cluster `local` and its namespace.yaml) and store eu's remote, served over smart HTTP; and the
 * broker on the control remote in live mode.
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "../../src/log/index.js";
import { startBroker, type RunningBroker } from "../../src/cli/serve.js";
import { clusterNamespacePath, namespaceManifest } from "../../src/repo/index.js";
import { samplePlans, type SamplePlans } from "../broker/helpers.js";
import { CREDENTIALS, testConfig } from "../support/broker-harness.js";
import { createBareRemote } from "../support/git-fixtures.js";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import { osbClient, type OsbClient } from "../support/osb-client.js";
import { sampleCatalogFiles } from "../support/sister-cluster.js";
import { brokenPlan } from "./plans.js";

export interface Remotes {
  git: GitHttpServer;
  /** The control remote's bare repository. */
  remoteDir: string;
}

export async function startRemotes(root: string, o: { namespace: string; brokenPlanId: string; localEntry: string }): Promise<Remotes> {
  const remotes = path.join(root, "remotes");
  await mkdir(remotes);
  const catalog = await sampleCatalogFiles();
  await createBareRemote(remotes, "platform-gitops.git", {
    ...catalog,
    "catalog/postgresql/plans/broken.yaml": brokenPlan(catalog, o.brokenPlanId),
    "registry/clusters/local.yaml": o.localEntry,
    [clusterNamespacePath("local")]: namespaceManifest(o.namespace),
  });
  await createBareRemote(remotes, "platform-gitops-eu.git", { [clusterNamespacePath("eu-prod-1")]: namespaceManifest(o.namespace) });
  return { git: await startGitHttpServer({ root: remotes }), remoteDir: path.join(remotes, "platform-gitops.git") };
}

export interface LiveBroker {
  broker: RunningBroker;
  osb: OsbClient;
  plans: SamplePlans;
}

/** The broker on `git`'s control remote, live mode; a bind or a synchronous answer waits 60 s for the agent and the operator. */
export async function startLiveBroker(root: string, git: GitHttpServer, logger: Logger): Promise<LiveBroker> {
  const config = testConfig(root, "broker", git.url("platform-gitops.git"));
  config.status = { ...config.status, mode: "live" };
  const broker = await startBroker(config, { version: "test", logger, status: { bindTimeoutMs: 60_000, settleTimeoutMs: 60_000 } });
  const osb = osbClient(broker.url, CREDENTIALS);
  return { broker, osb, plans: await samplePlans(osb) };
}
