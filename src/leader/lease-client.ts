import type { KubeConfig } from "@kubernetes/client-node";
import { KubeApiError } from "../errors/index.js";
import { loadClientNode, type ClientNode } from "../kube/index.js";

/** A coordination.k8s.io/v1 Lease, the fields leader election reads and writes. */
export interface Lease {
  apiVersion: "coordination.k8s.io/v1";
  kind: "Lease";
  metadata: { name: string; namespace: string; resourceVersion?: string; [key: string]: unknown };
  spec: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number | null;
    /** RFC 3339 with microseconds (MicroTime). */
    acquireTime?: string | null;
    renewTime?: string | null;
    leaseTransitions?: number | null;
    [key: string]: unknown;
  };
}

/** The three requests leader election makes on its one Lease; the RBAC Role grants these verbs only. */
export interface LeaseClient {
  /** The Lease, or null when there is none. */
  get(): Promise<Lease | null>;
  /** Creates it; null when another replica created it first (409). */
  create(lease: Lease): Promise<Lease | null>;
  /** Replaces it at its resourceVersion; null when it changed meanwhile (409). */
  update(lease: Lease): Promise<Lease | null>;
}

export interface KubeLeaseClientOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  name: string;
  /** Loads @kubernetes/client-node (default: once per process, on first use). */
  clientNode?: () => Promise<ClientNode>;
  /** A request without an answer for this long fails (default 10 s): a hung API server must not hold the leader. */
  timeoutMs?: number;
}

/**
 * The Lease through client-node's HTTP library and the KubeConfig's authentication, as JSON of our
 * own: client-node's generated V1Lease serializer writes MicroTime with milliseconds padded, and
 * the three calls need nothing else from it. 409 is an answer (someone else won), not a failure.
 */
export function createKubeLeaseClient(options: KubeLeaseClientOptions): LeaseClient {
  const { kubeConfig, namespace, name } = options;
  const server = kubeConfig.getCurrentCluster()?.server;
  if (server === undefined) throw new KubeApiError("the kubeconfig for leader election has no current cluster");
  const load = options.clientNode ?? loadClientNode;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const collection = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
  const item = `${collection}/${encodeURIComponent(name)}`;

  async function call(method: "GET" | "POST" | "PUT", path: string, body?: Lease): Promise<{ status: number; lease?: Lease }> {
    const k8s = await load();
    const request = new k8s.RequestContext(`${server}${path}`, k8s.HttpMethod[method]);
    request.setHeaderParam("Accept", "application/json");
    if (body !== undefined) {
      request.setHeaderParam("Content-Type", "application/json");
      request.setBody(JSON.stringify(body));
    }
    request.setSignal(AbortSignal.timeout(timeoutMs));
    await kubeConfig.applySecurityAuthentication(request);
    let status: number;
    let text: string;
    try {
      const response = await new k8s.IsomorphicFetchHttpLibrary().send(request).toPromise();
      status = response.httpStatusCode;
      text = await response.body.text();
    } catch (error) {
      throw new KubeApiError(`${method} Lease ${namespace}/${name}: no answer from the API server`, {}, { cause: error });
    }
    if (status === 200 || status === 201) {
      try {
        return { status, lease: JSON.parse(text) as Lease };
      } catch (error) {
        throw new KubeApiError(`${method} Lease ${namespace}/${name}: the answer is not JSON`, { status }, { cause: error });
      }
    }
    if (status === 404 || status === 409) return { status };
    let reason: string | undefined;
    let message = text.slice(0, 500);
    try {
      const parsed = JSON.parse(text) as { reason?: string; message?: string };
      reason = parsed.reason;
      message = parsed.message ?? message;
    } catch {
      // not a Status: the text as it is
    }
    throw new KubeApiError(`${method} Lease ${namespace}/${name}: ${status} ${message}`, { status, ...(reason ? { reason } : {}) });
  }

  return {
    async get() {
      const { status, lease } = await call("GET", item);
      if (status === 404) return null;
      return lease ?? null;
    },
    async create(lease) {
      const { status, lease: created } = await call("POST", collection, lease);
      if (status === 409) return null;
      if (status === 404) throw new KubeApiError(`POST Lease ${namespace}/${name}: namespace ${namespace} not found`, { status });
      return created ?? null;
    },
    async update(lease) {
      const { status, lease: updated } = await call("PUT", item, lease);
      // 404: deleted meanwhile; the next round creates it again.
      if (status === 409 || status === 404) return null;
      return updated ?? null;
    },
  };
}
