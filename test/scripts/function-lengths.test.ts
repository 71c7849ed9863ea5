import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { functionLengths, isMeasured, judge, type AllowEntry, type FunctionLength } from "../../scripts/function-lengths.mjs";
import { PROCESS_TEST_TIMEOUT_MS, runProcess, trackedTempDir } from "../support/processes.js";

/**
 * scripts/function-lengths.mjs: what it measures and names, how the allowlist is judged, and the
 * command on a project of a few files (its place in `npm test` is in check.test.ts).
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const SCRIPT = path.join(ROOT, "scripts/function-lengths.mjs");

/** A function declaration of exactly `lines` lines (lines >= 4). */
const functionOf = (name: string, lines: number): string =>
  [`export function ${name}(): number {`, "  let n = 0;", ...Array<string>(lines - 4).fill("  n += 1;"), "  return n;", "}"].join("\n");

const parse = (text: string) => ts.createSourceFile("x.ts", text, ts.ScriptTarget.Latest, true);

describe("functionLengths", () => {
  it("measures every kind of function from its first line to its last, named by where it sits", () => {
    const text = [
      "/** The doc comment is not counted. */",
      "export function outer(): () => number {",
      "  const inner = (): number => {",
      "    return 1;",
      "  };",
      "  class Box {",
      "    constructor() {}",
      "    get value(): number {",
      "      return 1;",
      "    }",
      "    method(): void {}",
      "  }",
      "  const o = { prop: function () { return 2; }, short() {} };",
      "  [new Box(), o].map((x) => x);",
      "  return inner;",
      "}",
    ].join("\n");
    const file = "src/x.ts";
    expect(functionLengths(parse(text), file)).toEqual([
      { file, name: "outer", line: 2, lines: 15 },
      { file, name: "outer.inner", line: 3, lines: 3 },
      { file, name: "outer.Box.constructor", line: 7, lines: 1 },
      { file, name: "outer.Box.value", line: 8, lines: 3 },
      { file, name: "outer.Box.method", line: 11, lines: 1 },
      { file, name: "outer.prop", line: 13, lines: 1 },
      { file, name: "outer.short", line: 13, lines: 1 },
      { file, name: "outer.(anonymous)", line: 14, lines: 1 },
    ]);
  });

  it("counts the lines of the generated function the tests use", () => {
    expect(functionLengths(parse(functionOf("f", 121)), "src/f.ts")).toEqual([{ file: "src/f.ts", name: "f", line: 1, lines: 121 }]);
  });
});

describe("isMeasured", () => {
  it("measures the sources under src/, not tests, testdata, declarations or generated modules", () => {
    expect(isMeasured("src/a.ts")).toBe(true);
    expect(isMeasured("src/status-watcher/kube-cache.ts")).toBe(true);
    for (const file of ["src/a.test.ts", "src/catalog/document-validators.generated.ts", "src/catalog/testdata/x.ts", "src/a.d.ts", "test/a.ts", "bench/a.ts", "scripts/check.mjs"]) {
      expect(isMeasured(file), file).toBe(false);
    }
  });
});

describe("judge", () => {
  const long: FunctionLength = { file: "src/a.ts", name: "outer", line: 3, lines: 121 };
  const fits: FunctionLength = { file: "src/a.ts", name: "fits", line: 200, lines: 120 };
  const entry: AllowEntry = { file: "src/a.ts", function: "outer", adr: "docs/adr/0001-x.md" };
  const adrs = (texts: Record<string, string>) => (adr: string) => texts[adr];

  it("fails a function over the limit, not one at it", () => {
    const { over, problems } = judge([long, fits], [], adrs({}));
    expect(over).toEqual([long]);
    expect(problems).toEqual([]);
  });

  it("allows a function that an entry lists with an ADR that names it", () => {
    const { long: listed, over, problems } = judge([long, fits], [entry], adrs({ "docs/adr/0001-x.md": "`outer` is a table." }));
    expect(over).toEqual([]);
    expect(listed).toEqual([{ ...long, allowed: entry }]);
    expect(problems).toEqual([]);
  });

  it("refuses an entry whose ADR does not exist, or does not name the function", () => {
    expect(judge([long], [entry], adrs({})).problems).toEqual([
      "scripts/function-lengths.allow.json: src/a.ts outer: docs/adr/0001-x.md does not exist",
    ]);
    expect(judge([long], [entry], adrs({ "docs/adr/0001-x.md": "about something else" })).problems).toEqual([
      "scripts/function-lengths.allow.json: src/a.ts outer: docs/adr/0001-x.md does not name outer",
    ]);
  });

  it("refuses an entry for a function that is no longer over the limit, or not there", () => {
    const shortened = { ...long, lines: 120 };
    const text = adrs({ "docs/adr/0001-x.md": "outer" });
    const stale = "scripts/function-lengths.allow.json: src/a.ts outer: no such function over 120 lines any more; remove the entry";
    expect(judge([shortened], [entry], text).problems).toEqual([stale]);
    expect(judge([{ ...long, file: "src/b.ts" }], [entry], text).problems).toEqual([stale]);
  });

  it("takes another limit", () => {
    expect(judge([long, fits], [], adrs({}), 100).over).toEqual([long, fits]);
  });
});

describe("node scripts/function-lengths.mjs", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  async function project(files: Record<string, string>): Promise<string> {
    const dir = await trackedTempDir("gitops-broker-function-lengths-");
    for (const [name, content] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
      await writeFile(path.join(dir, name), content);
    }
    return dir;
  }
  const run = (cwd: string) => runProcess(process.execPath, [SCRIPT], { cwd, ceilingMs: PROCESS_TEST_TIMEOUT_MS });
  const sources = {
    "src/long.ts": `${functionOf("long", 121)}\n\n${functionOf("fits", 120)}\n`,
    // Not measured: a test and a generated module.
    "src/long.test.ts": `${functionOf("test", 300)}\n`,
    "src/table.generated.ts": `${functionOf("table", 300)}\n`,
  };

  it("lists a function over 120 lines and exits 1", async () => {
    const dir = await project(sources);
    expect(await run(dir)).toEqual({ code: 1, stdout: " 121  src/long.ts:1  long  OVER THE LIMIT\n1 function(s) over 120 lines, 1 not allowed\n", stderr: "" });
  });

  it("exits 0 when the allowlist names it and an ADR that says why", async () => {
    const dir = await project({
      ...sources,
      "scripts/function-lengths.allow.json": JSON.stringify([{ file: "src/long.ts", function: "long", adr: "docs/adr/0001-long.md", note: "one table" }]),
      "docs/adr/0001-long.md": "# 1. Long\n\n`long` is one table of every case.\n",
    });
    expect(await run(dir)).toEqual({
      code: 0,
      stdout: " 121  src/long.ts:1  long  allowed by docs/adr/0001-long.md (one table)\n1 function(s) over 120 lines, 0 not allowed\n",
      stderr: "",
    });
  });

  it("exits 2 on an allowlist it cannot use", async () => {
    const dir = await project({ ...sources, "scripts/function-lengths.allow.json": JSON.stringify([{ file: "src/long.ts", function: "long" }]) });
    expect(await run(dir)).toEqual({ code: 2, stdout: "", stderr: "scripts/function-lengths.allow.json[0].adr must be a non-empty string\n" });
  });
});
