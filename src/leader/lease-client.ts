import type { KubeConfig } from "@kubernetes/client-node";
import { KubeApiError } from "../errors/index.js";
import { createKubeApi, type ClientNode } from "../kube/index.js";

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

/**
 * The three requests leader election makes on its one Lease; the RBAC Role grants these verbs
 * only. Each rejects when `signal` aborts (the end of the round's renew deadline).
 */
export interface LeaseClient {
  /** The Lease, or null when there is none. */
  get(signal?: AbortSignal): Promise<Lease | null>;
  /** Creates it; null when another replica created it first (409). */
  create(lease: Lease, signal?: AbortSignal): Promise<Lease | null>;
  /** Replaces it at its resourceVersion; null when it changed meanwhile (409). */
  update(lease: Lease, signal?: AbortSignal): Promise<Lease | null>;
}

export interface KubeLeaseClientOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  name: string;
  /** Loads @kubernetes/client-node (default: once per process, on first use). */
  clientNode?: () => Promise<ClientNode>;
  /** A request without an answer for this long fails (default 10 s); the elector bounds each round by its renew deadline besides. */
  timeoutMs?: number;
}

/**
 * The Lease through src/kube's request helper, as JSON of our own: client-node's generated
 * V1Lease serializer writes MicroTime with milliseconds padded, and the three calls need nothing
 * else from it. 409 is an answer (someone else won), not a failure.
 */
export function createKubeLeaseClient(options: KubeLeaseClientOptions): LeaseClient {
  const { kubeConfig, namespace, name } = options;
  if (kubeConfig.getCurrentCluster()?.server === undefined) throw new KubeApiError("the kubeconfig for leader election has no current cluster");
  const api = createKubeApi({ kubeConfig, timeoutMs: options.timeoutMs ?? 10_000, ...(options.clientNode ? { clientNode: options.clientNode } : {}) });
  const collection = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
  const item = `${collection}/${encodeURIComponent(name)}`;
  const call = async (method: "GET" | "POST" | "PUT", path: string, body: Lease | undefined, signal: AbortSignal | undefined) =>
    api.request<Lease | undefined>({ method, path, body, answers: [404, 409], what: `${method} Lease ${namespace}/${name}`, ...(signal ? { signal } : {}) });

  return {
    async get(signal) {
      const { status, body } = await call("GET", item, undefined, signal);
      return status === 404 ? null : (body ?? null);
    },
    async create(lease, signal) {
      const { status, body } = await call("POST", collection, lease, signal);
      if (status === 409) return null;
      if (status === 404) throw new KubeApiError(`POST Lease ${namespace}/${name}: namespace ${namespace} not found`, { status });
      return body ?? null;
    },
    async update(lease, signal) {
      const { status, body } = await call("PUT", item, lease, signal);
      // 409: changed meanwhile; 404: deleted meanwhile (the next round creates it again).
      return status === 409 || status === 404 ? null : (body ?? null);
    },
  };
}
