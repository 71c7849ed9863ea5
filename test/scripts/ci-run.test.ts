import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { EVENT_CEILING_MS, runProcess } from "../support/processes.js";

/**
 * CI runs the README's test command as a newcomer types it (.ci/run reads it from the README), so
 * what the README promises is what CI proves.
 */

const ROOT = path.resolve(import.meta.dirname, "../..");

describe(".ci/run", () => {
  it("runs the README's test command, the line of its first sh block that runs npm test", async () => {
    const readme = await readFile(path.join(ROOT, "README.md"), "utf8");
    const block = /^```sh\n([\s\S]*?)^```$/m.exec(readme)?.[1] ?? "";
    const line = block.split("\n").find((l) => /\bnpm test\b/.test(l)) ?? "";
    const command = line.replace(/\s*#.*$/, "");
    expect(command).toBe("npm ci && npm test");
    const { code, stdout, stderr } = await runProcess(path.join(ROOT, ".ci/run"), ["--print"], { cwd: ROOT, ceilingMs: EVENT_CEILING_MS });
    expect({ code, stdout, stderr }).toEqual({ code: 0, stdout: `${command}\n`, stderr: "" });
  });
});
