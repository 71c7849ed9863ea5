import type { PlanTemplate } from "../catalog/index.js";
import { TemplateFailure, toError, WasmCallError } from "../errors/index.js";
import type { TemplateContext, TemplateEngine } from "./engine.js";
import { serviceFabrikValues } from "./service-fabrik.js";
import type { RenderValues } from "./types.js";
import { wasmHost } from "./wasm-module.js";

/**
 * Service Fabrik's `gotemplate`: Go's text/template with sprig and SF's nine functions, run by
 * the WebAssembly module (ADR 0011). Values reach Go as JSON bytes; the module types numbers as
 * SF did (float64 in the four SF objects, int64 for integral numbers of live objects).
 */

export interface GotemplateLimits {
  /** A render that takes longer fails (`until 100000000` ...), its worker is replaced. */
  timeoutMs: number;
  /** A render whose output grows past this fails (`repeat` ...). */
  outputBytes: number;
}

export const DEFAULT_GOTEMPLATE_LIMITS: GotemplateLimits = { timeoutMs: 5000, outputBytes: 8 * 1024 * 1024 };
let limits: GotemplateLimits = { ...DEFAULT_GOTEMPLATE_LIMITS };

/** Sets the limits of later renders (returns the previous ones). */
export function setGotemplateLimits(next: Partial<GotemplateLimits>): GotemplateLimits {
  const previous = limits;
  limits = { ...limits, ...next };
  return previous;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8");

/**
 * Renders `template` under `name` with `values` given as JSON text: the bytes reach Go as they
 * are (`render-template` passes its stdin's values through, so -0 and integers above 2^53 keep
 * their text).
 */
export function renderGoTemplateJson(name: string, template: string, valuesJson: string): Promise<string> {
  return renderGoTemplateRequest(`{"name":${JSON.stringify(name)},"template":${JSON.stringify(template)},"values":${valuesJson}}`, name);
}

/**
 * Renders a `{"name","template","values"}` JSON object text as is (the module decodes it; the
 * output limit is added in front). `name` is for messages about the call itself.
 */
export async function renderGoTemplateRequest(requestJson: string, name: string): Promise<string> {
  const body = requestJson.trimStart();
  if (!body.startsWith("{")) throw new TemplateFailure("the request must be a JSON object {name, template, values}");
  const request = `{"outputLimit":${limits.outputBytes},${body.slice(1)}`;
  try {
    const out = await wasmHost().call("gotemplate.render", encoder.encode(request), { timeoutMs: limits.timeoutMs });
    return decoder.decode(out);
  } catch (e) {
    throw failure(e, name);
  }
}

function failure(e: unknown, name: string): Error {
  if (!(e instanceof WasmCallError)) return toError(e);
  if (e.reason === "timeout") {
    return new TemplateFailure(`gotemplate renderer - can't render template for ${name}. stopped after ${limits.timeoutMs} ms (time limit)`, { data: { limit: "time" } });
  }
  if (e.reason === "exited") return new TemplateFailure(`gotemplate renderer - can't render template for ${name}. ${e.message}`, { data: { limit: "memory" } });
  return new TemplateFailure(e.message);
}

export const gotemplateEngine: TemplateEngine = {
  type: "gotemplate",
  aliases: ["Gotemplate", "GoTemplate", "GOTEMPLATE"],
  description: "Go text/template with sprig and Service Fabrik's functions, as Service Fabrik's inter-operator rendered it",
  async compile(t: PlanTemplate, context: TemplateContext): Promise<string | undefined> {
    const request = JSON.stringify({ name: context.name, template: t.content });
    try {
      await wasmHost().call("gotemplate.compile", encoder.encode(request), { timeoutMs: limits.timeoutMs });
      return undefined;
    } catch (e) {
      const f = failure(e, context.name);
      if (f instanceof TemplateFailure) return f.message;
      throw f;
    }
  },
  render(t: PlanTemplate, values: RenderValues, context: TemplateContext): Promise<string> {
    return renderGoTemplateJson(context.name, t.content, JSON.stringify(serviceFabrikValues(values)));
  },
};
