import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTempDir } from "../../test/support/git-fixtures.js";
import { ConfigError } from "../errors/index.js";
import { createHttpServer } from "../broker/index.js";
import { createGitWriter } from "../gitwriter/index.js";
import { silentLogger } from "../log/index.js";
import { loadConfig } from "./index.js";

/**
 * Bad values at every key of the configuration: each is either taken or refused as a
 * ConfigError naming that key (exit 2 with the key, README "Command line"), never another error;
 * and what is taken, the git writer built from it at start-up takes too (a branch the loader took
 * and the writer refused was a TypeError at start, exit 1 with a stack). The keys come from the
 * loaded defaults, so a new key is fuzzed without a change here.
 */

let tmp: string;
beforeAll(async () => {
  tmp = await createTempDir("gitops-broker-config-fuzz-");
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** Every leaf of an object, as its path of keys. */
function leaves(value: unknown, at: string[] = []): string[][] {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return [at];
  return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => leaves(v, [...at, k]));
}

/** A document holding `value` at `keys`. */
function at(keys: string[], value: unknown): Record<string, unknown> {
  return keys.reduceRight<unknown>((inner, key) => ({ [key]: inner }), value) as Record<string, unknown>;
}

/** Values no key should take silently into a crash: wrong types, empty, negative, huge, options. */
const BAD_VALUES: unknown[] = [
  "", "-x", "bad..branch", " ", "a\nb", -1, 0, 1e300, 3.5, true, [], {}, ["x"], { x: 1 }, null,
  // Lists of address ranges (http.trustedProxies) that are none.
  ["10.0.0.0/33"], ["::/129"], ["fe80::1%eth0"], ["10.0.0.0/8", ""], ["10.0.0.0/8 "], ["localhost"], [8],
];

describe("a fuzz of bad values at every key", () => {
  it("each value is taken, or refused as a ConfigError naming its key, and never throws anything else", async () => {
    const defaults = await loadConfig({ cwd: tmp, env: {} });
    const keys = leaves(defaults).filter((k) => k.length > 0);
    expect(keys.length).toBeGreaterThan(30);
    const unexpected: string[] = [];
    let refused = 0;
    for (const keyPath of keys) {
      for (const value of BAD_VALUES) {
        const file = path.join(tmp, "fuzz.yaml");
        await writeFile(file, stringify(at(keyPath, value)));
        const outcome = await loadConfig({ cwd: tmp, env: {}, argv: ["--config", file] }).then(
          () => "taken",
          (error: unknown) => error,
        );
        if (outcome === "taken") {
          // What the loader takes, the components built from it at start-up take too: the git
          // writer's own check and the OSB server's (serve passes these fields as they are) must
          // find nothing.
          const config = await loadConfig({ cwd: tmp, env: {}, argv: ["--config", file] });
          try {
            createGitWriter({
              gitdir: path.join(tmp, "work.git"),
              remoteUrl: config.git.remote ?? path.join(tmp, "remote.git"),
              branch: config.git.branch,
              author: config.git.author,
              logger: silentLogger(),
              remoteTimeoutMs: config.git.pushTimeoutSeconds * 1000,
              activityTimeoutMs: config.git.activityTimeoutSeconds * 1000,
            });
            // The OSB server's socket bounds, trusted proxies included.
            createHttpServer(() => undefined, config.http, { logger: silentLogger() }).close();
          } catch (error) {
            unexpected.push(`${keyPath.join(".")} = ${JSON.stringify(value)}: taken by the loader, refused at start-up: ${String(error)}`);
          }
          continue;
        }
        const where = `${keyPath.join(".")} = ${JSON.stringify(value)}`;
        if (!(outcome instanceof ConfigError)) {
          unexpected.push(`${where}: ${String(outcome)}`);
          continue;
        }
        refused++;
        const key = keyPath.join(".");
        // At the key, or at the key a constraint between two keys is reported at, naming this one.
        const named = outcome.problems.some((p) => p.path === key || p.path.startsWith(`${key}.`) || key.startsWith(p.path) || p.message.includes(key));
        if (!named) unexpected.push(`${where}: problems name ${outcome.problems.map((p) => p.path).join(", ")}`);
      }
    }
    expect(unexpected).toEqual([]);
    expect(refused).toBeGreaterThan(keys.length * 5);
  });
});
