import { ChartError } from "../errors/index.js";
import type { ChartInput } from "./chart-input.js";
import { schemaViolations, type SchemaCheck } from "./schema.js";

/** Calls a method of the WebAssembly module: request bytes in, response bytes out. */
export type ModuleCall = (method: string, request: Uint8Array) => Promise<Uint8Array>;

/** `helm template`'s flags that change what it prints (see go/helm). */
export interface HelmOptions {
  releaseName?: string;
  nameTemplate?: string;
  namespace?: string;
  revision?: number;
  isUpgrade?: boolean;
  kubeVersion?: string;
  apiVersions?: string[];
  includeCrds?: boolean;
  skipTests?: boolean;
  disableHooks?: boolean;
  showOnly?: string[];
  /** `--skip-schema-validation`: values.schema.json files are not checked. */
  skipSchemaValidation?: boolean;
}

export interface HelmRenderRequest {
  chart: ChartInput;
  /** YAML documents merged in order, as `-f` files. */
  valueFiles?: string[];
  /** The names of the files, for Helm's errors ("failed to parse NAME: ..."). */
  valueFileNames?: string[];
  /**
   * `--set-json`, `--set`, `--set-string`, `--set-file` and `--set-literal` expressions, applied
   * after the files in that order, as Helm applies them whatever the order of the flags.
   */
  setJson?: string[];
  set?: string[];
  setString?: string[];
  setFile?: string[];
  /** The contents of the files `setFile` names, by path as written (`helmSetFilePaths`); a path missing here cannot be read. */
  setFileData?: Record<string, string>;
  setLiteral?: string[];
  options?: HelmOptions;
}

/** One printed document, in `helm template`'s order. */
export interface HelmDocument {
  /** The template (or CRD file) it came from, as in `# Source:` lines. */
  source: string;
  content: string;
  apiVersion?: string;
  kind?: string;
  name?: string;
  crd?: boolean;
  /** helm.sh/hook events, for hooks. */
  hook?: string[];
}

export interface HelmRenderResult {
  /** Exactly what `helm template` prints on stdout. */
  output: string;
  documents: HelmDocument[];
  notes: string;
  releaseName: string;
  namespace: string;
}

function chartJson(chart: ChartInput): Record<string, unknown> {
  if ("archive" in chart) return { archive: Buffer.from(chart.archive).toString("base64") };
  return { files: chart.files.map((f) => ({ name: f.name, data: Buffer.from(f.data).toString("base64") })) };
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Renders a chart as `helm template` does. Throws ChartError for the chart's own failures. */
export async function helmRender(call: ModuleCall, req: HelmRenderRequest): Promise<HelmRenderResult> {
  const { chart, options, ...values } = req;
  const body = { ...values, chart: chartJson(chart), valueFiles: req.valueFiles ?? [], set: req.set ?? [], options: options ?? {} };
  const response = JSON.parse(decoder.decode(await call("helm.render", encoder.encode(JSON.stringify(body))))) as
    | (HelmRenderResult & { error?: undefined; schemas?: SchemaCheck[] })
    | { error: string; debugHint?: boolean };
  if (response.error !== undefined) throw new ChartError(response.error, { debugHint: response.debugHint === true });
  const { schemas, ...result } = response;
  const violations = req.options?.skipSchemaValidation === true ? undefined : schemaViolations(schemas ?? []);
  if (violations !== undefined) throw new ChartError(violations);
  return result;
}

/** The paths `--set-file` expressions name, in order: the files to read for `setFileData`. */
export async function helmSetFilePaths(call: ModuleCall, setFile: string[]): Promise<string[]> {
  if (setFile.length === 0) return [];
  const response = JSON.parse(decoder.decode(await call("helm.setFilePaths", encoder.encode(JSON.stringify({ setFile }))))) as { paths?: string[] };
  return response.paths ?? [];
}

export interface ChartSummary {
  name: string;
  version: string;
  /** Templates parsed, NOTES.txt not counted. */
  templates: number;
}

/** Loads a chart and parses its templates without rendering. Throws ChartError with Helm's message. */
export async function helmCheck(call: ModuleCall, chart: ChartInput): Promise<ChartSummary> {
  const response = JSON.parse(decoder.decode(await call("helm.check", encoder.encode(JSON.stringify({ chart: chartJson(chart) }))))) as {
    error?: string;
    name?: string;
    version?: string;
    templates?: number;
  };
  if (response.error !== undefined) throw new ChartError(response.error);
  return { name: response.name ?? "", version: response.version ?? "", templates: response.templates ?? 0 };
}
