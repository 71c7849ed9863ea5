import { parse, stringify } from "yaml";
import { repoFiles } from "../support/repo-files.js";

/**
 * A GitOps repository for the tests of Service Fabrik's broker behaviour: the sample catalog (its
 * service made shareable) plus plans and services that differ from the sample's `small` plan only
 * in what a test looks at (supported_platform, -fabrik-internal names, metadata.state,
 * update_predecessors, an SFPlan document).
 */

export const SF_PLANS = {
  k8sOnly: "a0000000-0000-4000-8000-00000000000a",
  platformDefault: "a0000000-0000-4000-8000-00000000000b",
  internal: "a0000000-0000-4000-8000-00000000000c",
  deprecated: "a0000000-0000-4000-8000-00000000000d",
  large: "a0000000-0000-4000-8000-00000000000e",
  sfPlan: "a0000000-0000-4000-8000-00000000000f",
  internalService: "a0000000-0000-4000-8000-000000000010",
  k8sService: "a0000000-0000-4000-8000-000000000011",
} as const;

export const INTERNAL_SERVICE_ID = "b0000000-0000-4000-8000-000000000001";
export const K8S_SERVICE_ID = "b0000000-0000-4000-8000-000000000002";

type Doc = { apiVersion: string; kind: string; metadata: Record<string, unknown>; spec: Record<string, unknown> };

function variant(base: Doc, id: string, name: string, spec: Record<string, unknown>, drop: string[] = []): string {
  const doc = structuredClone(base);
  doc.metadata = { name: id };
  const next: Record<string, unknown> = { ...doc.spec, id, name, ...spec };
  for (const key of drop) delete next[key];
  doc.spec = next;
  return stringify(doc);
}

export async function sfCatalogFiles(extra: Record<string, string> = {}): Promise<Record<string, string>> {
  const files = await repoFiles([{ id: "local" }]);
  const servicePath = "catalog/postgresql/service.yaml";
  const service = parse(files[servicePath]!) as Doc;
  service.spec.metadata = { ...(service.spec.metadata as Record<string, unknown>), shareable: true };
  files[servicePath] = stringify(service);
  const small = parse(files["catalog/postgresql/plans/small.yaml"]!) as Doc;
  const p = (file: string, text: string) => (files[`catalog/sf/${file}.yaml`] = text);
  p("k8s-only", variant(small, SF_PLANS.k8sOnly, "k8s-only", { supported_platform: ["k8s"] }));
  p("platform-default", variant(small, SF_PLANS.platformDefault, "platform-default", {}, ["supported_platform"]));
  p("internal", variant(small, SF_PLANS.internal, "small-fabrik-internal", {}));
  p("deprecated", variant(small, SF_PLANS.deprecated, "old", { metadata: { state: "deprecated" } }));
  p(
    "large",
    variant(small, SF_PLANS.large, "large", { manager: { async: false, asyncBinding: false, settings: { update_predecessors: [small.spec.id] } } }),
  );
  const sf = parse(variant(small, SF_PLANS.sfPlan, "sf-xl", {})) as Doc;
  p("sf-plan", stringify({ ...sf, apiVersion: "osb.servicefabrik.io/v1alpha1", kind: "SFPlan" }));
  const otherService = (id: string, name: string, spec: Record<string, unknown>) =>
    stringify({ ...service, metadata: { name: id }, spec: { ...service.spec, id, name, ...spec } });
  p("internal-service", otherService(INTERNAL_SERVICE_ID, "pg-fabrik-internal", {}));
  p("internal-service-plan", variant(small, SF_PLANS.internalService, "small", { serviceId: INTERNAL_SERVICE_ID }));
  p("k8s-service", otherService(K8S_SERVICE_ID, "pg-k8s", { supported_platform: ["k8s"] }));
  p("k8s-service-plan", variant(small, SF_PLANS.k8sService, "small", { serviceId: K8S_SERVICE_ID, supported_platform: ["k8s", "cf"] }));
  return { ...files, ...extra };
}
