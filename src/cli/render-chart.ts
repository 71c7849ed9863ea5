import { readFile } from "node:fs/promises";
import { ChartError, chartFromPath, helmRender, helmSetFilePaths, type HelmOptions, type ModuleCall } from "../charts/index.js";

export const RENDER_CHART_USAGE = `Usage: gitops-broker render-chart [NAME] CHART [flags]

Prints what \`helm template\` (Helm 3.21) prints for the same arguments. CHART is a chart
directory or a .tgz; NAME defaults to "release-name". Values apply as Helm applies them: -f
files, then --set-json, --set, --set-string, --set-file, --set-literal.

Flags:
  -f, --values FILE        values file (repeatable, comma-separated; "-" reads stdin)
      --set K=V            value (repeatable, Helm's --set syntax)
      --set-string K=V     value, always a string
      --set-json K=JSON    value, a JSON document
      --set-file K=PATH    value, the content of a file
      --set-literal K=V    value, the text after '=' as it is
      --name-template T    release name from a template (instead of NAME)
  -n, --namespace NS       release namespace (default "default")
      --kube-version V     Kubernetes version for .Capabilities.KubeVersion
  -a, --api-versions G/V   extra .Capabilities.APIVersions (repeatable, comma-separated)
      --include-crds       print the chart's crds/ files first
      --skip-tests         leave out test hooks
      --no-hooks           leave out all hooks
      --is-upgrade         .Release.IsUpgrade instead of .Release.IsInstall
      --skip-schema-validation  do not check values against values.schema.json
  -s, --show-only PATH     only templates matching PATH (repeatable)
`;

export interface RenderChartDeps {
  call: ModuleCall;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  readStdin?: () => Promise<string>;
}

interface Parsed {
  positional: string[];
  valueFiles: string[];
  sets: Record<SetFlag, string[]>;
  options: HelmOptions;
}

type SetFlag = "set" | "setString" | "setJson" | "setFile" | "setLiteral";
const SET_FLAGS: Record<string, SetFlag> = {
  "--set": "set",
  "--set-string": "setString",
  "--set-json": "setJson",
  "--set-file": "setFile",
  "--set-literal": "setLiteral",
};

const VALUE_FLAGS: Record<string, string> = {
  "-f": "values",
  "--values": "values",
  "--set": "set",
  "--set-string": "set",
  "--set-json": "set",
  "--set-file": "set",
  "--set-literal": "set",
  "--name-template": "name-template",
  "-n": "namespace",
  "--namespace": "namespace",
  "--kube-version": "kube-version",
  "-a": "api-versions",
  "--api-versions": "api-versions",
  "-s": "show-only",
  "--show-only": "show-only",
};
const BOOL_FLAGS: Record<string, keyof HelmOptions> = {
  "--include-crds": "includeCrds",
  "--skip-tests": "skipTests",
  "--no-hooks": "disableHooks",
  "--is-upgrade": "isUpgrade",
  "--skip-schema-validation": "skipSchemaValidation",
};

/**
 * Parses render-chart's arguments like Helm's flags (`--flag value`, `--flag=value`; short ones
 * also `-n value`, `-n=value`, `-nvalue`).
 */
export function parseRenderChartArgs(args: string[]): Parsed {
  const p: Parsed = { positional: [], valueFiles: [], sets: { set: [], setString: [], setJson: [], setFile: [], setLiteral: [] }, options: {} };
  const o = p.options;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === "--") {
      p.positional.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      p.positional.push(arg);
      continue;
    }
    const long = arg.startsWith("--");
    const eq = arg.indexOf("=");
    // A short flag's value may follow it directly: "-nns" and "-n=ns" are "-n ns".
    const flag = long ? (eq !== -1 ? arg.slice(0, eq) : arg) : arg.slice(0, 2);
    const attached = long ? (eq !== -1 ? arg.slice(eq + 1) : undefined) : arg.length > 2 ? arg.slice(arg[2] === "=" ? 3 : 2) : undefined;
    const bool = BOOL_FLAGS[flag];
    if (bool !== undefined) {
      const v = attached ?? "true";
      if (v !== "true" && v !== "false") throw new Error(`invalid argument "${v}" for "${flag}" flag: strconv.ParseBool: parsing "${v}": invalid syntax`);
      (o as Record<string, unknown>)[bool] = v === "true";
      continue;
    }
    const name = VALUE_FLAGS[flag];
    if (name === undefined) throw new Error(`unknown flag: ${flag}`);
    let value: string;
    if (attached !== undefined) value = attached;
    else {
      const next = args[++i];
      if (next === undefined) throw new Error(`flag needs an argument: ${flag}`);
      value = next;
    }
    switch (name) {
      case "values":
        p.valueFiles.push(...value.split(","));
        break;
      case "set":
        p.sets[SET_FLAGS[flag] as SetFlag].push(value);
        break;
      case "name-template":
        o.nameTemplate = value;
        break;
      case "namespace":
        o.namespace = value;
        break;
      case "kube-version":
        o.kubeVersion = value;
        break;
      case "api-versions":
        o.apiVersions = [...(o.apiVersions ?? []), ...value.split(",")];
        break;
      case "show-only":
        o.showOnly = [...(o.showOnly ?? []), value];
        break;
    }
  }
  return p;
}

/** `gitops-broker render-chart`: exit 0 with the manifests on stdout, 1 with Helm's error on stderr. */
export async function runRenderChart(args: string[], deps: RenderChartDeps): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    deps.stdout(RENDER_CHART_USAGE);
    return 0;
  }
  try {
    const p = parseRenderChartArgs(args);
    if (p.positional.length === 0) throw new Error("requires at least 1 arg(s), only received 0");
    if (p.positional.length > 2) {
      throw new Error(`expected at most two arguments, unexpected arguments: ${p.positional.slice(2).join(", ")}`);
    }
    const [name, chartPath] = p.positional.length === 2 ? p.positional : [undefined, p.positional[0] as string];
    if (name !== undefined) {
      if (p.options.nameTemplate !== undefined) throw new Error("cannot set --name-template and also specify a name");
      p.options.releaseName = name;
    }
    const read = async (f: string): Promise<string> => {
      if (f.trim() === "-") return deps.readStdin ? await deps.readStdin() : "";
      return readFile(f, "utf8").catch((e: unknown) => Promise.reject(new Error(`open ${f}: no such file or directory`, { cause: e })));
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
