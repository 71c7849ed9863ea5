import { execFile } from "node:child_process";
import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";

/**
 * `npm run deps` (dependency-cruiser with .dependency-cruiser.cjs, part of `npm test`) fails on
 * what ADR 0010 forbids: shown on small trees made on purpose, checked with the project's own
 * configuration, as `npm run deps` runs it.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CRUISE = path.join(ROOT, "node_modules/dependency-cruiser/bin/dependency-cruise.mjs");
const run = promisify(execFile);

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

async function cruise(files: Record<string, string>): Promise<{ code: number; out: string }> {
  dir = await mkdtemp(path.join(tmpdir(), "gitops-broker-deps-"));
  await copyFile(path.join(ROOT, ".dependency-cruiser.cjs"), path.join(dir, ".dependency-cruiser.cjs"));
  await writeFile(path.join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", strict: true } }));
  for (const [file, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), text);
  }
  try {
    const { stdout } = await run(process.execPath, [CRUISE, "src", "--config", ".dependency-cruiser.cjs"], { cwd: dir });
    return { code: 0, out: stdout };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : 1, out: `${e.stdout ?? ""}${e.stderr ?? ""}` };
  }
}

describe("the import rules of src/ (npm run deps)", () => {
  it("pass on a tree that keeps them", async () => {
    const { code, out } = await cruise({
      "src/a/index.ts": 'export { inner } from "./inner.js";\n',
      "src/a/inner.ts": "export const inner = 1;\n",
      "src/b/index.ts": 'import { inner } from "../a/index.js";\nexport const b = inner;\n',
    });
    expect(out).toMatch(/no dependency violations found/);
    expect(code).toBe(0);
  }, 60_000);

  it("fail on a cycle between files, a cycle between folders, and a folder entered past its index.ts", async () => {
    const { code, out } = await cruise({
      "src/a/index.ts": 'import { b } from "../b/index.js";\nexport const a = () => b;\n',
      "src/b/index.ts": 'import { a } from "../a/index.js";\nexport const b = () => a;\n',
      "src/c/index.ts": 'import { inner } from "../d/inner.js";\nexport const c = inner;\n',
      "src/d/index.ts": 'export { inner } from "./inner.js";\n',
      "src/d/inner.ts": "export const inner = 1;\n",
    });
    expect(code).not.toBe(0);
    expect(out).toMatch(/no-file-cycle/);
    expect(out).toMatch(/no-folder-cycle/);
    expect(out).toMatch(/enter-a-folder-through-its-index: src\/c\/index\.ts → src\/d\/inner\.ts/);
  }, 60_000);

  it("fail when src/kube imports a component other than src/errors and src/catalog", async () => {
    const { code, out } = await cruise({
      "src/errors/index.ts": "export class KubeApiError extends Error {}\n",
      "src/catalog/index.ts": "export type ClusterEntry = { id: string };\n",
      "src/status-watcher/index.ts": "export const watch = 1;\n",
      "src/kube/index.ts":
        'import { KubeApiError } from "../errors/index.js";\nimport type { ClusterEntry } from "../catalog/index.js";\nimport { watch } from "../status-watcher/index.js";\nexport const k = (c: ClusterEntry) => [KubeApiError, watch, c];\n',
    });
    expect(code).not.toBe(0);
    expect(out).toMatch(/kube-knows-no-component: src\/kube\/index\.ts → src\/status-watcher\/index\.ts/);
    expect(out).not.toMatch(/kube-knows-no-component: src\/kube\/index\.ts → src\/(errors|catalog)\//);
  }, 60_000);
});
