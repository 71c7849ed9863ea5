import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";

/** The README's source map names every folder of src/, and no folder that is gone. */

const ROOT = path.resolve(import.meta.dirname, "../..");

describe("the README's source map", () => {
  it("lists each folder of src/ once", async () => {
    const readme = await readFile(path.join(ROOT, "README.md"), "utf8");
    const table = readme.slice(readme.indexOf("| folder | what it holds |"));
    const rows = table.split("\n").filter((line) => line.trim().startsWith("| `"));
    const listed = rows.flatMap((row) => [...row.split("|")[1]!.matchAll(/`([^`/]+)\/`/g)].map((m) => m[1]!));
    const folders = (await readdir(path.join(ROOT, "src"), { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
    expect([...listed].sort()).toEqual([...folders].sort());
  });
});
