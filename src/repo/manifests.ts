import { stringify } from "yaml";

/** Labels the broker puts on every object it renders. */
export const LABEL_MANAGED_BY = "app.kubernetes.io/managed-by";
export const LABEL_INSTANCE = "gitops-broker.io/instance-id";
export const LABEL_BINDING = "gitops-broker.io/binding-id";
export const MANAGED_BY = "gitops-broker";

/**
 * `clusters/<id>/namespace.yaml`: the Namespace the cluster's instances live in. It also keeps the
 * cluster directory from ever being empty (Argo CD refuses to auto-prune an application to empty).
 * Pruning is disabled for it in both Argo CD and Flux: if the file were ever removed by mistake,
 * the Namespace and every instance in it must not be deleted with it.
 */
export function namespaceManifest(namespace: string): string {
  return stringify(
    {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: {
        name: namespace,
        annotations: {
          "argocd.argoproj.io/sync-options": "Prune=false",
          "kustomize.toolkit.fluxcd.io/prune": "disabled",
        },
        labels: { [LABEL_MANAGED_BY]: MANAGED_BY },
      },
    },
    { lineWidth: 0 },
  );
}
