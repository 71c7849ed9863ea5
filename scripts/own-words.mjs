// @ts-check
/**
 * The project speaks of itself: of its code, its ADRs, dates and commits, and of other projects'
 * public issues (`owner/repo#N`), never of how the work on it was organised (numbered sessions or
 * helpers, an issue tracker a reader of the repository cannot see). `npm run check` runs this over
 * every text file of the project (scripts/check.mjs); test/scripts/own-words.test.ts plants each
 * form it refuses and each it allows.
 *
 * Where a reference or a time matters, name an ADR (`ADR 0019`), a date (`2026-11-27`) or a commit.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

/** What is refused, each with what to write instead. */
export const FORMS = [
  { pattern: /\bsessions? +\d/i, instead: "a date or a commit" },
  { pattern: /\b(?:this|that|each|every|another|previous|next|last|earlier|later|same) session\b|\bthe session(?:'s)?\b/i, instead: "a date or a commit" },
  { pattern: /\bhelpers? *-? *\d/i, instead: "a date or a commit" },
  { pattern: /\bissues? +#?\d/i, instead: "an ADR, or owner/repo#N for another project's public issue" },
  // A bare #N: another project's public issue keeps its owner/repo in front.
  { pattern: /(?<![\w.-]+\/[\w.-]+)#\d{2,}\b/, instead: "owner/repo#N, or an ADR" },
  { pattern: /\b(?:other|another) engineers?\b/i, instead: "other work on the machine, other test suites" },
];

/** Directories never read: installed, built, generated at run time, or Git's own. */
const SKIPPED_DIRS = new Set(["node_modules", ".git", "dist", ".gitops-broker", "coverage"]);
/** Files never read: written by tools. */
const SKIPPED_FILES = new Set(["package-lock.json"]);
const MAX_BYTES = 2 << 20;

/**
 * Every line of the text files below `root` that uses a refused form, as `file:line: text (write
 * instead: ...)`, `file` relative to `root`.
 * @param {string} root
 * @returns {string[]}
 */
export function ownWordsProblems(root) {
  /** @type {string[]} */
  const problems = [];
  for (const file of textFiles(root)) {
    const lines = readFileSync(path.join(root, file), "utf8").split("\n");
    lines.forEach((line, i) => {
      for (const { pattern, instead } of FORMS) {
        const match = pattern.exec(line);
        if (match) problems.push(`${file}:${i + 1}: "${match[0]}" speaks of how the work was organised (write instead: ${instead})`);
      }
    });
  }
  return problems;
}

/** @param {string} root @param {string} [dir] @returns {string[]} */
function textFiles(root, dir = "") {
  /** @type {string[]} */
  const files = [];
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const relative = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name)) files.push(...textFiles(root, relative));
    } else if (entry.isFile() && !SKIPPED_FILES.has(entry.name) && isText(path.join(root, relative))) {
      files.push(relative.split(path.sep).join("/"));
    }
  }
  return files.sort();
}

/** Not too large, and no NUL byte in its first 8 kB. @param {string} file */
function isText(file) {
  if (statSync(file).size > MAX_BYTES) return false;
  return !readFileSync(file).subarray(0, 8192).includes(0);
}
