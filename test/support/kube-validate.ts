import { createRequire } from "node:module";

/**
 * Offline validation of Kubernetes objects with kubernetes-models (the OpenAPI schemas of the
 * core API groups). Returns true when a model exists and the object validates, false when no
 * model exists for its apiVersion/kind (e.g. an operator's custom resource), and throws the
 * model's validation error otherwise.
 */
const require = createRequire(import.meta.url);

type ModelClass = new (data: Record<string, unknown>) => { validate(): void };

function modelFor(apiVersion: string, kind: string): ModelClass | undefined {
  // "v1" -> kubernetes-models/v1, "apps/v1" -> kubernetes-models/apps/v1
  const module = `kubernetes-models/${apiVersion}`;
  let exports: Record<string, unknown>;
  try {
    exports = require(module) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const model = exports[kind];
  return typeof model === "function" ? (model as ModelClass) : undefined;
}

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
