import { modelFor } from "./kube-models.js";

/**
 * Offline validation of Kubernetes objects with kubernetes-models (the OpenAPI schemas of the
 * core API groups, plus the Argo CD and Flux models). Returns true when a model exists and the
 * object validates, false when no model exists for its apiVersion/kind (e.g. an operator's custom
 * resource), and throws the model's validation error otherwise.
 */
export function validateManifest(object: Record<string, unknown>): boolean {
  const { apiVersion, kind } = object;
  if (typeof apiVersion !== "string" || typeof kind !== "string") {
    throw new TypeError("object has no apiVersion/kind");
  }
  const Model = modelFor(apiVersion, kind);
  if (!Model) return false;
  new Model(object).validate();
  return true;
}
