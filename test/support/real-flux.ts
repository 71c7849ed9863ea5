/**
 * REAL Flux for tests: source-controller and kustomize-controller, built from their Go modules
 * (scripts/build-test-tools.sh, ADR 0035), run as processes against a real kube-apiserver
 * (real-kube.ts), as a cluster runs them, but without a Deployment: leader election off, every
 * address on loopback and a free port, source-controller's artifact server advertised as
 * 127.0.0.1:<port> (`--storage-adv-addr`), which is where kustomize-controller downloads the
 * artifacts from. They reach the tests' Git remotes over smart HTTP on loopback
 * (git-http-server.ts) exactly as a cluster reaches a Git host.
 *
 *   await kube.installCrds(fluxCrdFiles());
 *   const flux = await startFlux(kube);
 *   ...
 *   await flux.close();
 *
 * What is not here: notification-controller (the Receiver) and source-watcher (the
 * ArtifactGenerator), whose modules the Go module proxy refuses (ADR 0035); flux-receiver.ts
 * stands in for the Receiver.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { parseAllDocuments } from "yaml";
import { freePort, startProcess, trackedTempDir, waitUntil, type TrackedProcess } from "./processes.js";
import type { KubeObject, RealKube } from "./real-kube.js";
import { testTool } from "./test-tools.js";

/** The CRDs of source- and kustomize-controller, from the modules they are built from. */
export function fluxCrdFiles(): string[] {
  const crds = testTool("crds");
  const source = ["buckets", "externalartifacts", "gitrepositories", "helmcharts", "helmrepositories", "ocirepositories"].map((kind) => `source.toolkit.fluxcd.io_${kind}.yaml`);
  return [...source, "kustomize.toolkit.fluxcd.io_kustomizations.yaml"].map((file) => path.join(crds, file));
}

export interface RealFlux {
  /** The artifact server of source-controller, http://127.0.0.1:<port>. */
  readonly storageUrl: string;
  readonly sourceController: TrackedProcess;
  readonly kustomizeController: TrackedProcess;
  /** The last lines both wrote (their logs go to stderr), for a failing test's message. */
  logs(): string;
  close(): Promise<void>;
}

/** The flags every Flux controller takes here: loopback addresses, no leader election, JSON logs. */
function commonFlags(metrics: number, health: number): string[] {
  return [
    `--metrics-addr=127.0.0.1:${metrics}`,
    `--health-addr=127.0.0.1:${health}`,
    "--enable-leader-election=false",
    // No notification-controller to send events to.
    "--events-addr=",
    "--log-level=info",
    "--log-encoding=json",
  ];
}

/**
 * Starts `tool` with the flags `flags(ports)` on fresh free ports until its /readyz answers,
 * retrying (up to three times) when another process took a port between the probe and the bind.
 */
async function startController(
  tool: "source-controller" | "kustomize-controller",
  env: NodeJS.ProcessEnv,
  flags: (port: () => Promise<number>) => Promise<string[]>,
): Promise<TrackedProcess> {
  for (let attempt = 1; ; attempt++) {
    const [metrics, health] = [await freePort(), await freePort()];
    const p = startProcess(testTool(tool), [...commonFlags(metrics, health), ...(await flags(freePort))], { env, keepOutput: false });
    const ready = async () => {
      try {
        return (await fetch(`http://127.0.0.1:${health}/readyz`)).ok;
      } catch {
        return false;
      }
    };
    const outcome = await Promise.race([
      waitUntil(ready, `${tool} /readyz`, { intervalMs: 100 }).then(() => "ready" as const),
      p.exited.then(() => "exited" as const),
    ]);
    if (outcome === "ready") return p;
    if (attempt >= 3 || !/address already in use/.test(p.stderr())) throw new Error(`${tool} exited before it was ready: ${p.stderr().slice(-3000)}`);
  }
}

/**
 * Starts source-controller and kustomize-controller as the cluster admin of `kube` (the CRDs of
 * fluxCrdFiles() must be installed), watching every namespace.
 */
export async function startFlux(kube: RealKube): Promise<RealFlux> {
  const dir = await trackedTempDir("real-flux-");
  const kubeconfig = path.join(dir, "kubeconfig");
  await writeFile(kubeconfig, kube.kubeconfig(), { mode: 0o600 });
  // controller-runtime reads KUBECONFIG; RUNTIME_NAMESPACE is the controllers' own namespace.
  const env = { ...process.env, KUBECONFIG: kubeconfig, RUNTIME_NAMESPACE: "flux-system" };
  // source-controller refuses a storage path that does not exist.
  const artifacts = path.join(dir, "artifacts");
  await mkdir(artifacts);
  let storageUrl = "";
  const sourceController = await startController("source-controller", env, async (port) => {
    const storage = `127.0.0.1:${await port()}`;
    storageUrl = `http://${storage}`;
    return [`--storage-path=${artifacts}`, `--storage-addr=${storage}`, `--storage-adv-addr=${storage}`];
  });
  let kustomizeController: TrackedProcess;
  try {
    kustomizeController = await startController("kustomize-controller", env, async () => []);
  } catch (error) {
    await sourceController.killGroup();
    throw error;
  }
  const tail = (p: TrackedProcess) => p.stderr().split("\n").slice(-40).join("\n");
  return {
    storageUrl,
    sourceController,
    kustomizeController,
    logs: () => `source-controller:\n${tail(sourceController)}\nkustomize-controller:\n${tail(kustomizeController)}`,
    async close() {
      await Promise.all([sourceController.killGroup(), kustomizeController.killGroup()]);
    },
  };
}

/** The repository URL examples/flux and examples/argocd are written with. */
export const EXAMPLE_REPOSITORY = "https://github.com/example/platform-gitops.git";
const EXAMPLES = path.resolve(import.meta.dirname, "../../examples");

/**
 * The objects of an example file as written (examples/flux/<file>, examples/argocd/<file>), only
 * the repository URL substituted with `repositoryUrl`.
 */
export async function exampleObjects(file: string, repositoryUrl: string): Promise<KubeObject[]> {
  const text = (await readFile(path.join(EXAMPLES, file), "utf8")).replaceAll(EXAMPLE_REPOSITORY, repositoryUrl);
  return parseAllDocuments(text)
    .map((d) => d.toJSON() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null);
}

/**
 * The Git credentials Secret examples/flux/README.md has `flux create secret git` make (keys
 * `username` and `password`); the tests' remote takes any.
 */
export function gitCredentialsSecret(name: string, namespace = "flux-system"): KubeObject {
  return { apiVersion: "v1", kind: "Secret", metadata: { name, namespace }, type: "Opaque", stringData: { username: "git", password: "read-only-token" } };
}

/** A Flux object's Ready condition (undefined before its controller wrote one). */
export function fluxReady(object: { status?: unknown }): { status: string; reason: string; message: string } | undefined {
  const conditions = (object.status as { conditions?: { type: string; status: string; reason: string; message: string }[] } | undefined)?.conditions ?? [];
  return conditions.find((c) => c.type === "Ready");
}
