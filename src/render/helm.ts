import { helmCheck, helmRender, releaseName, type ModuleCall } from "../charts/index.js";
import type { PlanTemplate } from "../catalog/index.js";
import { ChartError, TemplateFailure, toError, WasmCallError } from "../errors/index.js";
import type { TemplateContext, TemplateEngine } from "./engine.js";
import { renderGoTemplateJson } from "./gotemplate.js";
import { field, serviceFabrikName, serviceFabrikValues, str } from "./service-fabrik.js";
import type { RenderValues } from "./types.js";
import { wasmHost } from "./wasm-module.js";

/**
 * Service Fabrik's `helm`: the plan's chart (`url`, resolved by the catalog from the repository
 * or the digest-pinned cache) rendered with Helm 3's semantics by the WebAssembly module
 * (go/helm, ADR 0015); `content` is a gotemplate that renders the values.
 * The output is what `helm template --include-crds --skip-tests` prints, without NOTES.txt.
 */

/** A chart render that takes longer fails and its worker is replaced. */
const TIMEOUT_MS = 20_000;

/** A call of the module's Helm methods, with the chart render time limit (render-chart uses it too). */
export const helmModuleCall: ModuleCall = (method, request) => wasmHost().call(method, request, { timeoutMs: TIMEOUT_MS });
const call = helmModuleCall;


/**
 * Service Fabrik's release name: `in-<adler32>` of the instance's Kubernetes name (of the
 * binding's for a bind template), SF's name being the id or, when the id is not a valid name,
 * its sha224.
 */
export function helmReleaseName(values: RenderValues, action: string): string {
  const id = action === "bind" && values.binding !== undefined ? field(values.binding, "spec", "bindingId") : field(values.instance, "spec", "instanceId");
  return releaseName(serviceFabrikName(str(id) ?? ""));
}

function describe(e: unknown): Error {
  if (e instanceof ChartError) return new TemplateFailure(`helm: ${e.message}`);
  if (e instanceof WasmCallError) {
    return new TemplateFailure(e.reason === "timeout" ? `helm: stopped after ${TIMEOUT_MS} ms (time limit)` : `helm: ${e.message}`);
  }
  return toError(e);
}

export const helmEngine: TemplateEngine = {
  type: "helm",
  aliases: ["Helm", "HELM"],
  description: "a Helm chart (`url`: in the repository, or http(s) pinned by `digest`) whose values `content` renders as a gotemplate, with Helm 3's semantics",
  supports: (action) => action === "provision" || action === "update" || action === "bind",
  async compile(t: PlanTemplate, context: TemplateContext): Promise<string | undefined> {
    if (t.chart === undefined) return `no chart (url ${JSON.stringify(t.url ?? "")})`;
    try {
      await helmCheck(call, t.chart);
    } catch (e) {
      const f = describe(e);
      if (f instanceof TemplateFailure) return f.message;
      throw f;
    }
    if (t.content.trim() === "") return undefined;
    const { gotemplateEngine } = await import("./gotemplate.js");
    return gotemplateEngine.compile(t, context);
  },
  async render(t: PlanTemplate, values: RenderValues, context: TemplateContext): Promise<string> {
    if (t.chart === undefined) throw new TemplateFailure(`helm: no chart (url ${JSON.stringify(t.url ?? "")})`);
    const name = helmReleaseName(values, t.action);
    // SF rendered `content` under the release name, with the SF objects as values.
    const valuesYaml = t.content === "" ? "" : await renderGoTemplateJson(name, t.content, JSON.stringify(serviceFabrikValues(values)));
    const namespace = str(field(values.instance, "metadata", "namespace"));
    try {
      const result = await helmRender(call, {
        chart: t.chart,
        valueFiles: [valuesYaml],
        options: {
          releaseName: name,
          namespace,
          includeCrds: true,
          skipTests: true,
          isUpgrade: t.action === "update",
          // The cluster's registry entry, as `helm template --kube-version/--api-versions`.
          ...(context.capabilities?.kubeVersion !== undefined ? { kubeVersion: context.capabilities.kubeVersion } : {}),
          ...(context.capabilities?.apiVersions !== undefined ? { apiVersions: context.capabilities.apiVersions } : {}),
        },
      });
      return result.documents.map((d) => d.content).join("\n---\n");
    } catch (e) {
      throw describe(e);
    }
  },
};
