import { ConfigError } from "../errors/index.js";
import { serve } from "./serve.js";

const USAGE = `gitops-broker: an Open Service Broker (OSB v2.17) whose store is a Git repository

Usage:
  gitops-broker serve [--config FILE] [--data-dir DIR] [--listen HOST:PORT]
  gitops-broker --help | --version

With no configuration, serve creates ./.gitops-broker/ holding a bare Git repository seeded
with the sample catalog (the remote), generates a password, and listens on 127.0.0.1:8080.
Configuration: docs/configuration.md.
`;

export const VERSION = "0.1.0";

/** Entry point; returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === "--help" || command === "-h" || command === "help") {
    process.stdout.write(USAGE);
    return 0;
  }
  if (command === "--version") {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  if (command === undefined || command === "serve") {
    try {
      await serve(rest, { version: VERSION });
      return 0;
    } catch (e) {
      if (e instanceof ConfigError) {
        process.stderr.write(`${e.message}\n`);
        return 2;
      }
      throw e;
    }
  }
  process.stderr.write(`unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
  return 2;
}
