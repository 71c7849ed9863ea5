/**
 * REAL Argo CD for tests: the one binary of github.com/argoproj/argo-cd/v3 (cmd/main.go, built by
 * scripts/build-test-tools.sh, ADR 0035) run as argocd-repo-server, argocd-application-controller,
 * argocd-applicationset-controller and argocd-server (whose /api/webhook takes a Git host's push
 * events), with Debian's redis-server, as processes against a real kube-apiserver (real-kube.ts):
 * no Deployment, every listener on loopback and a free port, each program picked by the name it
 * is started under (a symbolic link, as Argo CD's image does). The repo-server runs git against
 * the tests' remotes over smart HTTP on loopback.
 *
 *   await kube.installCrds(argoCdCrdFiles());
 *   const argocd = await startArgoCd(kube, { webhookSecret });
 *   ...
 *   await argocd.close();
 *
 * A failing test's message has the last lines of each program (`logs()`); with
 * GITOPS_BROKER_ARGOCD_LOGS=<dir>, close() also writes each program's whole log to <dir>/<name>.log.
 *
 * Its settings are the defaults of a `kubectl apply` install (argocd-cm with no data, so
 * timeout.reconciliation is 180 s, unless `reconciliation` says otherwise), plus what
 * examples/argocd/README.md has a user add: the destination cluster (the real kube-apiserver,
 * registered as `local`, the cluster id of examples/registry/clusters/local.yaml) and the
 * repository credentials.
 */
import { randomBytes } from "node:crypto";
import { chmod, copyFile, mkdir, symlink, writeFile } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { parse } from "yaml";
import { freePort, startProcess, trackedTempDir, waitUntil, type TrackedProcess } from "./processes.js";
import type { KubeObject, RealKube } from "./real-kube.js";
import { testTool } from "./test-tools.js";

export const ARGOCD_NAMESPACE = "argocd";

/** The CRDs of Argo CD, from the module its binary is built from. */
export function argoCdCrdFiles(): string[] {
  return ["application-crd.yaml", "applicationset-crd.yaml", "appproject-crd.yaml"].map((file) => path.join(testTool("crds"), file));
}

export interface RealArgoCd {
  /** http://127.0.0.1:<port>/api/webhook of argocd-server. */
  readonly webhookUrl: string;
  readonly processes: Readonly<Record<string, TrackedProcess>>;
  /** The last lines each program wrote, for a failing test's message. */
  logs(): string;
  close(): Promise<void>;
}

export interface ArgoCdOptions {
  /** webhook.github.secret in argocd-secret (a push event's X-Hub-Signature-256 is checked with it). */
  webhookSecret?: string;
  /** timeout.reconciliation of argocd-cm (default: none, Argo CD's 180 s). */
  reconciliation?: string;
  /** The cluster name the destination is registered under (default `local`). */
  clusterName?: string;
}

async function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** Starts one program; resolves once `ready` holds, rejects with its log if it exits first. */
async function start(name: string, command: string, args: string[], env: NodeJS.ProcessEnv, ready: () => Promise<boolean>): Promise<TrackedProcess> {
  const p = startProcess(command, args, { env, keepOutput: false });
  const outcome = await Promise.race([
    waitUntil(ready, `${name} ready`, { intervalMs: 200 }).then(() => "ready" as const),
    p.exited.then(() => "exited" as const),
  ]);
  if (outcome === "exited") throw new Error(`${name} exited before it was ready: ${p.stderr().slice(-3000)}`);
  return p;
}

const httpOk = (url: string) => async () => {
  try {
    return (await fetch(url)).ok;
  } catch {
    return false;
  }
};

