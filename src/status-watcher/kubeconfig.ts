import { readFileSync } from "node:fs";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import type { ClusterEntry, KubeconfigRef } from "../catalog/index.js";
import { KubeApiError } from "../errors/index.js";

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
}

export type KubeConfigFor = (ref: KubeconfigRef | undefined, cluster: ClusterEntry) => Promise<KubeConfig>;

/** Resolves registry kubeconfig references (never stored in Git) to client-node KubeConfigs. */
export function createKubeConfigResolver(options: KubeConfigResolverOptions = {}): KubeConfigFor {
  let home: KubeConfig | undefined;
  const homeConfig = (): KubeConfig => {
    if (home === undefined) {
      home = options.home?.() ?? defaultHome();
    }
    return home;
  };

  return async (ref, cluster) => {
    if (ref === undefined) return homeConfig();
    const kc = new KubeConfig();
    if ("path" in ref) {
      try {
        kc.loadFromFile(ref.path);
      } catch (error) {
        throw new KubeApiError(`cluster ${cluster.id}: cannot load kubeconfig file ${ref.path}`, {}, { cause: error });
      }
      return kc;
    }
    const { name, key } = ref.secretRef;
    const namespace = ref.secretRef.namespace ?? options.namespace ?? brokerNamespace(homeConfig());
    let data: string | undefined;
    try {
      const secret = await homeConfig().makeApiClient(CoreV1Api).readNamespacedSecret({ name, namespace });
      data = secret.data?.[key];
    } catch (error) {
      const status = (error as { code?: unknown }).code;
      throw new KubeApiError(
        `cluster ${cluster.id}: cannot read kubeconfig Secret ${namespace}/${name}`,
        typeof status === "number" ? { status } : {},
        { cause: error },
      );
    }
    if (data === undefined) throw new KubeApiError(`cluster ${cluster.id}: Secret ${namespace}/${name} has no key ${key}`);
    try {
      kc.loadFromString(Buffer.from(data, "base64").toString("utf8"));
    } catch (error) {
      throw new KubeApiError(`cluster ${cluster.id}: key ${key} of Secret ${namespace}/${name} is not a kubeconfig`, {}, { cause: error });
    }
    return kc;
  };
}

function defaultHome(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}

function brokerNamespace(home: KubeConfig): string {
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE, "utf8").trim();
  } catch {
    // Not in a pod: the namespace of the home context.
    return home.getContextObject(home.getCurrentContext())?.namespace ?? "default";
  }
}
