import { ConfigError, DataDirLockedError } from "../errors/index.js";
import { runClusters, runMove } from "./admin-commands.js";
import { runHistory } from "./history.js";
import { runRender, runRenderTemplate } from "./render.js";
import { runRenderChart } from "./render-chart.js";
import { helmModuleCall } from "../render/index.js";
import { serve } from "./serve.js";
import { update } from "./update.js";
import { runValidate } from "./validate.js";
import { VERSION } from "./version.js";

const USAGE = `gitops-broker: an Open Service Broker (OSB v2.17) whose store is a Git repository

Usage:
  gitops-broker serve [--config FILE] [--data-dir DIR] [--listen HOST:PORT]
  gitops-broker clusters [--json] [--config FILE] [--data-dir DIR]
  gitops-broker move <instance-id> <cluster-id> [--config FILE] [--data-dir DIR]
  gitops-broker update --plan <plan-id> | --instance <instance-id> [--url URL] [--config FILE] [--data-dir DIR]
  gitops-broker history <instance-id> [--json] [--config FILE] [--data-dir DIR]
  gitops-broker validate [repo-dir] [--json]
  gitops-broker render [repo-dir] --plan ID --action A --instance ID [--binding ID] [--parameters JSON]
  gitops-broker render-template --engine gotemplate|handlebars  < {"name","template","values"}
  gitops-broker render-chart [NAME] CHART [-f values.yaml]... [--set k=v]... [--name-template T] [--namespace NS]
                [--kube-version V] [--api-versions G/V]... [--include-crds] [--skip-tests] [--show-only PATH]...
  gitops-broker --help | --version

With no configuration, serve creates ./.gitops-broker/ holding a bare Git repository seeded
with the sample catalog (the remote), generates a password, and listens on 127.0.0.1:8080.
Configuration: docs/configuration.md.
`;

export { VERSION };

const COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  serve: (args) => serve(args, { version: VERSION }),
  clusters: (args) => runClusters(args),
  move: (args) => runMove(args),
  history: (args) => runHistory(args),
  validate: (args) => runValidate(args),
  render: (args) => runRender(args),
  "render-template": (args) => runRenderTemplate(args),
  "render-chart": (args) =>
    runRenderChart(args, {
      call: helmModuleCall,
      stdout: (text) => process.stdout.write(text),
      stderr: (text) => process.stderr.write(text),
      readStdin: async () => {
        const chunks: Buffer[] = [];
        for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
        return Buffer.concat(chunks).toString("utf8");
      },
    }),
  update: (args) =>
    update(args, {
      stdout: (line) => process.stdout.write(`${line}\n`),
      stderr: (line) => process.stderr.write(`${line}\n`),
    }),
};

/** Entry point; returns the process exit code (2: usage or configuration error). */
export async function main(argv: string[]): Promise<number> {
  const [command = "serve", ...rest] = argv;
  if (command === "--help" || command === "-h" || command === "help") {
    process.stdout.write(USAGE);
    return 0;
  }
  if (command === "--version") {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const run = COMMANDS[command];
  if (!run) {
    process.stderr.write(`unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
    return 2;
  }
  try {
    return await run(rest);
  } catch (e) {
    if (e instanceof ConfigError || e instanceof DataDirLockedError) {
      process.stderr.write(`${e.message}\n`);
      return 2;
    }
    throw e;
  }
}
