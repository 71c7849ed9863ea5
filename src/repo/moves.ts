import { parse, stringify } from "yaml";
import type { TreeReader } from "../gitwriter/index.js";
import { assertClusterId, isDns1123Label } from "./layout.js";

/**
 * A cluster moving to another store (ADR 0027): `moved/<cluster-id>.yaml` in the store it leaves,
 * written by `gitops-broker move-cluster`. In that store, an operation on the cluster is refused
 * while `state` is `moving` (its records are being copied) and belongs to store `to` once it is
 * `moved`. The file is in the store itself, so it is ordered with every write to that store: no
 * operation can land in the old store after the fence without seeing it.
 */
export const MOVES_DIR = "moved";

export interface MoveFence {
  clusterId: string;
  /** The store the cluster goes to (a store name, or "control"). */
  to: string;
  state: "moving" | "moved";
}

export function moveFencePath(clusterId: string): string {
  assertClusterId(clusterId);
  return `${MOVES_DIR}/${clusterId}.yaml`;
}

export function moveFenceYaml(fence: MoveFence): string {
  return stringify({
    apiVersion: "gitops-broker.io/v1alpha1",
    kind: "ClusterMove",
    metadata: { name: fence.clusterId },
    spec: { to: fence.to, state: fence.state },
  });
}

function parseFence(clusterId: string, text: string): MoveFence | undefined {
  const doc = parse(text) as { kind?: unknown; spec?: { to?: unknown; state?: unknown } } | null;
  const to = doc?.spec?.to;
  const state = doc?.spec?.state;
  if (doc?.kind !== "ClusterMove" || typeof to !== "string" || (state !== "moving" && state !== "moved")) return undefined;
  return { clusterId, to, state };
}

/** The fences of one store's tree, by cluster id (files that do not parse are no fence). */
export async function readMoveFences(tree: TreeReader): Promise<Map<string, MoveFence>> {
  const fences = new Map<string, MoveFence>();
  for (const entry of (await tree.list(MOVES_DIR)) ?? []) {
    const clusterId = entry.name.replace(/\.yaml$/, "");
    if (entry.type !== "blob" || clusterId === entry.name || !isDns1123Label(clusterId)) continue;
    const text = await tree.readText(`${MOVES_DIR}/${entry.name}`);
    const fence = text === null ? undefined : parseFence(clusterId, text);
    if (fence) fences.set(clusterId, fence);
  }
  return fences;
}
