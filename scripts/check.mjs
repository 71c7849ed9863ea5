// @ts-check
/**
 * `npm run check`: what `tsc --noEmit -p tsconfig.json` and `eslint .` report, from one TypeScript
 * program. Run apart, each builds and type-checks the same program (typescript-eslint's type-aware
 * rules need one); here ESLint is handed the program tsc checked (typescript-eslint's `programs`
 * option), which saves about a third of their CPU (ADR 0019). `npm run typecheck` and
 * `npm run lint` stay the tools' own commands. The same program's files under src/ are then measured
 * for functions over 120 lines (scripts/function-lengths.mjs), and every text file of the project
 * is read for words about how the work on it was organised (scripts/own-words.mjs).
 *
 * Exit code: 1 when any of them reports an error, 2 when the configuration cannot be read.
 */
import { ESLint } from "eslint";
import ts from "typescript";
import { checkFunctionLengths } from "./function-lengths.mjs";
import { ownWordsProblems } from "./own-words.mjs";

const formatHost = {
  getCanonicalFileName: (/** @type {string} */ name) => name,
  getCurrentDirectory: ts.sys.getCurrentDirectory,
  getNewLine: () => ts.sys.newLine,
};

/** @type {ts.Diagnostic[]} */
const configProblems = [];
const parsed = ts.getParsedCommandLineOfConfigFile("tsconfig.json", { noEmit: true }, {
  ...ts.sys,
  onUnRecoverableConfigFileDiagnostic: (d) => configProblems.push(d),
});
if (parsed === undefined) {
  process.stderr.write(ts.formatDiagnostics(configProblems, formatHost));
  process.exit(2);
}

const program = ts.createProgram({
  rootNames: parsed.fileNames,
  options: parsed.options,
  projectReferences: parsed.projectReferences,
  configFileParsingDiagnostics: parsed.errors,
});
// What tsc reports with --noEmit: the configuration's, the options', then every file's.
const diagnostics = ts.getPreEmitDiagnostics(program);
if (diagnostics.length > 0) {
  const format = process.stdout.isTTY ? ts.formatDiagnosticsWithColorAndContext : ts.formatDiagnostics;
  process.stdout.write(format(diagnostics, formatHost));
  process.stdout.write(`\ntsc: ${diagnostics.length} error(s)\n`);
}

// The override replaces eslint.config.js's `projectService` for the .ts files with the program
// above; a .ts file that tsconfig.json does not include fails to parse, as it does there.
const eslint = new ESLint({
  overrideConfig: { languageOptions: { parserOptions: { projectService: false, programs: [program] } } },
});
const results = await eslint.lintFiles(["."]);
const formatter = await eslint.loadFormatter("stylish");
process.stdout.write(await formatter.format(results));

const lintErrors = results.reduce((sum, r) => sum + r.errorCount + r.fatalErrorCount, 0);

/** @type {string[]} */
let tooLong;
try {
  tooLong = checkFunctionLengths(process.cwd(), program.getSourceFiles());
} catch (error) {
  // The allowlist cannot be read: configuration.
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
}
if (tooLong.length > 0) process.stdout.write(`${tooLong.join("\n")}\n\nfunction lengths: ${tooLong.length} problem(s)\n`);

const words = ownWordsProblems(process.cwd());
if (words.length > 0) process.stdout.write(`${words.join("\n")}\n\nown words: ${words.length} problem(s)\n`);

if (diagnostics.length > 0 || lintErrors > 0 || tooLong.length > 0 || words.length > 0) process.exitCode = 1;
