import { Command } from "commander";
import { cleanupBindingCommand, clustersCommand, instancesCommand, moveCommand } from "./admin-commands.js";
import { addConfigOptions, CONFIG_HELP, configArgv, processIo, runCommand, type CliIo, type ConfigOptions, type Done } from "./args.js";
import { historyCommand } from "./history.js";
import { importCommand } from "./import.js";
import { moveClusterCommand } from "./move-cluster.js";
import { renderCommand, renderTemplateCommand } from "./render.js";
import { helmStyleArgv, renderChartCommand } from "./render-chart.js";
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

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** render and render-template write through the program's io and read the process's stdin. */
function renderIo(io: CliIo): { stdin: () => Promise<Buffer>; stdout: (text: string) => void; stderr: (text: string) => void } {
  return { stdin: readStdin, stdout: (text) => void io.stdout.write(text), stderr: (text) => void io.stderr.write(text) };
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
    .addCommand(moveClusterCommand(io, done))
    .addCommand(instancesCommand(io, done))
    .addCommand(cleanupBindingCommand(io, done))
    .addCommand(updateCommand({ stdout: lines((t) => io.stdout.write(t)), stderr: lines((t) => io.stderr.write(t)) }, done))
    .addCommand(historyCommand(io, done))
    .addCommand(importCommand(io, done))
    .addCommand(validateCommand(io, done))
    .addCommand(renderCommand(done, renderIo(io)))
    .addCommand(renderTemplateCommand(done, renderIo(io)))
    .addCommand(
      renderChartCommand(
        { call: helmModuleCall, stdout: (text) => io.stdout.write(text), stderr: (text) => io.stderr.write(text), readStdin: async () => (await readStdin()).toString("utf8") },
        done,
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
  let args = serveByDefault ? ["serve", ...argv] : argv;
  if (first !== undefined && !first.startsWith("-")) {
    const commands = program(io, () => undefined).commands.map((c) => c.name());
    // An unknown command is an error whatever follows it: `gitops-broker bogus --help` too.
    if (first !== "help" && !commands.includes(first)) args = [first];
    // render-chart reads its flags as helm template does (pflag's forms).
    if (first === "render-chart") args = [first, ...helmStyleArgv(argv.slice(1))];
  }
  return runCommand((done) => program(io, done), args, io);
}
