import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { PROCESS_TEST_TIMEOUT_MS, runProcess, trackedTempDir } from "../support/processes.js";

/**
 * scripts/check.mjs (`npm test`'s typecheck, lint and function lengths in one program) on a project
 * of a few files: it must report what tsc, typescript-eslint's type-aware rules and
 * scripts/function-lengths.mjs report, and fail with them.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CHECK = path.join(ROOT, "scripts/check.mjs");

/** A project in a temporary directory: tsconfig.json, a flat ESLint config and `files`. */
async function project(files: Record<string, string>): Promise<string> {
  const dir = await trackedTempDir("gitops-broker-check-");
  const tseslint = pathToFileURL(path.join(ROOT, "node_modules/typescript-eslint/dist/index.js")).href;
  await writeFile(
    path.join(dir, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { strict: true, module: "NodeNext", lib: ["ES2022"], types: [], noEmit: true }, include: ["*.ts", "src/**/*.ts"] }),
  );
  await writeFile(path.join(dir, "package.json"), JSON.stringify({ type: "module" }));
  await writeFile(
    path.join(dir, "eslint.config.js"),
    [
      `import tseslint from ${JSON.stringify(tseslint)};`,
      "export default [",
      "  { ignores: ['eslint.config.js'] },",
      "  { files: ['**/*.ts'], languageOptions: { parser: tseslint.parser, parserOptions: { projectService: true } },",
      "    plugins: { '@typescript-eslint': tseslint.plugin }, rules: { '@typescript-eslint/no-floating-promises': 'error' } },",
      "];",
    ].join("\n"),
  );
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), content);
  }
  return dir;
}

const run = (cwd: string) => runProcess(process.execPath, [CHECK], { cwd, ceilingMs: PROCESS_TEST_TIMEOUT_MS });

