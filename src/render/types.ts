import type { PlanTemplate } from "../catalog/index.js";

/** The values a template sees. Shapes follow the records (see src/repo), Service Fabrik style. */
export interface RenderValues {
  /** The service document as written in the catalog (SFService-shaped). */
  service: Record<string, unknown>;
  /** The plan document as written in the catalog (SFPlan-shaped: plan.spec.context, plan.spec.id ...). */
  plan: Record<string, unknown>;
  /** The instance record (ServiceInstance-shaped: instance.metadata.name/namespace, instance.spec.parameters ...). */
  instance: Record<string, unknown>;
  /** The binding record for bind/unbind. */
  binding?: Record<string, unknown>;
  /** All live (not deleted) binding records of the instance, including the one being created. */
  bindings: Record<string, unknown>[];
  /**
   * Further top-level values of text templates: the `status` template sees the live objects
   * named by the `sources` template under their keys (`postgresql.status`, `secret.data`).
   */
  [key: string]: unknown;
}

export interface RenderRequest {
  /** Template action to render, e.g. `provision`. */
  action: string;
  templates: PlanTemplate[];
  values: RenderValues;
  /** Namespace set on namespaced objects that have none. */
  defaultNamespace: string;
  /** Labels merged into every object's metadata.labels (broker labels; they win over template labels). */
  labels: Record<string, string>;
  /** Plan name, for error messages. */
  planName: string;
  /** The target cluster's `.Capabilities` for helm templates; undefined: Helm's defaults. */
  capabilities?: RenderCapabilities;
}

/** `helm template --kube-version` and `--api-versions`, from the cluster's registry entry. */
export interface RenderCapabilities {
  kubeVersion?: string;
  apiVersions?: string[];
}

/** One rendered Kubernetes object, ready to be written. */
export interface Manifest {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string | undefined;
  /** Stable file name inside the instance (or binding) directory, e.g. `postgresql-pg-abc.yaml`. */
  fileName: string;
  /** Deterministic YAML text of the object (sorted keys, apiVersion/kind/metadata first, lineWidth 0). */
  yaml: string;
  object: Record<string, unknown>;
}
