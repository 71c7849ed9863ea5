import { comparedLive } from "./diff.js";
import {
  appliedResources,
  identityKey,
  identityOf,
  matchBindings,
  SF_BINDING_KIND,
  SF_INSTANCE_KIND,
  SF_OSB_API_VERSION,
  specOf,
  type ClusterClient,
  type KubeObject,
  type Landscape,
} from "./landscape.js";

/**
 * Reads a landscape, read-only: the SFServiceInstance and SFServiceBinding resources on the
 * master, then per sister cluster (SF's `spec.clusterId`) every kind the resources' `status.resources`
 * name, one list per kind in all namespaces (10,000 instances cost a few lists, not 10,000 GETs),
 * keeping only the objects named, without what nothing reads (status, the server's metadata but
 * owner references: diff.ts's comparedLive). `sister` answers undefined for a cluster the import
 * cannot map (not in the registry): nothing is read there.
 */
export async function readLandscape(master: ClusterClient, sister: (sfClusterId: string) => Promise<ClusterClient | undefined>): Promise<Landscape> {
  const [instances, bindings] = await Promise.all([master.list(SF_OSB_API_VERSION, SF_INSTANCE_KIND), master.list(SF_OSB_API_VERSION, SF_BINDING_KIND)]);
  const wanted = new Map<string, Set<string>>();
  const kinds = new Map<string, Map<string, { apiVersion: string; kind: string }>>();
  const want = (clusterId: string, o: KubeObject) => {
    for (const ref of appliedResources(o)) {
      let keys = wanted.get(clusterId);
      if (!keys) wanted.set(clusterId, (keys = new Set()));
      keys.add(identityKey(ref));
      let ks = kinds.get(clusterId);
      if (!ks) kinds.set(clusterId, (ks = new Map<string, { apiVersion: string; kind: string }>()));
      ks.set(`${ref.apiVersion} ${ref.kind}`, { apiVersion: ref.apiVersion, kind: ref.kind });
    }
  };
  const { byInstance } = matchBindings(instances, bindings);
  for (const i of instances) {
    const clusterId = specOf(i).clusterId;
    if (typeof clusterId !== "string" || clusterId === "") continue;
    want(clusterId, i);
    // A binding's objects are applied on its instance's cluster.
    for (const b of byInstance.get(i) ?? []) want(clusterId, b);
  }

  const live = new Map<string, Map<string, KubeObject>>();
  const unreadable = new Map<string, string>();
  for (const [clusterId, keys] of wanted) {
    const objects = new Map<string, KubeObject>();
    live.set(clusterId, objects);
    let client: ClusterClient | undefined;
    try {
      client = await sister(clusterId);
    } catch (error) {
      unreadable.set(clusterId, error instanceof Error ? error.message : String(error));
      continue;
    }
    if (client === undefined) continue;
    try {
      for (const { apiVersion, kind } of kinds.get(clusterId)?.values() ?? []) {
        // Sifted as the pages arrive: the objects named, as far as the plan and the hand-over read them.
        const named = (o: KubeObject) => (keys.has(identityKey(identityOf({ ...o, apiVersion, kind }))) ? comparedLive({ ...o, apiVersion, kind }) : undefined);
        for (const o of await client.list(apiVersion, kind, named)) objects.set(identityKey(identityOf(o)), o);
      }
    } catch (error) {
      unreadable.set(clusterId, `cannot read cluster ${clusterId} at ${client.server}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return { master: master.server, instances, bindings, live, unreadable };
}
