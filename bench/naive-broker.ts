/**
 * `gitops-broker serve` with the naive writer of naive-writer.ts in place of src/gitwriter, for the
 * benchmark's baseline: the same configuration (GITOPS_BROKER_* variables), HTTP app, renderer and
 * scheduler, only the write path differs. Run with `node --import tsx bench/naive-broker.ts`.
 */
import { register } from "node:module";

register(new URL("./naive-hooks.mjs", import.meta.url));
const { main } = await import("../src/cli/main.js");
process.exitCode = await main(["serve"]);
