import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ownWordsProblems } from "../../scripts/own-words.mjs";
import { trackedTempDir } from "../support/processes.js";

/**
 * scripts/own-words.mjs (run by `npm run check`): the forms that speak of how the work was
 * organised are refused wherever they are planted, and the project's own references, another
 * project's public issues and the technical words that look alike pass. The planted text is
 * put together here, so that this file does not use the forms it plants.
 */

/** A project of `files` (path → content) in a temporary directory. */
async function project(files: Record<string, string>): Promise<string> {
  const dir = await trackedTempDir("own-words-");
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), content);
  }
  return dir;
}

const SESSION = "sess" + "ion";
const ISSUE = "iss" + "ue";
const HELPER = "hel" + "per";
const HASH = "#";
const ENGINEERS = "engin" + "eers";

describe("own words", () => {
  it("finds each refused form, in code, tests, docs and ADRs, with its file and line", async () => {
    const dir = await project({
      "src/a.ts": `// fixed in ${SESSION} 9\nexport const a = 1;\n`,
      "test/b.test.ts": `\n\n// ${ISSUE} 14, case 11\n`,
      "docs/adr/0001-x.md": `# 1\nStatus: accepted (${ISSUE} ${HASH}12)\nMeasured at the end of this ${SESSION}.\n`,
      "docs/c.md": `${HELPER}-3 measured it; see ${HASH}29. Figures of ${SESSION}s 6-9. Run beside other ${ENGINEERS}' tests.\n`,
      "bench/d.ts": `/** ${HELPER} 2 wrote this */\n`,
    });
    const problems = ownWordsProblems(dir);
    expect(problems.map((p) => p.replace(/ speaks of .*$/, ""))).toEqual([
      `bench/d.ts:1: "${HELPER} 2"`,
      `docs/adr/0001-x.md:2: "${ISSUE} ${HASH}1"`,
      `docs/adr/0001-x.md:2: "${HASH}12"`,
      `docs/adr/0001-x.md:3: "this ${SESSION}"`,
      `docs/c.md:1: "${SESSION}s 6"`,
      `docs/c.md:1: "${HELPER}-3"`,
      `docs/c.md:1: "${HASH}29"`,
      `docs/c.md:1: "other ${ENGINEERS}"`,
      `src/a.ts:1: "${SESSION} 9"`,
      `test/b.test.ts:3: "${ISSUE} 1"`,
    ]);
    expect(problems[0]).toMatch(/\(write instead: /);
  });

  it("allows ADRs, dates, commits, other projects' public issues and the technical words", async () => {
    const dir = await project({
      "docs/ok.md": [
        "Decided in ADR 0019 (2026-11-27, b2eab3f); Flux's fluxcd/flux2#5470 and ajv-validator/ajv#2209.",
        "Service Fabrik stored it (cloudfoundry/service-fabrik-broker#1493).",
        "See https://github.com/golang/go/issues/28975 and the heading [x](#push-pacing).",
        "Handlebars helpers, a test helper, git's credential helper; an HTTP session; issues found: none.",
        "A colour #1a2b3c, one #1 item.",
      ].join("\n"),
      "node_modules/x/readme.md": `${SESSION} 1\n`,
      "dist/y.js": `// ${ISSUE} 2\n`,
      "package-lock.json": `"${HASH}12"\n`,
      "wasm/z.bin": Buffer.concat([Buffer.from([0]), Buffer.from(`${SESSION} 3`)]).toString("latin1"),
    });
    expect(ownWordsProblems(dir)).toEqual([]);
  });
});
