import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { tempDirTree, type TempDirTree } from "../../test/support/dir-tree.js";
import { createTempDir } from "../../test/support/git-fixtures.js";
import { ChartError } from "../errors/index.js";
import { adler32, chartFromPath, chartFromTree, releaseName, RemoteCharts, sha256Hex } from "./index.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function tempDir(): Promise<string> {
  const dir = await createTempDir("charts-");
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe("release names", () => {
  it("are Service Fabrik's in-<adler32 in decimal>", () => {
    // RFC 1950's usual check value: adler32("Wikipedia") = 0x11E60398.
    expect(adler32("Wikipedia")).toBe(0x11e60398);
    expect(adler32("")).toBe(1);
    expect(releaseName("Wikipedia")).toBe("in-300286872");
  });
});

describe("chartFromTree", () => {
  let repo: TempDirTree;
  afterEach(async () => repo.remove());

  it("reads a chart directory recursively, names relative to it", async () => {
    repo = await tempDirTree();
    await repo.write({
      "catalog/charts/web/Chart.yaml": "apiVersion: v2\n",
      "catalog/charts/web/templates/a.yaml": "a: 1\n",
      "catalog/charts/web/charts/sub/Chart.yaml": "name: sub\n",
    });
    const chart = await chartFromTree(repo.tree, "catalog/charts/web/");
    expect(chart !== null && "files" in chart ? chart.files.map((f) => [f.name, Buffer.from(f.data).toString()]) : chart).toEqual([
      ["Chart.yaml", "apiVersion: v2\n"],
      ["charts/sub/Chart.yaml", "name: sub\n"],
      ["templates/a.yaml", "a: 1\n"],
    ]);
  });

  it("reads an archive as bytes, and null for nothing", async () => {
    repo = await tempDirTree();
    const tgz = gzipSync(Buffer.from("not really a tar"));
    await repo.write({ "catalog/charts/web-1.0.0.tgz": tgz });
    const chart = await chartFromTree(repo.tree, "catalog/charts/web-1.0.0.tgz");
    expect(chart !== null && "archive" in chart && Buffer.from(chart.archive).equals(tgz)).toBe(true);
    expect(await chartFromTree(repo.tree, "catalog/charts/none")).toBeNull();
  });
});

describe("chartFromPath", () => {
  it("refuses a file that is not gzip, as Helm does", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "values.yaml"), "a: 1\n");
    await writeFile(join(dir, "chart.tar"), "plain");
    await expect(chartFromPath(join(dir, "values.yaml"))).rejects.toThrow(
      `file '${join(dir, "values.yaml")}' seems to be a YAML file, but expected a gzipped archive`,
    );
    await expect(chartFromPath(join(dir, "chart.tar"))).rejects.toThrow("does not appear to be a gzipped archive");
    await expect(chartFromPath(join(dir, "missing"))).rejects.toThrow(`path "${join(dir, "missing")}" not found`);
    await expect(chartFromPath(join(dir, "chart.tar"))).rejects.toBeInstanceOf(ChartError);
    await expect(chartFromPath(join(dir, "missing"))).rejects.toMatchObject({ code: ChartError.code, cause: { code: "ENOENT" } });
  });
});

describe("RemoteCharts", () => {
  async function serve(body: Uint8Array): Promise<{ url: string; hits: () => number; server: Server }> {
    let hits = 0;
    const server = createServer((req, res) => {
      hits++;
      if (req.url === "/chart.tgz") res.end(body);
      else res.writeHead(404).end("no");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits: () => hits, server };
  }

  it("downloads once, verifies, caches by digest; get never touches the network", async () => {
    const archive = new Uint8Array(gzipSync(Buffer.from("chart bytes")));
    const digest = `sha256:${sha256Hex(archive)}`;
    const http = await serve(archive);
    const dir = await tempDir();
    const charts = new RemoteCharts({ dir });
    expect(await charts.get(digest)).toBeNull();
    expect(await charts.ensure(`${http.url}/chart.tgz`, digest)).toEqual(archive);
    expect(await readdir(dir)).toEqual([`sha256-${digest.slice(7)}.tgz`]);
    // A fresh instance (a restarted broker) reads the disk cache, without a request.
    const again = new RemoteCharts({ dir });
    expect(await again.get(digest)).toEqual(archive);
    expect(await again.ensure(`${http.url}/chart.tgz`, digest)).toEqual(archive);
    expect(http.hits()).toBe(1);
  });

  it("refuses a digest mismatch, a bad digest and a failed download, and caches nothing", async () => {
    const archive = new Uint8Array(gzipSync(Buffer.from("chart bytes")));
    const http = await serve(archive);
    const dir = await tempDir();
    const charts = new RemoteCharts({ dir });
    const wrong = `sha256:${"0".repeat(64)}`;
    await expect(charts.ensure(`${http.url}/chart.tgz`, wrong)).rejects.toThrow(
      `chart ${http.url}/chart.tgz has digest sha256:${sha256Hex(archive)}, the plan pins ${wrong}`,
    );
    await expect(charts.ensure(`${http.url}/chart.tgz`, "sha256:ABC")).rejects.toThrow('digest "sha256:ABC" is not sha256:<64 lowercase hex digits>');
    await expect(charts.ensure(`${http.url}/missing.tgz`, wrong)).rejects.toThrow(`cannot download chart ${http.url}/missing.tgz: GET ${http.url}/missing.tgz: HTTP 404`);
    // The download's own failure is the cause, a ChartError too; a log line keeps both.
    await expect(charts.ensure(`${http.url}/missing.tgz`, wrong)).rejects.toMatchObject({ code: ChartError.code, cause: { code: ChartError.code } });
    await expect(charts.ensure(`${http.url}/chart.tgz`, wrong)).rejects.toBeInstanceOf(ChartError);
    expect(await readdir(dir).catch(() => [])).toEqual([]);
  });

  it("does not trust a cache file that no longer matches its digest", async () => {
    const archive = new Uint8Array(gzipSync(Buffer.from("chart bytes")));
    const digest = `sha256:${sha256Hex(archive)}`;
    const dir = await tempDir();
    await writeFile(join(dir, `sha256-${digest.slice(7)}.tgz`), "tampered");
    expect(await new RemoteCharts({ dir }).get(digest)).toBeNull();
  });
});
