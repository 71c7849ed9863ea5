#!/usr/bin/env node
// Runs the compiled build (`npm run build`: dist/) when it is newer than every source file, else
// the TypeScript sources through tsx's loader: no build step between a clone and a running broker,
// and never a stale build. The build starts faster and needs ~80 MB less memory (no loader thread).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));

// The reader went away (`gitops-broker --help | head -3`): stop quietly, with the status of a
// program that SIGPIPE ended (128 + 13), as cat or git do; Node ignores SIGPIPE and would throw.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error) => {
    if (error.code === "EPIPE") process.exit(141);
    throw error;
  });
}

// --version is answered before anything is loaded or walked: package.json names the version.
if (process.argv.length === 3 && (process.argv[2] === "--version" || process.argv[2] === "-V")) {
  process.stdout.write(`${JSON.parse(readFileSync(`${root}package.json`, "utf8")).version}\n`);
  process.exit(0);
}

function newestSource() {
  let newest = 0;
  // An install without sources (the container image: dist/ and production dependencies only).
  if (!existsSync(`${root}src`)) return newest;
  for (const entry of readdirSync(`${root}src`, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(`${entry.parentPath ?? entry.path}/${entry.name}`).mtimeMs);
  }
  return newest;
}

function builtEntry() {
  try {
    return statSync(`${root}dist/cli/main.js`).mtimeMs >= newestSource() ? "../dist/cli/main.js" : undefined;
  } catch {
    return undefined; // not built
  }
}

let entry = builtEntry();
if (entry === undefined) {
  const { register } = await import("tsx/esm/api");
  register();
  entry = "../src/cli/main.ts";
}
const { main } = await import(entry);
process.exitCode = await main(process.argv.slice(2));
