import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { trackedTempDir } from "../../test/support/processes.js";
import { dirTreeReader } from "../repo/index.js";
import { manifestKeys } from "./applied-index.js";

describe("manifestKeys", () => {
  it("the resource keys of every manifest under a directory, at any depth, sorted; other files are not manifests", async () => {
    const root = await trackedTempDir("applied-index-");
    const files: Record<string, string> = {
      "clusters/east/db-1/postgresql.yaml": "apiVersion: acid.zalan.do/v1\nkind: postgresql\nmetadata:\n  name: pg-1\n  namespace: ns\n",
      "clusters/east/db-1/bindings/app-1/secret.yml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-1\n  namespace: ns\n",
      "clusters/east/db-1/namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n",
      "clusters/east/db-1/README.md": "kind: NotAManifest\n",
      "clusters/east/db-2/other.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: elsewhere\n",
    };
    for (const [file, text] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(root, file)), { recursive: true });
      await writeFile(path.join(root, file), text);
    }
    const tree = dirTreeReader(root);
    // group/kind/namespace/name: "" for the core group and for a cluster-scoped object's namespace.
    expect(await manifestKeys(tree, "clusters/east/db-1")).toEqual(["/Namespace//ns", "/Secret/ns/app-1", "acid.zalan.do/postgresql/ns/pg-1"]);
    expect(await manifestKeys(tree, "clusters/east/db-3")).toEqual([]);
  });
});
