import { readFile } from "node:fs/promises";
import { Command, CommanderError, Option } from "commander";
import { chartFromPath, helmRender, helmSetFilePaths, type HelmOptions, type ModuleCall } from "../charts/index.js";
import { ChartError } from "../errors/index.js";
import { runCommand, type Done } from "./args.js";

/**
 * `gitops-broker render-chart [NAME] CHART [flags]`: what `helm template` (Helm 3.21) prints for
 * the same arguments. Its flags are commander's like every command's (ADR 0016), read the way
 * Helm's pflag reads them: repeatable, `-f` and `-a` comma-separated, `--flag=value`, `-nvalue`
 * and `-n=value`, booleans also as `--flag=true|false`.
 */

export interface RenderChartDeps {
  call: ModuleCall;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  readStdin?: () => Promise<string>;
}

export interface Parsed {
  positional: string[];
  valueFiles: string[];
  sets: Record<SetFlag, string[]>;
  options: HelmOptions;
}

type SetFlag = "set" | "setString" | "setJson" | "setFile" | "setLiteral";

/** The boolean flags, which pflag also takes as `--flag=true|false`. */
const BOOLEAN_FLAGS = ["--include-crds", "--skip-tests", "--no-hooks", "--is-upgrade", "--skip-schema-validation"];
/** The flags that take a value (the next argument when none is attached). */
const VALUE_FLAGS = new Set(["-f", "--values", "--set", "--set-string", "--set-json", "--set-file", "--set-literal", "--name-template", "-n", "--namespace", "--kube-version", "-a", "--api-versions", "-s", "--show-only"]);

/**
 * The forms pflag reads and commander does not, in commander's: `-n=ns` is `-n ns`,
 * `--include-crds=true` is `--include-crds`, `--include-crds=false` its negation. Values and
 * everything after `--` are left alone.
 */
export function helmStyleArgv(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      out.push(...args.slice(i));
      break;
    }
    const short = /^(-[a-zA-Z])=(.*)$/s.exec(arg);
    if (short) {
      out.push(short[1]!, short[2]!);
      continue;
    }
    const eq = arg.indexOf("=");
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    if (arg.startsWith("--") && eq !== -1 && BOOLEAN_FLAGS.includes(flag)) {
      const value = arg.slice(eq + 1);
      if (value === "true") out.push(flag);
      else if (value === "false") out.push(flag === "--no-hooks" ? "--hooks" : `--no-${flag.slice(2)}`);
      else out.push(arg); // refused by the parser: the flag takes no such value
      continue;
    }
    out.push(arg);
    if (VALUE_FLAGS.has(arg) && i + 1 < args.length) out.push(args[++i]!);
  }
  return out;
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];
const collectSplit = (value: string, previous: string[]): string[] => [...previous, ...value.split(",")];

interface Flags {
  values: string[];
  set: string[];
  setString: string[];
  setJson: string[];
  setFile: string[];
  setLiteral: string[];
  nameTemplate?: string;
  namespace?: string;
  kubeVersion?: string;
  apiVersions: string[];
  includeCrds?: boolean;
  skipTests?: boolean;
  hooks?: boolean;
  isUpgrade?: boolean;
  skipSchemaValidation?: boolean;
  showOnly: string[];
}

