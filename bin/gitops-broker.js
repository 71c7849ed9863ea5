#!/usr/bin/env node
// Runs the TypeScript sources directly through tsx's loader: no build step between a clone and a
// running broker.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
