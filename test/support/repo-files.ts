import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { stringify } from "yaml";
import { SAMPLE_CATALOG_DIR } from "../../src/cli/serve.js";
import { clusterNamespacePath, clusterRegistryPath, namespaceManifest } from "../../src/repo/index.js";

/** Files of a GitOps repository for tests: the sample catalog plus the given clusters (and extras). */

export interface ClusterSpec {
  id: string;
  namespace?: string;
  schedulable?: boolean;
  labels?: Record<string, string>;
  capacity?: { maxInstances?: number; resources?: Record<string, string> };
  /** Anything else under spec (status, sync, kubeconfig). */
  spec?: Record<string, unknown>;
}

async function listFiles(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await listFiles(path.join(dir, e.name), rel)));
    else if (e.isFile()) out.push(rel);
  }
  return out;
}

export async function sampleCatalogFiles(): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const rel of await listFiles(SAMPLE_CATALOG_DIR)) {
    files[`catalog/${rel}`] = await readFile(path.join(SAMPLE_CATALOG_DIR, rel), "utf8");
  }
  return files;
}

export function clusterFiles(clusters: ClusterSpec[]): Record<string, string> {
  const files: Record<string, string> = {};
  for (const c of clusters) {
    const namespace = c.namespace ?? "gitops-broker-instances";
    const spec: Record<string, unknown> = { namespace, ...c.spec };
    if (c.schedulable !== undefined) spec.schedulable = c.schedulable;
    if (c.labels) spec.labels = c.labels;
    if (c.capacity) spec.capacity = c.capacity;
    files[clusterRegistryPath(c.id)] = stringify({
      apiVersion: "gitops-broker.io/v1alpha1",
      kind: "Cluster",
      metadata: { name: c.id },
      spec,
    });
    files[clusterNamespacePath(c.id)] = namespaceManifest(namespace);
  }
  return files;
}

export async function repoFiles(clusters: ClusterSpec[], extra: Record<string, string> = {}): Promise<Record<string, string>> {
  return { ...(await sampleCatalogFiles()), ...clusterFiles(clusters), ...extra };
}
