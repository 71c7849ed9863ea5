import { Command, CommanderError, Option } from "commander";
import { ConfigError, DataDirLockedError } from "../errors/index.js";

/**
 * The command line of every subcommand is parsed by commander (ADR 0016): `--help` on each,
 * "unknown option" / "missing argument" errors with the command's usage, exit 2 for usage and
 * configuration errors, 0 for `--help` and `--version`.
 */

/** Where a command writes (process.stdout / stderr, or a test's capture). */
export interface TextSink {
  write(text: string): unknown;
}

export interface CliIo {
  stdout: TextSink;
  stderr: TextSink;
}

export const processIo: CliIo = { stdout: process.stdout, stderr: process.stderr };

/** A command's action reports its exit code here (commander's own return value is the command). */
export type Done = (code: number) => void;

/** The configuration flags `serve` takes, shared by every command that reads the configuration. */
export interface ConfigOptions {
  config?: string;
  dataDir?: string;
  listen?: string;
}

export const CONFIG_HELP = `
Configuration: defaults < YAML file (--config) < GITOPS_BROKER_* environment variables < flags;
every problem is reported at once, each with the key, variable or flag it came from (exit 2).
Reference: docs/configuration.md.`;

export function addConfigOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option("--config <file>", "YAML configuration file"))
    .addOption(new Option("--data-dir <dir>", "directory for the broker's own state (default ./.gitops-broker)"))
    .addOption(new Option("--listen <host:port>", "address the broker listens on (default 127.0.0.1:8080)"));
}

/** The configuration flags as loadConfig reads them (it validates their values with the rest). */
export function configArgv(options: ConfigOptions): string[] {
  return [
    ...(options.config !== undefined ? ["--config", options.config] : []),
    ...(options.dataDir !== undefined ? ["--data-dir", options.dataDir] : []),
    ...(options.listen !== undefined ? ["--listen", options.listen] : []),
  ];
}

function configure(cmd: Command, io: CliIo): void {
  cmd
    .exitOverride()
    .configureOutput({ writeOut: (s) => void io.stdout.write(s), writeErr: (s) => void io.stderr.write(s) })
    .showHelpAfterError("(add --help for usage)");
  for (const sub of cmd.commands) configure(sub, io);
}

/**
 * Parse `argv` (the arguments after the program name) with `cmd` and run its action. Resolves
 * with the exit code: the action's, 0 for --help / --version, 2 for a usage or configuration
 * error (its message on stderr). Other errors are thrown.
 */
export async function runCommand(build: (done: Done) => Command, argv: readonly string[], io: CliIo): Promise<number> {
  let code = 0;
  const cmd = build((c) => {
    code = c;
  });
  configure(cmd, io);
  try {
    await cmd.parseAsync([...argv], { from: "user" });
    return code;
  } catch (e) {
    if (e instanceof CommanderError) {
      return e.exitCode === 0 ? 0 : 2;
    }
    if (e instanceof ConfigError || e instanceof DataDirLockedError) {
      io.stderr.write(`${e.message}\n`);
      return 2;
    }
    throw e;
  }
}