/** The settings objects in the argocd namespace, the destination cluster and nothing else. */
async function applySettings(kube: RealKube, options: ArgoCdOptions): Promise<void> {
  const labels = { "app.kubernetes.io/part-of": "argocd" };
  const stringData = { "server.secretkey": randomBytes(24).toString("base64url"), ...(options.webhookSecret ? { "webhook.github.secret": options.webhookSecret } : {}) };
  const objects: KubeObject[] = [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: ARGOCD_NAMESPACE } },
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "argocd-cm", namespace: ARGOCD_NAMESPACE, labels: { ...labels, "app.kubernetes.io/name": "argocd-cm" } }, data: options.reconciliation ? { "timeout.reconciliation": options.reconciliation } : {} },
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "argocd-rbac-cm", namespace: ARGOCD_NAMESPACE, labels: { ...labels, "app.kubernetes.io/name": "argocd-rbac-cm" } }, data: {} },
    { apiVersion: "v1", kind: "Secret", metadata: { name: "argocd-secret", namespace: ARGOCD_NAMESPACE, labels: { ...labels, "app.kubernetes.io/name": "argocd-secret" } }, type: "Opaque", stringData },
  ];
  // `argocd cluster add <context> --name local`: a cluster Secret with the admin's client certificate.
  const kubeconfig = parse(kube.kubeconfig()) as { clusters: { cluster: Record<string, string> }[]; users: { user: Record<string, string> }[] };
  const { "client-certificate-data": certData, "client-key-data": keyData } = kubeconfig.users[0]!.user;
  const caData = kubeconfig.clusters[0]!.cluster["certificate-authority-data"];
  objects.push({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: `cluster-${options.clusterName ?? "local"}`, namespace: ARGOCD_NAMESPACE, labels: { "argocd.argoproj.io/secret-type": "cluster" } },
    type: "Opaque",
    stringData: { name: options.clusterName ?? "local", server: kube.url, config: JSON.stringify({ tlsClientConfig: { caData, certData, keyData } }) },
  });
  for (const object of objects) await kube.apply(object, "kubectl");
}

/**
 * A repository Secret (`argocd repo add URL --username --password`): the tests' remotes take any
 * credentials.
 */
export function repositorySecret(name: string, url: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: ARGOCD_NAMESPACE, labels: { "argocd.argoproj.io/secret-type": "repository" } },
    type: "Opaque",
    stringData: { type: "git", url, username: "git", password: "read-only-token" },
  };
}

/** Each program's whole log (stderr, where they all write) as <dir>/<name>.log, when `dir` is set. */
async function keepLogs(processes: Readonly<Record<string, TrackedProcess>>, dir: string | undefined): Promise<void> {
  if (dir === undefined || dir === "") return;
  await mkdir(dir, { recursive: true });
  for (const [name, p] of Object.entries(processes)) await writeFile(path.join(dir, `${name}.log`), p.stderr());
}

