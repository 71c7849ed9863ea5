import { Command } from "commander";
import { clustersCommand, moveCommand } from "./admin-commands.js";
import { addConfigOptions, CONFIG_HELP, configArgv, processIo, runCommand, type CliIo, type ConfigOptions, type Done } from "./args.js";
import { historyCommand } from "./history.js";
import { runRender, runRenderTemplate } from "./render.js";
import { runRenderChart } from "./render-chart.js";
import { helmModuleCall } from "../render/index.js";
import { serve } from "./serve.js";
import { updateCommand } from "./update.js";
import { validateCommand } from "./validate.js";
import { VERSION } from "./version.js";

export { VERSION };

function serveCommand(done: Done): Command {
  return addConfigOptions(new Command("serve"))
    .description("serve OSB (the default command)")
    .addHelpText(
      "after",
      "\nWith no configuration, serve creates ./.gitops-broker/ holding a bare Git repository seeded with the\n" +
        "sample catalog (the remote), generates a password into ./.gitops-broker/password and listens on\n" +
        "127.0.0.1:8080. SIGTERM / SIGINT: stop accepting requests, push what is queued, exit.\n" +
        CONFIG_HELP,
    )
    .action(async (options: ConfigOptions) => {
      done(await serve(configArgv(options), { version: VERSION }));
    });
}

/**
 * A command that parses its own arguments (render, render-template, render-chart): commander lists
 * it and answers its --help (unless it has its own); every other argument reaches it unchanged.
 */
function ownArguments(name: string, description: string, usage: string, run: (args: string[]) => Promise<number>, done: Done, ownHelp = false): Command {
  const cmd = new Command(name).description(description).usage(usage).argument("[args...]").allowUnknownOption().allowExcessArguments();
  if (ownHelp) cmd.helpOption(false);
  return cmd.action(async () => {
    done(await run(cmd.args));
  });
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** The whole command line: every subcommand, each with its --help. */
export function program(io: CliIo, done: Done): Command {
  const lines = (write: TextSinkWrite) => (line: string) => void write(`${line}\n`);
  return new Command("gitops-broker")
    .description("an Open Service Broker (OSB v2.13 to v2.17) whose store is a Git repository")
    .version(VERSION, "-V, --version", "print the version")
    .addCommand(serveCommand(done))
    .addCommand(clustersCommand(io, done))
    .addCommand(moveCommand(io, done))
    .addCommand(updateCommand({ stdout: lines((t) => io.stdout.write(t)), stderr: lines((t) => io.stderr.write(t)) }, done))
    .addCommand(historyCommand(io, done))
    .addCommand(validateCommand(io, done))
    .addCommand(
      ownArguments(
        "render",
        "print the manifests a plan renders for an instance, committing nothing",
        "[repo-dir] --plan ID --action A --instance ID [--binding ID] [--parameters JSON]",
        (args) => runRender(args),
        done,
      ),
    )
    .addCommand(
      ownArguments(
        "render-template",
        'render one template: {"name","template","values"} JSON on stdin, the text on stdout',
        "--engine gotemplate|handlebars",
        (args) => runRenderTemplate(args),
        done,
      ),
    )
    .addCommand(
      ownArguments(
        "render-chart",
        "print what `helm template` prints for a chart",
        "[NAME] CHART [-f values.yaml]... [--set k=v]... [--name-template T] [--namespace NS] [--kube-version V] [--api-versions G/V]... [--include-crds] [--skip-tests] [--show-only PATH]...",
        (args) =>
          runRenderChart(args, {
            call: helmModuleCall,
            stdout: (text) => io.stdout.write(text),
            stderr: (text) => io.stderr.write(text),
            readStdin,
          }),
        done,
        true,
      ),
    )
    .addHelpText("after", `\nRun gitops-broker <command> --help for a command's options.${CONFIG_HELP}`);
}

type TextSinkWrite = (text: string) => unknown;

/** Entry point; returns the process exit code (2: usage or configuration error). */
export function main(argv: string[], io: CliIo = processIo): Promise<number> {
  // No command, or only serve's flags: serve (an unknown word stays an unknown command).
  const first = argv[0];
  const serveByDefault = first === undefined || (first.startsWith("-") && !["-h", "--help", "-V", "--version"].includes(first));
  return runCommand((done) => program(io, done), serveByDefault ? ["serve", ...argv] : argv, io);
}
