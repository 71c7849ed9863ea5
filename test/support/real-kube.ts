/**
 * A REAL Kubernetes control plane for tests: kube-apiserver and etcd, built from their Go modules
 * (scripts/build-test-tools.sh, ADR 0022), started on loopback with certificates made here with
 * the openssl CLI. Not a double: discovery, watch caches, bookmarks, 410 after compaction, CRD
 * validation, status subresources, TokenRequest and RBAC are Kubernetes' own.
 *
 *   const kube = await startRealKube();
 *   await kube.installCrds([...]);                          // created, then Established
 *   await kube.apply(object, "argocd-controller");          // server-side apply as cluster admin
 *   const token = await kube.tokenFor("ns", "sa");           // TokenRequest: a bound SA token
 *   kube.kubeconfig({ token });                             // kubeconfig YAML for that identity
 *   await kube.compactEtcd(); await kube.restartApiServer();
 *   await kube.startControllerManager();                    // the real garbage collector (ADR 0031)
 *   await kube.createMany(objects, { concurrency: 16 });      // thousands of objects, status included
 *   await kube.listAll("/api/v1/secrets");                  // every page, following `continue`
 *   await kube.close();
 *
 * What stays with the double (test/support/kube-api-server.ts): what a real server cannot do on
 * demand: injected faults (429/503 answers, dropped watch sockets, a listener that stops
 * answering). kube-controller-manager runs only when a test starts it, with two controllers: the
 * garbage collector and the namespace controller (owner references, finalizers `orphan` and
 * `foregroundDeletion`, a deleted Namespace emptied). No other controller runs: no Deployment ever
 * becomes ready, ServiceAccount tokens exist only by TokenRequest.
 */
import { readFile, writeFile } from "node:fs/promises";
import type { ClientRequest } from "node:http";
import https from "node:https";
import path from "node:path";
import { createInterface } from "node:readline";
import { KubeConfig } from "@kubernetes/client-node";
import { parseAllDocuments, stringify } from "yaml";
import { freePort, EVENT_CEILING_MS, runProcess, startProcess, trackedTempDir, waitUntil, type TrackedProcess } from "./processes.js";
import { testTool } from "./test-tools.js";

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
}

export interface KubeResponse {
  status: number;
  body: Record<string, unknown>;
}

export interface RealKube {
  /** https://127.0.0.1:<port> */
  readonly url: string;
  /** `kube-apiserver --version`'s version, e.g. v1.37.2. */
  readonly version: string;
  /** Kubeconfig YAML: the cluster admin (a client certificate of group system:masters), or a bearer token. */
  kubeconfig(user?: { token: string }): string;
  /** A client-node KubeConfig of the cluster admin. */
  admin(): KubeConfig;
  /** One request as the cluster admin (or as the bearer of `token`); JSON in, JSON out. */
  request(method: string, urlPath: string, body?: unknown, options?: { contentType?: string; token?: string }): Promise<KubeResponse>;
  /** Server-side apply (force) as the cluster admin under `fieldManager`; resolves with the stored object. */
  apply(object: KubeObject, fieldManager?: string): Promise<KubeObject>;
  /** Merge-patches the object's status subresource, as an operator or agent writes it. */
  patchStatus(object: Pick<KubeObject, "apiVersion" | "kind" | "metadata">, status: Record<string, unknown>): Promise<KubeObject>;
  /** Deletes the object as the cluster admin; an object already gone is no error. */
  delete(object: Pick<KubeObject, "apiVersion" | "kind" | "metadata">): Promise<void>;
  /** Creates the CRDs of these YAML files and waits until each is Established. */
  installCrds(files: readonly string[]): Promise<void>;
  /** A token of the ServiceAccount (TokenRequest API), which must exist. */
  tokenFor(namespace: string, serviceAccount: string): Promise<string>;
  /** Compacts etcd at its current revision (what kube-apiserver does every 5 minutes): older watches get 410. */
  compactEtcd(): Promise<number>;
  /** Kills kube-apiserver (-9) and starts it again on the same port and etcd. */
  restartApiServer(): Promise<void>;
  /** How long the last kube-apiserver start took until /readyz answered ok. */
  readonly lastStartMs: number;
  /**
   * Starts kube-controller-manager (built from the same Kubernetes release) with the garbage
   * collector and the namespace controller, and resolves once the collector collects (an owned
   * ConfigMap of a deleted owner is gone). The collector learns the kinds discovery serves when
   * it starts and every 30 s after: install the CRDs first. Stopped by `close()`.
   */
  startControllerManager(): Promise<void>;
  /**
   * Waits until the collector has worked through what was queued before this call: a canary
   * owner is deleted (propagationPolicy Background) and its dependent must be gone. Its queues are
   * worked by several workers, so this is a barrier by order of arrival, not a proof.
   */
  collectorBarrier(): Promise<void>;
  /**
   * Creates the objects (POST) with `concurrency` requests at a time on kept-alive connections,
   * each then with its `status` through the status subresource when it has one; resolves with
   * the stored objects in the order given. The first failure rejects (after the requests in flight).
   */
  createMany(objects: readonly KubeObject[], options?: { concurrency?: number }): Promise<KubeObject[]>;
  /** Every item of a list (`/api/...` or `/apis/...` path), in pages of `limit`, following `metadata.continue` to the end. */
  listAll(urlPath: string, options?: { limit?: number }): Promise<KubeObject[]>;
  /**
   * Watches a collection (`?watch=1` is added): `onEvent` gets each event as it comes.
   * `stop()` ends it; it also ends with `close()`.
   */
  watch(urlPath: string, onEvent: (event: { type: string; object: KubeObject }) => void): { stop(): void };
  /** The path of `object` (its plural from discovery). */
  pathOf(object: Pick<KubeObject, "apiVersion" | "kind" | "metadata">): Promise<string>;
  close(): Promise<void>;
}

