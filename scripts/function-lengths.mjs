// @ts-check
/**
 * Function lengths in src/ (ADR 0029: no function in src/ longer than about 120 lines unless an ADR
 * says why). Every function, method, accessor, constructor and arrow function of src/**\/*.ts
 * (tests, testdata and *.generated.ts excepted) is measured in lines, from the line its
 * declaration starts on (its doc comment not counted) to the line it ends on, both included; a
 * function's length includes the functions nested in it.
 *
 * A function over LIMIT lines fails the check unless scripts/function-lengths.allow.json lists it:
 *   [{ "file": "src/x/y.ts", "function": "outer.inner", "adr": "docs/adr/NNNN-title.md", "note": "..." }]
 * The ADR must exist and name the function. An entry that matches no long function any more fails
 * too, so that the list only shrinks with the code.
 *
 * `node scripts/function-lengths.mjs [--limit N]` lists every function over the limit, allowed or
 * not (exit 1 if one is not, 2 if the allowlist cannot be read); `npm test`'s check step
 * (scripts/check.mjs) runs the same check on the source files of its TypeScript program.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

export const LIMIT = 120;
export const ALLOWLIST = "scripts/function-lengths.allow.json";

/** @typedef {{ file: string; name: string; line: number; lines: number }} FunctionLength */
/** @typedef {{ file: string; function: string; adr: string; note?: string }} AllowEntry */

/** Whether `file` (relative to the project root, `/`-separated) is measured. */
export function isMeasured(file) {
  return (
    file.startsWith("src/") &&
    file.endsWith(".ts") &&
    !file.endsWith(".d.ts") &&
    !file.endsWith(".test.ts") &&
    !file.endsWith(".generated.ts") &&
    !file.split("/").includes("testdata")
  );
}

/** @param {ts.Node} node */
function isFunctionLike(node) {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isFunctionExpression(node) ||
    ts.isArrowFunction(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node)
  );
}

/** @param {ts.PropertyName | ts.BindingName} name @param {ts.SourceFile} sourceFile */
function nameText(name, sourceFile) {
  return ts.isIdentifier(name) || ts.isStringLiteral(name) || ts.isNumericLiteral(name) || ts.isPrivateIdentifier(name)
    ? name.text
    : name.getText(sourceFile);
}

/**
 * The name a function or class goes by: its own, else the variable, property or class field it is
 * assigned to; "(anonymous)" for a callback.
 * @param {ts.Node} node @param {ts.SourceFile} sourceFile
 */
function ownName(node, sourceFile) {
  if (ts.isConstructorDeclaration(node)) return "constructor";
  const named = /** @type {{ name?: ts.PropertyName }} */ (node).name;
  if (named !== undefined) return nameText(named, sourceFile);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) {
    return nameText(parent.name, sourceFile);
  }
  return "(anonymous)";
}

/**
 * Every function of `sourceFile` with its qualified name: the names of the enclosing classes and
 * functions, then its own, joined with dots (`createWatchCache.watchOnce.(anonymous)`).
 * @param {ts.SourceFile} sourceFile @param {string} file the name to report
 * @returns {FunctionLength[]}
 */
export function functionLengths(sourceFile, file) {
  /** @type {FunctionLength[]} */
  const found = [];
  /** @param {ts.Node} node @param {string[]} scope */
  const visit = (node, scope) => {
    let inner = scope;
    if (isFunctionLike(node)) {
      inner = [...scope, ownName(node, sourceFile)];
      const start = sourceFile.getLineAndCharacterOfPosition(node.getStart(sourceFile)).line;
      const end = sourceFile.getLineAndCharacterOfPosition(node.getEnd()).line;
      found.push({ file, name: inner.join("."), line: start + 1, lines: end - start + 1 });
    } else if (ts.isClassDeclaration(node) || ts.isClassExpression(node)) {
      inner = [...scope, ownName(node, sourceFile)];
    }
    ts.forEachChild(node, (child) => visit(child, inner));
  };
  visit(sourceFile, []);
  return found;
}

/**
 * Reads the allowlist (none: empty). Throws an Error saying what is wrong with it when it cannot be
 * used: not JSON, not an array of entries, an entry without file, function or adr.
 * @param {string} root @returns {AllowEntry[]}
 */
