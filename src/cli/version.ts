import { readFileSync } from "node:fs";

/**
 * The broker's version, reported by --version and in commit trailers: package.json's, the one
 * file that names it (bin/gitops-broker.js reads it too, to answer --version before loading the
 * broker). The same relative path from src/cli/ and from the build's dist/cli/.
 */
export const VERSION: string = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;