/** render-chart's arguments and flags, and the action that receives them parsed. */
function renderChartCommandWith(action: (parsed: Parsed, cmd: Command) => Promise<void> | void): Command {
  const hidden = (flags: string) => new Option(flags).hideHelp();
  const cmd = new Command("render-chart")
    .description("print what `helm template` prints for a chart (Helm 3.21), without a cluster")
    .usage("[NAME] CHART [flags]")
    .argument("[NAME]", 'release name (default "release-name")')
    .argument("[CHART]", "chart directory or .tgz")
    .option("-f, --values <file>", 'values file (repeatable, comma-separated; "-" reads stdin)', collectSplit, [])
    .option("--set <key=value>", "value (repeatable, Helm's --set syntax: a=1,b.c=x,d={x,y})", collect, [])
    .option("--set-string <key=value>", "value, always a string (repeatable)", collect, [])
    .option("--set-json <key=json>", "value, a JSON document (repeatable)", collect, [])
    .option("--set-file <key=path>", "value, the content of a file (repeatable)", collect, [])
    .option("--set-literal <key=value>", "value, the text after '=' as it is (repeatable)", collect, [])
    .option("--name-template <template>", "release name from a template (instead of NAME)")
    .option("-n, --namespace <namespace>", 'release namespace (default "default")')
    .option("--kube-version <version>", "Kubernetes version for .Capabilities.KubeVersion")
    .option("-a, --api-versions <group/version>", "extra .Capabilities.APIVersions (repeatable, comma-separated)", collectSplit, [])
    .option("--include-crds", "print the chart's crds/ files first")
    .addOption(hidden("--no-include-crds"))
    .option("--skip-tests", "leave out test hooks")
    .addOption(hidden("--no-skip-tests"))
    .addOption(hidden("--hooks"))
    .option("--no-hooks", "leave out all hooks")
    .option("--is-upgrade", ".Release.IsUpgrade instead of .Release.IsInstall")
    .addOption(hidden("--no-is-upgrade"))
    .option("--skip-schema-validation", "do not check values against values.schema.json")
    .addOption(hidden("--no-skip-schema-validation"))
    .option("-s, --show-only <path>", "only templates matching PATH (repeatable)", collect, [])
    .addHelpText(
      "after",
      "\nValues apply as Helm applies them: -f files, then --set-json, --set, --set-string, --set-file,\n" +
        "--set-literal. Boolean flags also take =true or =false. Exit 1 with Helm's error when the chart\n" +
        "does not render.",
    );
  return cmd.action(async (first: string | undefined, second: string | undefined, f: Flags) => {
    if (first === undefined) cmd.error("error: requires at least 1 arg(s), only received 0: give CHART (and NAME before it)", { exitCode: 2, code: "gitops-broker.missingArgument" });
    const options: HelmOptions = {};
    if (f.nameTemplate !== undefined) options.nameTemplate = f.nameTemplate;
    if (f.namespace !== undefined) options.namespace = f.namespace;
    if (f.kubeVersion !== undefined) options.kubeVersion = f.kubeVersion;
    if (f.apiVersions.length > 0) options.apiVersions = f.apiVersions;
    if (f.includeCrds !== undefined) options.includeCrds = f.includeCrds;
    if (f.skipTests !== undefined) options.skipTests = f.skipTests;
    if (f.hooks === false) options.disableHooks = true;
    if (f.isUpgrade !== undefined) options.isUpgrade = f.isUpgrade;
    if (f.skipSchemaValidation !== undefined) options.skipSchemaValidation = f.skipSchemaValidation;
    if (f.showOnly.length > 0) options.showOnly = f.showOnly;
    const parsed: Parsed = {
      positional: [first!, ...(second === undefined ? [] : [second])],
      valueFiles: f.values,
      sets: { set: f.set, setString: f.setString, setJson: f.setJson, setFile: f.setFile, setLiteral: f.setLiteral },
      options,
    };
    await action(parsed, cmd);
  });
}

/** Parses render-chart's arguments as the command does, without rendering (a usage error throws a CommanderError with commander's message). */
export function parseRenderChartArgs(args: readonly string[]): Parsed {
  let result: Parsed | undefined;
  const cmd = renderChartCommandWith((parsed) => {
    result = parsed;
  })
    .exitOverride()
    .configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
  cmd.parse(helmStyleArgv(args), { from: "user" });
  if (result === undefined) throw new CommanderError(2, "gitops-broker.noAction", "render-chart did not run");
  return result;
}

/** `gitops-broker render-chart` for the program (main.ts); run `helmStyleArgv` over its arguments first. */
export function renderChartCommand(deps: RenderChartDeps, done: Done): Command {
  return renderChartCommandWith(async (parsed) => {
    done(await render(parsed, deps));
  });
}

/**
 * `gitops-broker render-chart ARGS` in process: exit 0 with the manifests on stdout, 1 with Helm's
 * error on stderr, 2 with a usage error (unknown flag, a flag without its value, too many
 * arguments), as the command line.
 */
export function runRenderChart(args: readonly string[], deps: RenderChartDeps): Promise<number> {
  return runCommand((done) => renderChartCommand(deps, done), helmStyleArgv(args), {
    stdout: { write: (text: string) => deps.stdout(text) },
    stderr: { write: (text: string) => deps.stderr(text) },
  });
}

/** The render of parsed arguments: exit 0 with the manifests on stdout, 1 with Helm's error on stderr. */
async function render(p: Parsed, deps: RenderChartDeps): Promise<number> {
  try {
    const [name, chartPath] = p.positional.length === 2 ? p.positional : [undefined, p.positional[0] as string];
    if (name !== undefined) {
      if (p.options.nameTemplate !== undefined) throw new ChartError("cannot set --name-template and also specify a name");
      p.options.releaseName = name;
    }
    const read = async (f: string): Promise<string> => {
      if (f.trim() === "-") return deps.readStdin ? await deps.readStdin() : "";
      return readFile(f, "utf8").catch((e: unknown) => Promise.reject(new ChartError(`open ${f}: no such file or directory`, { cause: e })));
    };
    const valueFiles: string[] = [];
    for (const f of p.valueFiles) valueFiles.push(await read(f));
    // The module reads no files: the ones --set-file names are read here, those that cannot be
    // read left out (the module then fails with Helm's message, at Helm's point).
    const setFileData: Record<string, string> = {};
    for (const f of await helmSetFilePaths(deps.call, p.sets.setFile)) {
      if (!(f in setFileData)) await read(f).then((data) => (setFileData[f] = data), () => undefined);
    }
    const chart = await chartFromPath(chartPath);
    const result = await helmRender(deps.call, { chart, valueFiles, valueFileNames: p.valueFiles, ...p.sets, setFileData, options: p.options });
    deps.stdout(result.output);
    return 0;
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    const hint = e instanceof ChartError && e.debugHint ? "\n\nUse --debug flag to render out invalid YAML" : "";
    deps.stderr(`Error: ${message}${hint}\n`);
    return 1;
  }
}