interface Pki {
  ca: Buffer;
  adminCert: Buffer;
  adminKey: Buffer;
  /** kube-controller-manager's client certificate: its own name, in group system:masters. */
  controllerManagerCert: Buffer;
  controllerManagerKey: Buffer;
  files: { ca: string; caKey: string; serving: string; servingKey: string; saKey: string; saPub: string };
}

/** A CA, the server's certificate for 127.0.0.1, the admin's client certificate and the service-account key pair. */
async function makePki(dir: string): Promise<Pki> {
  const openssl = async (...args: string[]) => {
    const { code, stderr } = await runProcess("openssl", args, { cwd: dir, ceilingMs: EVENT_CEILING_MS });
    if (code !== 0) throw new Error(`openssl ${args.join(" ")} exited ${String(code)}: ${stderr}`);
  };
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  await openssl("req", "-x509", ...ec, "-days", "2", "-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=gitops-broker-test-ca",
    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign");
  const issue = async (name: string, subject: string, ext: string) => {
    await openssl("req", "-new", ...ec, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", subject);
    await writeFile(path.join(dir, `${name}.ext`), ext);
    await openssl("x509", "-req", "-in", `${name}.csr`, "-CA", "ca.crt", "-CAkey", "ca.key", "-set_serial", String(Date.now()), "-days", "2",
      "-out", `${name}.crt`, "-extfile", `${name}.ext`);
  };
  await issue("serving", "/CN=kube-apiserver", "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n");
  // Group system:masters: bound to cluster-admin by the API server's bootstrap policy.
  await issue("admin", "/O=system:masters/CN=test-admin", "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n");
  // With --use-service-account-credentials=false every controller acts as this one user.
  await issue("controller-manager", "/O=system:masters/CN=system:kube-controller-manager", "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n");
  await openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "sa.key");
  await openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub");
  const read = (name: string) => readFile(path.join(dir, name));
  return {
    ca: await read("ca.crt"),
    adminCert: await read("admin.crt"),
    adminKey: await read("admin.key"),
    controllerManagerCert: await read("controller-manager.crt"),
    controllerManagerKey: await read("controller-manager.key"),
    files: Object.fromEntries(
      Object.entries({ ca: "ca.crt", caKey: "ca.key", serving: "serving.crt", servingKey: "serving.key", saKey: "sa.key", saPub: "sa.pub" }).map(([k, v]) => [k, path.join(dir, v)]),
    ) as Pki["files"],
  };
}

/** POST to etcd's JSON gateway (`/v3/...`). */
async function etcdCall(clientUrl: string, api: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${clientUrl}/v3/${api}`, { method: "POST", body: JSON.stringify(body) });
  const json = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new Error(`etcd ${api}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** Starts etcd on free loopback ports, retrying when another process took a port first. */
async function startEtcd(dir: string): Promise<{ process: TrackedProcess; clientUrl: string }> {
  for (let attempt = 1; ; attempt++) {
    const [client, peer] = [await freePort(), await freePort()];
    const clientUrl = `http://127.0.0.1:${client}`;
    const peerUrl = `http://127.0.0.1:${peer}`;
    const etcd = startProcess(testTool("etcd"), [
      "--name", "test", "--data-dir", path.join(dir, `etcd-${attempt}`),
      "--listen-client-urls", clientUrl, "--advertise-client-urls", clientUrl,
      "--listen-peer-urls", peerUrl, "--initial-advertise-peer-urls", peerUrl, "--initial-cluster", `test=${peerUrl}`,
      // A test's data: no fsync (as envtest's etcd runs), a quiet log.
      "--unsafe-no-fsync", "--log-level", "warn",
    ], { keepOutput: false });
    const healthy = async () => {
      try {
        const res = await fetch(`${clientUrl}/health`);
        return res.ok && ((await res.json()) as { health?: string }).health === "true";
      } catch {
        return false;
      }
    };
    const outcome = await Promise.race([
      waitUntil(healthy, "etcd /health", { intervalMs: 50 }).then(() => "ready" as const),
      etcd.exited.then(() => "exited" as const),
    ]);
    if (outcome === "ready") return { process: etcd, clientUrl };
    if (attempt >= 3 || !/address already in use/.test(etcd.stderr())) throw new Error(`etcd exited before it was healthy: ${etcd.stderr().slice(-2000)}`);
  }
}

export async function startRealKube(): Promise<RealKube> {
  const dir = await trackedTempDir("real-kube-");
  const pki = await makePki(dir);
  const etcd = await startEtcd(dir);
  let port = await freePort();
  const url = () => `https://127.0.0.1:${port}`;
  let apiserver: TrackedProcess | undefined;
  let lastStartMs = 0;

  /** One request; `agent` keeps connections alive across requests (the admin's credentials in it). */
  const send = (method: string, urlPath: string, body: unknown, options: { contentType?: string; token?: string } = {}, agent?: https.Agent): Promise<KubeResponse> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const req = https.request(
        {
          host: "127.0.0.1",
          port,
          path: urlPath,
          method,
          ca: pki.ca,
          ...(options.token === undefined ? { cert: pki.adminCert, key: pki.adminKey } : {}),
          headers: {
            accept: "application/json",
            ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
            ...(payload === undefined ? {} : { "content-type": options.contentType ?? "application/json", "content-length": payload.length }),
          },
          agent: agent ?? false,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            let parsed: Record<string, unknown>;
            try {
              parsed = JSON.parse(text) as Record<string, unknown>;
            } catch {
              parsed = { text };
            }
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
        },
      );
      req.on("error", reject);
      req.end(payload);
    });
  const request: RealKube["request"] = (method, urlPath, body, options) => send(method, urlPath, body, options);

  async function startApiServer(): Promise<void> {
    const started = performance.now();
    for (let attempt = 1; ; attempt++) {
      const p = startProcess(testTool("kube-apiserver"), [
        "--etcd-servers", etcd.clientUrl,
        "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", String(port),
        "--tls-cert-file", pki.files.serving, "--tls-private-key-file", pki.files.servingKey,
        "--client-ca-file", pki.files.ca,
        "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
        "--service-account-key-file", pki.files.saPub, "--service-account-signing-key-file", pki.files.saKey,
        "--service-cluster-ip-range", "10.0.0.0/24",
        "--authorization-mode", "RBAC",
        // No controller-manager runs: the ServiceAccount admission plugin would wait for tokens it never makes.
        "--disable-admission-plugins", "ServiceAccount",
        // The tests compact etcd themselves (compactEtcd), when they mean to.
        "--etcd-compaction-interval", "0",
        "--endpoint-reconciler-type", "none",
        "--profiling=false",
        "--v", "0",
      ], { keepOutput: false });
      apiserver = p;
      const ready = async () => {
        try {
          const res = await request("GET", "/readyz");
          return res.status === 200;
        } catch {
          return false;
        }
      };
      const outcome = await Promise.race([
        waitUntil(ready, "kube-apiserver /readyz", { intervalMs: 100 }).then(() => "ready" as const),
        p.exited.then(() => "exited" as const),
      ]);
      if (outcome === "ready") break;
      if (attempt >= 3 || !/address already in use/.test(p.stderr())) throw new Error(`kube-apiserver exited before it was ready: ${p.stderr().slice(-3000)}`);
      port = await freePort();
    }
    lastStartMs = performance.now() - started;
  }

  await startApiServer();
  const version = String(((await request("GET", "/version")).body as { gitVersion?: string }).gitVersion);

  const kubeconfigOf = (user: Record<string, string>) =>
    stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "real", cluster: { server: url(), "certificate-authority-data": pki.ca.toString("base64") } }],
      users: [{ name: "user", user }],
      contexts: [{ name: "real", context: { cluster: "real", user: "user", namespace: "default" } }],
      "current-context": "real",
    });
  const kubeconfig: RealKube["kubeconfig"] = (user) =>
    kubeconfigOf(user === undefined ? { "client-certificate-data": pki.adminCert.toString("base64"), "client-key-data": pki.adminKey.toString("base64") } : { token: user.token });

  const expectOk = (what: string, res: KubeResponse): Record<string, unknown> => {
    if (res.status < 200 || res.status > 299) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };

  const resourcePath = (object: Pick<KubeObject, "apiVersion" | "metadata">, plural: string) => {
    const base = object.apiVersion.includes("/") ? `/apis/${object.apiVersion}` : `/api/${object.apiVersion}`;
    const ns = object.metadata.namespace === undefined ? "" : `/namespaces/${object.metadata.namespace}`;
    return `${base}${ns}/${plural}/${object.metadata.name}`;
  };

  /** The plural of a kind, from discovery (cached per apiVersion). */
  const plurals = new Map<string, Map<string, string>>();
  async function pluralOf(apiVersion: string, kind: string): Promise<string> {
    let kinds = plurals.get(apiVersion);
    if (kinds === undefined) {
      const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
      const list = expectOk(`discovery of ${apiVersion}`, await request("GET", base)) as { resources: { name: string; kind: string }[] };
      kinds = new Map(list.resources.filter((r) => !r.name.includes("/")).map((r) => [r.kind, r.name]));
      plurals.set(apiVersion, kinds);
    }
    const plural = kinds.get(kind);
    if (plural === undefined) throw new Error(`${apiVersion} serves no kind ${kind}`);
    return plural;
  }

  const controllerManager = realControllerManager({
    dir,
    kubeconfig: () => kubeconfigOf({ "client-certificate-data": pki.controllerManagerCert.toString("base64"), "client-key-data": pki.controllerManagerKey.toString("base64") }),
    request,
  });
  const pathOf = async (object: Pick<KubeObject, "apiVersion" | "kind" | "metadata">) => resourcePath(object, await pluralOf(object.apiVersion, object.kind));
  const watches = new Set<ClientRequest>();

  return {
    get url() {
      return url();
    },
    version,
    get lastStartMs() {
      return lastStartMs;
    },
    kubeconfig,
    admin() {
      const kc = new KubeConfig();
      kc.loadFromString(kubeconfig());
      return kc;
    },
    request,
    async apply(object, fieldManager = "test") {
      const target = resourcePath(object, await pluralOf(object.apiVersion, object.kind));
      const res = await request("PATCH", `${target}?fieldManager=${encodeURIComponent(fieldManager)}&force=true`, object, { contentType: "application/apply-patch+yaml" });
      return expectOk(`apply ${object.kind} ${object.metadata.name}`, res) as KubeObject;
    },
    async patchStatus(object, status) {
      const target = resourcePath(object, await pluralOf(object.apiVersion, object.kind));
      const res = await request("PATCH", `${target}/status`, { status }, { contentType: "application/merge-patch+json" });
      return expectOk(`status of ${object.kind} ${object.metadata.name}`, res) as KubeObject;
    },
    async delete(object) {
      const res = await request("DELETE", resourcePath(object, await pluralOf(object.apiVersion, object.kind)));
      if (res.status !== 404) expectOk(`delete ${object.kind} ${object.metadata.name}`, res);
    },
    async installCrds(files) {
      const crds: KubeObject[] = [];
      for (const file of files) {
        for (const doc of parseAllDocuments(await readFile(file, "utf8"))) {
          const crd = doc.toJSON() as KubeObject | null;
          if (crd?.kind === "CustomResourceDefinition") crds.push(crd);
        }
      }
      for (const crd of crds) expectOk(`create CRD ${crd.metadata.name}`, await request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd));
      for (const crd of crds) {
        await waitUntil(async () => {
          const res = await request("GET", `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`);
          const conditions = ((res.body.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? []);
          return conditions.some((c) => c.type === "Established" && c.status === "True");
        }, `CRD ${crd.metadata.name} Established`, { intervalMs: 50 });
      }
      // Discovery of the new groups is served a moment after Established.
      for (const crd of crds) {
        const spec = crd.spec as { group: string; versions: { name: string; served: boolean }[] };
        for (const v of spec.versions.filter((x) => x.served)) {
          await waitUntil(async () => (await request("GET", `/apis/${spec.group}/${v.name}`)).status === 200, `discovery of ${spec.group}/${v.name}`, { intervalMs: 50 });
        }
      }
    },
    async tokenFor(namespace, serviceAccount) {
      const res = await request("POST", `/api/v1/namespaces/${namespace}/serviceaccounts/${serviceAccount}/token`, {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: { expirationSeconds: 3600 },
      });
      return (expectOk(`token for ${namespace}/${serviceAccount}`, res).status as { token: string }).token;
    },
    async compactEtcd() {
      const range = await etcdCall(etcd.clientUrl, "kv/range", { key: Buffer.from("/").toString("base64") });
      const revision = Number((range.header as { revision: string }).revision);
      await etcdCall(etcd.clientUrl, "kv/compaction", { revision: String(revision), physical: true });
      return revision;
    },
    async restartApiServer() {
      // Killed, as a crashed or evicted API server goes: a graceful stop waits up to a minute for
      // the watches it serves (60 s here), which says nothing more about the clients.
      const before = port;
      await apiserver?.killGroup();
      await startApiServer();
      // Another port (the old one was taken meanwhile): the controller manager's kubeconfig names it.
      if (port !== before) await controllerManager.restart();
    },
    startControllerManager: () => controllerManager.start(),
    collectorBarrier: () => controllerManager.barrier(),
    pathOf,
    async createMany(objects, { concurrency = 16 } = {}) {
      const agent = new https.Agent({ keepAlive: true, maxSockets: concurrency, ca: pki.ca, cert: pki.adminCert, key: pki.adminKey });
      try {
        return await inPool(objects, concurrency, async (object) => {
          const { status, ...rest } = object;
          const target = await pathOf(object);
          const created = expectOk(`create ${object.kind} ${object.metadata.name}`, await send("POST", target.slice(0, target.lastIndexOf("/")), rest, {}, agent)) as KubeObject;
          if (status === undefined) return created;
          const res = await send("PATCH", `${target}/status`, { status }, { contentType: "application/merge-patch+json" }, agent);
          // A kind without a status subresource kept its status with the create.
          return res.status === 404 ? created : (expectOk(`status of ${object.kind} ${object.metadata.name}`, res) as KubeObject);
        });
      } finally {
        agent.destroy();
      }
    },
    async listAll(urlPath, { limit = 500 } = {}) {
      const items: KubeObject[] = [];
      let token = "";
      do {
        const query = `limit=${limit}${token === "" ? "" : `&continue=${encodeURIComponent(token)}`}`;
        const page = expectOk(`list ${urlPath}`, await request("GET", `${urlPath}${urlPath.includes("?") ? "&" : "?"}${query}`)) as { items: KubeObject[]; metadata?: { continue?: string } };
        items.push(...page.items);
        token = page.metadata?.continue ?? "";
      } while (token !== "");
      return items;
    },
    watch(urlPath, onEvent) {
      const req = https.request({
        host: "127.0.0.1",
        port,
        path: `${urlPath}${urlPath.includes("?") ? "&" : "?"}watch=1`,
        ca: pki.ca,
        cert: pki.adminCert,
        key: pki.adminKey,
        headers: { accept: "application/json" },
        agent: false,
      });
      watches.add(req);
      req.on("response", (res) => {
        // Stopped: the response is aborted, and readline passes its input's error on.
        res.on("error", () => undefined);
        const lines = createInterface({ input: res });
        lines.on("error", () => undefined);
        lines.on("line", (line) => {
          if (line.trim() !== "") onEvent(JSON.parse(line) as { type: string; object: KubeObject });
        });
      });
      req.on("error", () => undefined); // stopped, or the server went: the test sees no more events
      req.end();
      return {
        stop() {
          watches.delete(req);
          req.destroy();
        },
      };
    },
    async close() {
      for (const req of watches) req.destroy();
      await controllerManager.stop();
      await apiserver?.killGroup();
      await etcd.process.killGroup();
    },
  };
}

