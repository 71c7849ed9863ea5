import { POSTGRESQL } from "../support/postgres-operator.js";
import { startKubeApiServer, type KubeApiServer } from "../support/kube-api-server.js";
import type { KubeObject, RealKube } from "../support/real-kube.js";
import { registerServiceFabrik, sampleServiceFabrikCatalog, seedLandscape, SF_NAMESPACE } from "../support/service-fabrik-landscape.js";

/**
 * One Service Fabrik instance `r-1` with binding `r-1-b` on a real kube-apiserver that is its own
 * sister (SFCluster "1"), for the hand-over to a real agent (flux-hand-over.test.ts,
 * argocd-hand-over.test.ts): shaped in a double as Service Fabrik's code wrote it, then created
 * on the real server with the real uids in the owner references.
 */
export const PG_PATH = "/apis/acid.zalan.do/v1/namespaces/sf-r-1/postgresqls/sapcp-r-1";

export type Live = KubeObject & {
  metadata: { uid: string; labels?: Record<string, string>; annotations?: Record<string, string>; managedFields?: { manager: string; operation: string }[]; ownerReferences?: unknown[] };
  spec: Record<string, unknown>;
  status?: unknown;
};

/** `manager/operation` of each managedFields entry. */
export const managers = (o: Live) => (o.metadata.managedFields ?? []).map((m) => `${m.manager}/${m.operation}`);

/** Seeds `kube` (with `namespaces` created besides Service Fabrik's); resolves with the double, which the import's master kubeconfig is made from and which the caller closes. */
export async function seedServiceFabrikInstance(kube: RealKube, namespaces: readonly string[]): Promise<KubeApiServer> {
  const shaped = await startKubeApiServer({ resources: [POSTGRESQL] });
  registerServiceFabrik(shaped);
  const { service, plan } = await sampleServiceFabrikCatalog();
  await seedLandscape({ master: shaped, sisters: { "1": shaped }, service, plan, instances: [{ id: "r-1", clusterId: "1", bindings: [{ id: "r-1-b" }] }] });
  for (const name of ["sf-r-1", SF_NAMESPACE, ...namespaces]) await kube.apply({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
  const uids = new Map<string, string>();
  const clean = (o: KubeObject) => {
    const { uid: _u, resourceVersion: _r, creationTimestamp: _c, ...metadata } = o.metadata as Record<string, unknown>;
    return { ...o, metadata: { ...metadata, name: o.metadata.name } } as KubeObject;
  };
  for (const kind of ["SFServiceInstance", "SFServiceBinding"]) {
    for (const o of shaped.store.list("osb.servicefabrik.io/v1alpha1", kind)) {
      const { status, ...rest } = clean(o as KubeObject);
      const created = await kube.apply(rest, "service-fabrik-broker");
      await kube.patchStatus(created, status as Record<string, unknown>);
      uids.set(o.metadata.uid!, String(created.metadata.uid));
    }
  }
  for (const o of shaped.store.list("acid.zalan.do/v1", "postgresql")) {
    const object = clean(o as KubeObject);
    object.metadata.ownerReferences = ((object.metadata.ownerReferences ?? []) as { uid: string }[]).map((r) => ({ ...r, uid: uids.get(r.uid)! }));
    await kube.apply(object, "interoperator");
  }
  return shaped;
}