export function readAllowlist(root) {
  const file = path.join(root, ALLOWLIST);
  if (!existsSync(file)) return [];
  /** @type {unknown} */
  let parsed;
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new Error(`${ALLOWLIST}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  if (!Array.isArray(parsed)) throw new Error(`${ALLOWLIST}: must be an array of {file, function, adr, note?}`);
  const keys = new Set(["file", "function", "adr", "note"]);
  return parsed.map((entry, i) => {
    const at = `${ALLOWLIST}[${i}]`;
    if (typeof entry !== "object" || entry === null) throw new Error(`${at}: must be an object {file, function, adr, note?}`);
    for (const key of ["file", "function", "adr"]) {
      if (typeof entry[key] !== "string" || entry[key] === "") throw new Error(`${at}.${key} must be a non-empty string`);
    }
    if (entry.note !== undefined && typeof entry.note !== "string") throw new Error(`${at}.note must be a string`);
    const unknown = Object.keys(entry).filter((key) => !keys.has(key));
    if (unknown.length > 0) throw new Error(`${at}: unknown key ${unknown.join(", ")}`);
    return /** @type {AllowEntry} */ (entry);
  });
}

/**
 * The check: which functions of `functions` are over `limit` and not allowed, and which allowlist
 * entries are wrong (their ADR missing or silent about the function) or stale (no such long
 * function). `readAdr` returns an ADR's text, undefined when it does not exist.
 * @param {FunctionLength[]} functions @param {AllowEntry[]} allowlist
 * @param {(adr: string) => string | undefined} readAdr @param {number} [limit]
 */
export function judge(functions, allowlist, readAdr, limit = LIMIT) {
  const long = functions.filter((f) => f.lines > limit);
  const allowedBy = (/** @type {FunctionLength} */ f) => allowlist.find((e) => e.file === f.file && e.function === f.name);
  /** @type {string[]} */
  const problems = [];
  for (const entry of allowlist) {
    const where = `${ALLOWLIST}: ${entry.file} ${entry.function}`;
    const text = readAdr(entry.adr);
    if (text === undefined) problems.push(`${where}: ${entry.adr} does not exist`);
    else if (!text.includes(entry.function)) problems.push(`${where}: ${entry.adr} does not name ${entry.function}`);
    if (!long.some((f) => f.file === entry.file && f.name === entry.function)) {
      problems.push(`${where}: no such function over ${limit} lines any more; remove the entry`);
    }
  }
  return {
    long: long.map((f) => ({ ...f, allowed: allowedBy(f) })),
    over: long.filter((f) => allowedBy(f) === undefined),
    problems,
  };
}

/**
 * Runs the check on the project at `root` for `sourceFiles` (those isMeasured are measured) and
 * says what fails; empty when nothing does.
 * @param {string} root @param {readonly ts.SourceFile[]} sourceFiles @param {number} [limit]
 * @returns {string[]}
 */
export function checkFunctionLengths(root, sourceFiles, limit = LIMIT) {
  const functions = measure(root, sourceFiles);
  const { over, problems } = judge(functions, readAllowlist(root), (adr) => readText(root, adr), limit);
  return [
    ...over.map((f) => `${f.file}:${f.line} ${f.name} is ${f.lines} lines long (limit ${limit}): split it, or list it in ${ALLOWLIST} with the ADR that says why`),
    ...problems,
  ];
}

/** @param {string} root @param {readonly ts.SourceFile[]} sourceFiles */
function measure(root, sourceFiles) {
  return sourceFiles.flatMap((sourceFile) => {
    const file = path.relative(root, sourceFile.fileName).split(path.sep).join("/");
    return isMeasured(file) ? functionLengths(sourceFile, file) : [];
  });
}

/** @param {string} root @param {string} file */
function readText(root, file) {
  const full = path.resolve(root, file);
  return existsSync(full) ? readFileSync(full, "utf8") : undefined;
}

/** The source files under `root`/src, parsed without a program. @param {string} root */
function parseSources(root) {
  const files = readdirSync(path.join(root, "src"), { recursive: true, encoding: "utf8" })
    .map((name) => path.join(root, "src", name))
    .filter((full) => isMeasured(path.relative(root, full).split(path.sep).join("/")))
    .sort();
  return files.map((full) => ts.createSourceFile(full, readFileSync(full, "utf8"), ts.ScriptTarget.Latest, true));
}

function main() {
  const args = process.argv.slice(2);
  const at = args.indexOf("--limit");
  const limit = at === -1 ? LIMIT : Number(args[at + 1]);
  if (!Number.isInteger(limit) || limit < 1 || args.length !== (at === -1 ? 0 : 2)) {
    process.stderr.write("usage: node scripts/function-lengths.mjs [--limit N]\n");
    process.exit(2);
  }
  const root = process.cwd();
  /** @type {AllowEntry[]} */
  let allowlist;
  try {
    allowlist = readAllowlist(root);
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  }
  const { long, problems } = judge(measure(root, parseSources(root)), allowlist, (adr) => readText(root, adr), limit);
  for (const f of long.sort((a, b) => b.lines - a.lines)) {
    const verdict = f.allowed ? `allowed by ${f.allowed.adr}${f.allowed.note ? ` (${f.allowed.note})` : ""}` : "OVER THE LIMIT";
    process.stdout.write(`${String(f.lines).padStart(4)}  ${f.file}:${f.line}  ${f.name}  ${verdict}\n`);
  }
  for (const problem of problems) process.stdout.write(`${problem}\n`);
  process.stdout.write(`${long.length} function(s) over ${limit} lines, ${long.filter((f) => !f.allowed).length} not allowed\n`);
  if (problems.length > 0 || long.some((f) => !f.allowed)) process.exitCode = 1;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