/** Runs `fn` over `items`, `concurrency` at a time; results in the order of `items`. The first failure rejects once the calls in flight are done. */
async function inPool<T, R>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (failure === undefined && next < items.length) {
      const i = next++;
      try {
        out[i] = await fn(items[i]!);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, worker));
  if (failure !== undefined) throw failure.error;
  return out;
}

/**
 * kube-controller-manager with the garbage collector and the namespace controller only, as its
 * own user (`system:kube-controller-manager`, group system:masters): leader election off, no
 * serving port (`--secure-port 0`), the controllers with the manager's credentials instead of
 * per-controller ServiceAccounts (no token controller runs), and a request budget above the
 * default 20/s so that thousands of orphaning deletes are worked through in seconds.
 */
function realControllerManager({ dir, kubeconfig, request }: { dir: string; kubeconfig: () => string; request: RealKube["request"] }) {
  let child: TrackedProcess | undefined;
  let canaries = 0;
  const expect2xx = (what: string, res: KubeResponse) => {
    if (res.status < 200 || res.status > 299) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  /** An owner and its dependent (ConfigMaps in `default`); the owner deleted in the background; resolves when the collector deleted the dependent. */
  const barrier = async () => {
    const name = `gc-canary-${++canaries}`;
    const base = "/api/v1/namespaces/default/configmaps";
    const owner = expect2xx("create the collector's canary", await request("POST", base, { apiVersion: "v1", kind: "ConfigMap", metadata: { name } })) as KubeObject;
    const uid = String(owner.metadata.uid);
    expect2xx("create the canary's dependent", await request("POST", base, { apiVersion: "v1", kind: "ConfigMap", metadata: { name: `${name}-dependent`, ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name, uid }] } }));
    expect2xx("delete the canary", await request("DELETE", `${base}/${name}`, { apiVersion: "v1", kind: "DeleteOptions", propagationPolicy: "Background" }));
    const running = child;
    let settled = false;
    const gone = waitUntil(async () => settled || (await request("GET", `${base}/${name}-dependent`)).status === 404, "the garbage collector deleting a dependent of a deleted owner", { intervalMs: 100 });
    const outcome = await Promise.race([gone.then(() => "collected" as const), ...(running ? [running.exited.then(() => "exited" as const)] : [])]).finally(() => (settled = true));
    if (outcome === "exited") throw new Error(`kube-controller-manager exited: ${running?.stderr().slice(-3000) ?? ""}`);
  };
  const start = async () => {
    if (child !== undefined) return;
    const file = path.join(dir, "controller-manager.kubeconfig");
    await writeFile(file, kubeconfig(), { mode: 0o600 });
    child = startProcess(testTool("kube-controller-manager"), [
      "--kubeconfig", file,
      // Canonical names (aliases: garbagecollector, namespace).
      "--controllers", "garbage-collector-controller,namespace-controller",
      "--leader-elect=false",
      "--use-service-account-credentials=false",
      "--bind-address", "127.0.0.1", "--secure-port", "0",
      "--kube-api-qps", "500", "--kube-api-burst", "1000",
      "--v", "0",
    ], { keepOutput: false });
    await barrier();
  };
  const stop = async () => {
    const p = child;
    child = undefined;
    await p?.killGroup();
  };
  return {
    start,
    stop,
    barrier: async () => {
      if (child === undefined) throw new Error("no kube-controller-manager runs: startControllerManager() first");
      await barrier();
    },
    async restart() {
      if (child === undefined) return;
      await stop();
      await start();
    },
  };
}

/**
 * The objects `helm template RELEASE CHART --namespace NAMESPACE --set ... --show-only ...` renders
 * (Helm itself, testTool("helm")), each with its namespace (NAMESPACE where the template sets none),
 * ready for `apply`.
 */
export async function helmTemplateObjects(
  chart: string,
  { release, namespace, templates, sets }: { release: string; namespace: string; templates: readonly string[]; sets: readonly string[] },
): Promise<KubeObject[]> {
  const args = ["template", release, chart, "--namespace", namespace, ...sets.flatMap((s) => ["--set", s]), ...templates.flatMap((t) => ["--show-only", t])];
  const { code, stdout, stderr } = await runProcess(testTool("helm"), args, { ceilingMs: EVENT_CEILING_MS });
  if (code !== 0) throw new Error(`helm ${args.join(" ")}: ${stderr}`);
  return parseAllDocuments(stdout)
    .map((d) => d.toJSON() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null)
    .map((o) => ({ ...o, metadata: { ...o.metadata, namespace: o.metadata.namespace ?? namespace } }));
}