describe("scripts/check.mjs", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("exits 0 and prints nothing for a clean project", async () => {
    const dir = await project({ "ok.ts": "export async function one(): Promise<number> {\n  return 1;\n}\n" });
    expect(await run(dir)).toEqual({ code: 0, stdout: "", stderr: "" });
  });

  it("exits 1 with tsc's error and the type-aware rule's, one each", async () => {
    const dir = await project({
      "ok.ts": "export async function one(): Promise<number> {\n  return 1;\n}\n",
      "bad.ts": 'import { one } from "./ok.js";\n\nexport function bad(): number {\n  one();\n  const n: number = "two";\n  return n;\n}\n',
    });
    const { code, stdout } = await run(dir);
    expect(code).toBe(1);
    expect(stdout).toContain("bad.ts(5,9): error TS2322: Type 'string' is not assignable to type 'number'.");
    expect(stdout).toContain("tsc: 1 error(s)");
    // no-floating-promises knows `one()` is a promise only from the program's types.
    expect(stdout).toMatch(/bad\.ts\n\s+4:3\s+error\s+Promises must be awaited[^\n]*@typescript-eslint\/no-floating-promises/);
    expect(stdout).toContain("1 problem (1 error, 0 warnings)");
  });

  describe("function lengths", () => {
    // 1 + 118 + 1 + 1 lines: one over the limit of 120.
    const LONG = `export function long(): number {\n${"  Math.random();\n".repeat(118)}  return 1;\n}\n`;

    it("exits 1 naming a function in src/ over 120 lines, introduced on purpose", async () => {
      const dir = await project({ "src/long.ts": LONG });
      expect(await run(dir)).toEqual({
        code: 1,
        stdout:
          "src/long.ts:1 long is 121 lines long (limit 120): split it, or list it in scripts/function-lengths.allow.json with the ADR that says why\n" +
          "\nfunction lengths: 1 problem(s)\n",
        stderr: "",
      });
    });

    it("exits 0 once the allowlist names it with an ADR that says why", async () => {
      const dir = await project({
        "src/long.ts": LONG,
        "scripts/function-lengths.allow.json": JSON.stringify([{ file: "src/long.ts", function: "long", adr: "docs/adr/0001-long.md" }]),
        "docs/adr/0001-long.md": "# 1. Long functions\n\n`long` is kept whole: it is one table.\n",
      });
      expect(await run(dir)).toEqual({ code: 0, stdout: "", stderr: "" });
    });
  });

  describe("the error hierarchy rule of eslint.config.js", () => {
    // The project's own rule (its export `errorHierarchy`) in a project of a few files: what it
    // rejects in src/, and what it leaves alone (src/errors, tests, an AggregateError as a cause).
    const ESLINT_CONFIG = [
      `import tseslint from ${JSON.stringify(pathToFileURL(path.join(ROOT, "node_modules/typescript-eslint/dist/index.js")).href)};`,
      `import { errorHierarchy } from ${JSON.stringify(pathToFileURL(path.join(ROOT, "eslint.config.js")).href)};`,
      "export default [",
      "  { ignores: ['eslint.config.js'] },",
      "  { files: ['**/*.ts'], languageOptions: { parser: tseslint.parser, parserOptions: { projectService: true } } },",
      "  errorHierarchy,",
      "];",
    ].join("\n");
    const lines = (...ls: string[]) => `${ls.join("\n")}\n`;

    /** `file:line which` for each no-restricted-syntax error in stylish's output, `which` named by its message. */
    function violations(stdout: string, dir: string): string[] {
      const which: [RegExp, string][] = [
        [/^Throw a class of src\/errors \(one per failure/, "bare Error"],
        [/^Throw a class of src\/errors, not a built-in error kind: InvalidArgumentError/, "built-in kind"],
        [/^An AggregateError is only the cause/, "AggregateError"],
        [/^An error class extends BaseError/, "Error subclass"],
      ];
      const found: string[] = [];
      let file = "";
      for (const line of stdout.split("\n")) {
        if (line.startsWith(dir)) file = path.relative(dir, line).split(path.sep).join("/");
        const m = /^\s+(\d+):\d+\s+error\s+(.*?)\s+no-restricted-syntax$/.exec(line);
        if (m) found.push(`${file}:${m[1]} ${which.find(([re]) => re.test(m[2]!))?.[1] ?? m[2]}`);
      }
      return found;
    }

    it("rejects a bare Error, every built-in error kind and an Error subclass in src/, and leaves alone src/errors, tests and an AggregateError as a cause", async () => {
      const dir = await project({
        "eslint.config.js": ESLINT_CONFIG,
        "src/guard.ts": lines(
          "export function guard(n: number): number {",
          "  if (n < 1) throw new TypeError(`n must be from 1: ${n}`);",
          "  if (n > 9) throw new RangeError(`n must be at most 9: ${n}`);",
          "  return n;",
          "}",
          "export const rejected = (): Promise<never> => Promise.reject(new TypeError(\"no\"));",
          "export const bare = (): Error => new Error(\"bare\");",
          "export class Local extends RangeError {}",
        ),
        "src/kinds.ts": lines(
          "export const kinds: Error[] = [",
          "  new SyntaxError(\"s\"),",
          "  ReferenceError(\"r\"),",
          "  new EvalError(\"e\"),",
          "  URIError(\"u\"),",
          "];",
          "export function fail(errors: Error[]): never {",
          "  throw new AggregateError(errors, \"several\");",
          "}",
        ),
        "src/causes.ts": lines(
          "export function causeOf(errors: Error[]): { cause: unknown } {",
          "  return { cause: errors.length > 1 ? new AggregateError(errors) : errors[0] };",
          "}",
          "export function firstOr(errors: Error[]): unknown {",
          "  const cause = errors.length > 1 ? new AggregateError(errors, \"several underlying errors\") : errors[0];",
          "  return cause;",
          "}",
        ),
        "src/errors/index.ts": lines("export class InvalidArgumentError extends TypeError {}", "export const made = new RangeError(\"the hierarchy's own folder\");"),
        "src/guard.test.ts": lines("export const inTest = new TypeError(\"a test may\");"),
        "other.ts": lines("export const outsideSrc = new TypeError(\"not src/\");"),
      });
      const { code, stdout } = await run(dir);
      expect(code).toBe(1);
      expect(violations(stdout, dir)).toEqual([
        "src/guard.ts:2 built-in kind",
        "src/guard.ts:3 built-in kind",
        "src/guard.ts:6 built-in kind",
        "src/guard.ts:7 bare Error",
        "src/guard.ts:8 Error subclass",
        "src/kinds.ts:2 built-in kind",
        "src/kinds.ts:3 built-in kind",
        "src/kinds.ts:4 built-in kind",
        "src/kinds.ts:5 built-in kind",
        "src/kinds.ts:8 AggregateError",
      ]);
      expect(stdout).toContain("10 problems (10 errors, 0 warnings)");
      expect(stdout).not.toContain("tsc:");
    });
  });
});