/** Starts redis-server and Argo CD's four programs as the cluster admin of `kube` (the CRDs of argoCdCrdFiles() installed). */
export async function startArgoCd(kube: RealKube, options: ArgoCdOptions = {}): Promise<RealArgoCd> {
  await applySettings(kube, options);
  const dir = await trackedTempDir("real-argocd-");
  const bin = path.join(dir, "bin");
  await mkdir(bin);
  const programs = ["argocd", "argocd-repo-server", "argocd-application-controller", "argocd-applicationset-controller", "argocd-server"];
  for (const name of programs) await symlink(testTool("argocd"), path.join(bin, name));
  // The repo-server runs it for every commit (the image has it on its PATH; from the same module).
  await copyFile(path.join(testTool("crds"), "git-verify-wrapper.sh"), path.join(bin, "git-verify-wrapper.sh"));
  await chmod(path.join(bin, "git-verify-wrapper.sh"), 0o755);
  const kubeconfig = path.join(dir, "kubeconfig");
  await writeFile(kubeconfig, kube.kubeconfig(), { mode: 0o600 });
  const tmp = path.join(dir, "tmp");
  for (const sub of ["tmp", "gnupg", "tls", "ssh"]) await mkdir(path.join(dir, sub), { mode: 0o700 });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    // git's askpass helper is `argocd` on the PATH; its socket, the checkouts and GnuPG below `dir`.
    PATH: `${bin}:${process.env.PATH ?? ""}`,
    TMPDIR: tmp,
    ARGOCD_ASK_PASS_SOCK: path.join(dir, "askpass.sock"),
    ARGOCD_GPG_ENABLED: "false",
    ARGOCD_GNUPGHOME: path.join(dir, "gnupg"),
    ARGOCD_TLS_DATA_PATH: path.join(dir, "tls"),
    ARGOCD_SSH_DATA_PATH: path.join(dir, "ssh"),
    HOME: dir,
    // The ApplicationSet controller takes its cluster from controller-runtime, which reads KUBECONFIG.
    KUBECONFIG: kubeconfig,
  };
  const processes: Record<string, TrackedProcess> = {};
  try {
    const redisPort = await freePort();
    processes.redis = await start("redis-server", "redis-server", ["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], env, () => listening(redisPort));
    const redis = `127.0.0.1:${redisPort}`;
    const [repoPort, repoMetrics] = [await freePort(), await freePort()];
    processes.repoServer = await start("argocd-repo-server", path.join(bin, "argocd-repo-server"), [
      "--address", "127.0.0.1", "--port", String(repoPort), "--metrics-address", "127.0.0.1", "--metrics-port", String(repoMetrics),
      // Plain gRPC on loopback; its default client CA path is the image's.
      "--disable-tls", "--client-ca-path=", "--redis", redis, "--loglevel", "info",
    ], env, httpOk(`http://127.0.0.1:${repoMetrics}/healthz`));
    const repoServer = ["--repo-server", `127.0.0.1:${repoPort}`, "--repo-server-plaintext"];
    const cluster = ["--kubeconfig", kubeconfig, "--namespace", ARGOCD_NAMESPACE];
    const controllerMetrics = await freePort();
    processes.applicationController = await start("argocd-application-controller", path.join(bin, "argocd-application-controller"), [
      ...cluster, ...repoServer, "--redis", redis, "--metrics-port", String(controllerMetrics), "--loglevel", "info",
    ], env, httpOk(`http://127.0.0.1:${controllerMetrics}/healthz`));
    const [appsetMetrics, appsetProbe, appsetWebhook] = [await freePort(), await freePort(), await freePort()];
    processes.applicationSetController = await start("argocd-applicationset-controller", path.join(bin, "argocd-applicationset-controller"), [
      ...cluster, "--argocd-repo-server", `127.0.0.1:${repoPort}`, "--repo-server-plaintext",
      "--metrics-addr", `127.0.0.1:${appsetMetrics}`, "--probe-addr", `127.0.0.1:${appsetProbe}`, "--webhook-addr", `127.0.0.1:${appsetWebhook}`,
      "--enable-leader-election=false", "--loglevel", "info",
    // It registers no health check on its probe address: its metrics answering is its start.
    ], env, httpOk(`http://127.0.0.1:${appsetMetrics}/metrics`));
    const [serverPort, serverMetrics] = [await freePort(), await freePort()];
    processes.server = await start("argocd-server", path.join(bin, "argocd-server"), [
      ...cluster, ...repoServer, "--redis", redis, "--insecure", "--address", "127.0.0.1", "--port", String(serverPort), "--metrics-port", String(serverMetrics),
      "--staticassets", dir, "--loglevel", "info",
    ], env, httpOk(`http://127.0.0.1:${serverPort}/healthz`));
    const tail = (p: TrackedProcess) => p.stderr().split("\n").slice(-30).join("\n");
    return {
      webhookUrl: `http://127.0.0.1:${serverPort}/api/webhook`,
      processes,
      logs: () => Object.entries(processes).map(([name, p]) => `${name}:\n${tail(p)}`).join("\n"),
      async close() {
        await Promise.all(Object.values(processes).map((p) => p.killGroup()));
        await keepLogs(processes, process.env.GITOPS_BROKER_ARGOCD_LOGS);
      },
    };
  } catch (error) {
    await Promise.all(Object.values(processes).map((p) => p.killGroup()));
    throw error;
  }
}
