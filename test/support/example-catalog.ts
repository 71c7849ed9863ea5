/**
 * examples/catalog, the catalog the embedded default serves, loaded as `validate` loads a checkout:
 * from `catalog/` of the examples directory, read in place.
 */
import { fileURLToPath } from "node:url";
import { loadCatalog, type Catalog } from "../../src/catalog/index.js";
import { dirTreeReader } from "../../src/repo/index.js";

const EXAMPLES_DIR = fileURLToPath(new URL("../../examples/", import.meta.url));

/** The example catalog; throws when it has problems (every test using it expects none). */
export async function loadExampleCatalog(): Promise<Catalog> {
  const { catalog, problems } = await loadCatalog(dirTreeReader(EXAMPLES_DIR));
  if (problems.length > 0) throw new Error(`examples/catalog has problems: ${JSON.stringify(problems)}`);
  return catalog;
}
