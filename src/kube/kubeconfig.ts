import { readFileSync } from "node:fs";
import type { KubeConfig } from "@kubernetes/client-node";
import type { ClusterEntry, KubeconfigRef } from "../catalog/index.js";
import { KubeApiError } from "../errors/index.js";
import { loadClientNode, type ClientNode } from "./client-node.js";
import { createKubeApi } from "./request.js";

/** Where a pod finds its own namespace. */
const SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

export interface KubeConfigResolverOptions {
  /**
   * The broker's own cluster: where `secretRef` kubeconfigs are read, and the cluster of an entry
   * without a kubeconfig reference. Default: `KubeConfig.loadFromDefault()` (in-cluster service
   * account, else $KUBECONFIG / ~/.kube/config).
   */
  home?: () => KubeConfig;
  /** The broker's namespace, for a `secretRef` without one. Default: the service account's, else the home context's. */
  namespace?: string;
  /** Loads @kubernetes/client-node (default: `loadClientNode`, once per process). */
  clientNode?: () => Promise<ClientNode>;
}

export type KubeConfigFor = (ref: KubeconfigRef | undefined, cluster: ClusterEntry) => Promise<KubeConfig>;

/** A key of a Secret in the broker's cluster. */
export interface SecretKeyRef {
  name: string;
  key: string;
  /** Undefined: the broker's namespace. */
  namespace?: string;
}

/**
 * Reads a key of a Secret in the broker's own cluster (a `secretRef` of the registry); errors say
 * `<owner>: cannot read <what> Secret <ns>/<name>`. Resolves with the decoded bytes.
 */
export type SecretKeyReader = (ref: SecretKeyRef, owner: string, what: string) => Promise<Buffer>;

/**
 * Reads registry `secretRef`s (kubeconfigs, webhook secrets) from the broker's cluster. `home()`
 * resolves with the broker's own KubeConfig (loading @kubernetes/client-node when it is the default).
 */
export function createSecretKeyReader(options: KubeConfigResolverOptions = {}): SecretKeyReader & { home(): Promise<KubeConfig> } {
  const load = options.clientNode ?? loadClientNode;
  let home: KubeConfig | undefined;
  const homeConfig = async (): Promise<KubeConfig> => {
    if (home === undefined) {
      const kc = options.home?.() ?? (await defaultHome(load));
      home ??= kc; // a concurrent first call may have set it meanwhile: one home for all
    }
    return home;
  };
  const read = async ({ name, key, namespace: ns }: SecretKeyRef, owner: string, what: string): Promise<Buffer> => {
    const namespace = ns ?? options.namespace ?? brokerNamespace(await homeConfig());
    let data: string | undefined;
    try {
      const api = createKubeApi({ kubeConfig: await homeConfig(), clientNode: load });
      const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`;
      const { body } = await api.request<{ data?: Record<string, string> }>({ method: "GET", path });
      data = body.data?.[key];
    } catch (error) {
      const status = error instanceof KubeApiError ? error.status : undefined;
      throw new KubeApiError(`${owner}: cannot read ${what} Secret ${namespace}/${name}`, status === undefined ? {} : { status }, { cause: error });
    }
    if (data === undefined) throw new KubeApiError(`${owner}: Secret ${namespace}/${name} has no key ${key}`);
    return Buffer.from(data, "base64");
  };
  return Object.assign(read, { home: homeConfig });
}

/** Resolves registry kubeconfig references (never stored in Git) to client-node KubeConfigs. */
export function createKubeConfigResolver(options: KubeConfigResolverOptions = {}): KubeConfigFor {
  const secrets = createSecretKeyReader(options);
  const load = options.clientNode ?? loadClientNode;

  return async (ref, cluster) => {
    if (ref === undefined) return secrets.home();
    const { KubeConfig } = await load();
    const kc = new KubeConfig();
    if ("path" in ref) {
      try {
        kc.loadFromFile(ref.path);
      } catch (error) {
        throw new KubeApiError(`cluster ${cluster.id}: cannot load kubeconfig file ${ref.path}`, {}, { cause: error });
      }
      return kc;
    }
    const data = await secrets(ref.secretRef, `cluster ${cluster.id}`, "kubeconfig");
    try {
      kc.loadFromString(data.toString("utf8"));
    } catch (error) {
      const { name, key } = ref.secretRef;
      throw new KubeApiError(`cluster ${cluster.id}: key ${key} of Secret ${ref.secretRef.namespace ?? "(broker's namespace)"}/${name} is not a kubeconfig`, {}, { cause: error });
    }
    return kc;
  };
}

async function defaultHome(load: () => Promise<ClientNode>): Promise<KubeConfig> {
  const { KubeConfig } = await load();
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}

/** The broker's namespace: its pod's (the ServiceAccount's), else that of the kubeconfig's current context, else default. */
export function brokerNamespace(home: KubeConfig): string {
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE, "utf8").trim();
  } catch {
    // Not in a pod: the namespace of the home context.
    return home.getContextObject(home.getCurrentContext())?.namespace ?? "default";
  }
}
