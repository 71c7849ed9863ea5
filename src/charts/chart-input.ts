import { lstat, readdir, readFile, realpath, stat } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { ChartError } from "../errors/index.js";
import type { TreeReader } from "../gitwriter/index.js";

/** A chart as the module takes it: the files of its directory, or the bytes of its .tgz. */
export type ChartInput = { files: ChartFile[] } | { archive: Uint8Array };

export interface ChartFile {
  /** Relative to the chart's directory, '/' separated. */
  name: string;
  data: Uint8Array;
}

/** gzip's magic number: what Helm checks before reading a file as a chart archive. */
export function isGzip(data: Uint8Array): boolean {
  return data.length >= 3 && data[0] === 0x1f && data[1] === 0x8b && data[2] === 0x08;
}

/**
 * The chart at a repository path: a `.tgz` file, or a directory read recursively. Null when the
 * path is neither.
 */
export async function chartFromTree(tree: TreeReader, path: string): Promise<ChartInput | null> {
  const clean = path.replace(/^\/+|\/+$/g, "");
  const entries = await tree.list(clean);
  if (entries === null) {
    const data = await tree.readFile(clean);
    return data === null ? null : { archive: data };
  }
  const files: ChartFile[] = [];
  const walk = async (dir: string, prefix: string): Promise<void> => {
    for (const e of (await tree.list(dir)) ?? []) {
      const full = `${dir}/${e.name}`;
      const name = prefix === "" ? e.name : `${prefix}/${e.name}`;
      if (e.type === "tree") await walk(full, name);
      else {
        const data = await tree.readFile(full);
        if (data !== null) files.push({ name, data });
      }
    }
  };
  await walk(clean, "");
  return { files };
}

/**
 * The chart at a local path (render-chart): a directory read recursively (symbolic links
 * followed, as Helm does), or a file that must be a gzipped archive. Throws Helm's messages.
 */
export async function chartFromPath(path: string): Promise<ChartInput> {
  const info = await stat(path).catch((e: unknown) => {
    throw new ChartError(`path "${path}" not found`, { cause: e });
  });
  if (!info.isDirectory()) {
    const data = new Uint8Array(await readFile(path));
    if (!isGzip(data)) {
      if (path.endsWith(".yml") || path.endsWith(".yaml")) {
        throw new ChartError(`file '${path}' seems to be a YAML file, but expected a gzipped archive`);
      }
      throw new ChartError(`file '${path}' does not appear to be a gzipped archive`);
    }
    return { archive: data };
  }
  const root = await realpath(path);
  const files: ChartFile[] = [];
  const walk = async (dir: string): Promise<void> => {
    const names = (await readdir(dir)).sort();
    for (const n of names) {
      const full = join(dir, n);
      const l = await lstat(full);
      const s = l.isSymbolicLink() ? await stat(full) : l;
      if (s.isDirectory()) await walk(full);
      else if (s.isFile()) files.push({ name: relative(root, full).split(sep).join("/"), data: new Uint8Array(await readFile(full)) });
      else throw new ChartError(`cannot load irregular file ${full} as it has file mode type bits set`);
    }
  };
  await walk(root);
  return { files };
}
