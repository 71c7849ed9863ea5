import * as fs from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { tempDirTree, type TempDirTree } from "../../test/support/dir-tree.js";
import { createTempDir } from "../../test/support/git-fixtures.js";
import { RemoteCharts, sha256Hex } from "../charts/index.js";
import { loadCatalog } from "./index.js";

const EXAMPLES = fileURLToPath(new URL("../../examples/catalog/", import.meta.url));
const EXAMPLE_SERVICE_ID = "4de30cf9-a981-48c9-9acf-909805db46bc";

let repo: TempDirTree;
const cleanups: (() => Promise<void>)[] = [];
beforeEach(async () => {
  repo = await tempDirTree("catalog-");
  await fs.cp(EXAMPLES, path.join(repo.root, "catalog"), { recursive: true });
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await repo.remove();
});

function helmPlan(template: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: "osb.servicefabrik.io/v1alpha1",
    kind: "SFPlan",
    metadata: { name: "kv" },
    spec: {
      id: "kv-plan",
      name: "kv",
      description: "a chart",
      serviceId: EXAMPLE_SERVICE_ID,
      templates: [{ action: "provision", type: "helm", ...template }],
    },
  });
}

const CHART = {
  "catalog/charts/kv/Chart.yaml": "apiVersion: v2\nname: kv\nversion: 1.0.0\n",
  "catalog/charts/kv/values.yaml": "replicas: 1\n",
  "catalog/charts/kv/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\n",
  "catalog/charts/kv/crds/kv.yaml": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n",
};

describe("loadCatalog: helm charts", () => {
  it("reads a chart directory under catalog/ and does not take its files for catalog documents", async () => {
    await repo.write({ ...CHART, "catalog/kv-plan.yaml": helmPlan({ url: "catalog/charts/kv", content: "replicas: 2" }) });
    const { catalog, problems } = await loadCatalog(repo.tree);
    expect(problems).toEqual([]);
    const t = catalog.planById("kv-plan")?.templates[0];
    expect(t).toMatchObject({ type: "helm", url: "catalog/charts/kv", content: "replicas: 2" });
    expect(t?.chart !== undefined && "files" in t.chart ? t.chart.files.map((f) => f.name) : t?.chart).toEqual([
      "Chart.yaml",
      "crds/kv.yaml",
      "templates/cm.yaml",
      "values.yaml",
    ]);
  });

  it("reads a .tgz in the repository, and a url alone is a template", async () => {
    const tgz = gzipSync(Buffer.from("archive"));
    await repo.write({ "catalog/charts/kv-1.0.0.tgz": tgz, "catalog/kv-plan.yaml": helmPlan({ url: "./catalog/charts/kv-1.0.0.tgz" }) });
    const { catalog, problems } = await loadCatalog(repo.tree);
    expect(problems).toEqual([]);
    const t = catalog.planById("kv-plan")?.templates[0];
    expect(t?.content).toBe("");
    expect(t?.chart !== undefined && "archive" in t.chart && Buffer.from(t.chart.archive).equals(tgz)).toBe(true);
  });

  it("says what is wrong with a url", async () => {
    await repo.write({
      "catalog/a.yaml": helmPlan({ url: "catalog/charts/none", content: "" }).replace(/kv-plan/g, "a").replace('"kv"', '"a"'),
      "catalog/b.yaml": helmPlan({ url: "https://charts.example.com/kv-1.0.0.tgz" }).replace(/kv-plan/g, "b").replace('"kv"', '"b"'),
      "catalog/c.yaml": helmPlan({ url: "charts/kv" }).replace(/kv-plan/g, "c").replace('"kv"', '"c"'),
      "catalog/d.yaml": helmPlan({ url: "oci://registry.example.com/kv" }).replace(/kv-plan/g, "d").replace('"kv"', '"d"'),
      "catalog/e.yaml": helmPlan({ url: "catalog/charts/kv", content: "a", path: "catalog/x.tpl" }).replace(/kv-plan/g, "e").replace('"kv"', '"e"'),
    });
    const { problems } = await loadCatalog(repo.tree);
    expect(problems).toEqual([
      { file: "catalog/a.yaml", path: "spec.templates[0].url", message: 'no chart "catalog/charts/none" in the repository (a directory or a .tgz)' },
      {
        file: "catalog/b.yaml",
        path: "spec.templates[0].url",
        message: "a chart fetched over http(s) must be pinned: add `digest: sha256:<hex>` (or vendor the chart under catalog/)",
      },
      { file: "catalog/c.yaml", path: "spec.templates[0].url", message: '"charts/kv": a chart in the repository is a path under catalog/ (a chart directory or a .tgz)' },
      {
        file: "catalog/d.yaml",
        path: "spec.templates[0].url",
        message: '"oci://registry.example.com/kv": only repository paths (catalog/...) and http(s) URLs pinned by digest are supported',
      },
      { file: "catalog/e.yaml", path: "spec.templates[0]", message: "must NOT be valid" },
    ]);
  });

  it("fetches a digest-pinned remote chart into the cache, once", async () => {
    const archive = gzipSync(Buffer.from("remote chart"));
    let hits = 0;
    const server = createServer((_req, res) => {
      hits++;
      res.end(archive);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const cache = await createTempDir("charts-");
    cleanups.push(() => fs.rm(cache, { recursive: true, force: true }));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/kv-1.0.0.tgz`;
    const digest = `sha256:${sha256Hex(archive)}`;
    await repo.write({ "catalog/kv-plan.yaml": helmPlan({ url, digest, content: "" }) });
    const remoteCharts = new RemoteCharts({ dir: cache });
    for (let i = 0; i < 2; i++) {
      const { catalog, problems } = await loadCatalog(repo.tree, { remoteCharts });
      expect(problems).toEqual([]);
      const t = catalog.planById("kv-plan")?.templates[0];
      expect(t?.digest).toBe(digest);
      expect(t?.chart !== undefined && "archive" in t.chart && Buffer.from(t.chart.archive).equals(archive)).toBe(true);
    }
    expect(hits).toBe(1);
    // Without a cache the plan loads, its chart unread.
    const { catalog, problems } = await loadCatalog(repo.tree);
    expect(problems).toEqual([]);
    expect(catalog.planById("kv-plan")?.templates[0]?.chart).toBeUndefined();
    // A wrong pin is a problem of the plan.
    await repo.write({ "catalog/kv-plan.yaml": helmPlan({ url, digest: `sha256:${"1".repeat(64)}` }) });
    const wrong = await loadCatalog(repo.tree, { remoteCharts });
    expect(wrong.problems).toEqual([
      { file: "catalog/kv-plan.yaml", path: "spec.templates[0].url", message: `chart ${url} has digest ${digest}, the plan pins sha256:${"1".repeat(64)}` },
    ]);
  });
});
