/**
 * examples/catalog, the catalog the embedded default serves, loaded as the broker loads it: from
 * `catalog/` of a repository (a temporary directory, removed by `remove()`).
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { loadCatalog, type Catalog } from "../../src/catalog/index.js";
import { tempDirTree } from "./dir-tree.js";

export const EXAMPLE_CATALOG_DIR = fileURLToPath(new URL("../../examples/catalog/", import.meta.url));

export interface ExampleCatalog {
  catalog: Catalog;
  remove(): Promise<void>;
}

/** The example catalog; throws when it has problems (every test using it expects none). */
export async function loadExampleCatalog(prefix: string): Promise<ExampleCatalog> {
  const repo = await tempDirTree(prefix);
  try {
    await fs.cp(EXAMPLE_CATALOG_DIR, path.join(repo.root, "catalog"), { recursive: true });
    const { catalog, problems } = await loadCatalog(repo.tree);
    if (problems.length > 0) throw new Error(`examples/catalog has problems: ${JSON.stringify(problems)}`);
    return { catalog, remove: () => repo.remove() };
  } catch (error) {
    await repo.remove();
    throw error;
  }
}
