import { InstanceMoveAcrossStoresError } from "../errors/index.js";
import { instanceRecordDir, instanceRecordPath, scanInstanceRecord, storeLabel } from "../repo/index.js";
import { storeForNewInstance } from "./store-choice.js";
import { CONTROL, type CompositeTree, type Placement, type StoreName } from "./types.js";

export interface RouteDeps {
  /** The last fetched tips of every repository, as one tree. */
  snapshot: () => CompositeTree;
  /** Fetches every repository; rejects when one cannot be fetched. */
  refreshAll: () => Promise<void>;
  /** The registry's clusters as served now. */
  clusters: () => readonly { id: string; schedulable: boolean }[];
  /** A file of one repository's last fetched tip. */
  readText: (store: StoreName, path: string) => Promise<string | null>;
}

/** StoreSet.route (see there): the repository an operation runs in, decided before it runs. */
export function createRoute(deps: RouteDeps): (placement: Placement) => Promise<StoreName> {
  const { snapshot, refreshAll } = deps;
  const holder = (instanceId: string): Promise<StoreName | undefined> => snapshot().storeOfInstance(instanceRecordDir(instanceId));

  /** A new id's store, over the clusters' stores as the last fetched tips have them (a finished move's fence included). */
  async function newInstanceStore(instanceId: string): Promise<StoreName> {
    const clusters = deps.clusters();
    const tree = snapshot();
    const owners = new Map(await Promise.all(clusters.map(async (c) => [c.id, (await tree.storeOfCluster(c.id)) ?? CONTROL] as const)));
    return storeForNewInstance(instanceId, clusters, (id) => owners.get(id) ?? CONTROL) ?? CONTROL;
  }

  /** The store of a cluster a human chose; with an instance to go there, refused when that instance is live in another store. */
  async function clusterRoute(clusterId: string, instanceId: string | undefined): Promise<StoreName> {
    const named = await snapshot().storeOfCluster(clusterId);
    // A cluster the registry does not name: the operation says so, from the control repository.
    const store = named ?? CONTROL;
    if (instanceId === undefined || named === undefined) return store;
    let held = await holder(instanceId);
    if (held !== store) {
      // Not here by the last fetched tips: a refusal (or the operation's "not found") needs every store current.
      await refreshAll();
      held = await holder(instanceId);
    }
    if (held === undefined || held === store) return store;
    const text = await deps.readText(held, instanceRecordPath(instanceId));
    if (text !== null && scanInstanceRecord(text)?.deleted === true) return store;
    throw new InstanceMoveAcrossStoresError(
      `instance ${instanceId} is in ${storeLabel(held)} and the instances of cluster ${clusterId} are in ${storeLabel(store)}: an instance moves only between ` +
        "clusters of one repository (one operation is one commit in one repository); move the whole cluster (gitops-broker move-cluster), or deprovision the instance and provision it again",
      { instanceId, clusterId, from: held, to: store },
    );
  }

  return async (placement) => {
    if (placement.cluster !== undefined) return clusterRoute(placement.cluster, placement.instance);
    const found = await holder(placement.instance);
    if (found !== undefined) return found;
    if (placement.provision) return newInstanceStore(placement.instance);
    await refreshAll();
    return (await holder(placement.instance)) ?? CONTROL;
  };
}
