/**
 * The renderer: a plan's templates and the records in, Kubernetes manifests out. Pure: no I/O,
 * no clock, same input gives byte-identical output. The template language is documented in
 * docs/templates.md.
 */
import type { PlanTemplate } from "../catalog/index.js";
import { formatProblem, InvalidArgumentError, RenderError, RenderPending, TemplateFailure, type Problem } from "../errors/index.js";
import { engineFor, engineProblem, type TemplateContext } from "./engine.js";
import "./engines.js";
import { isDns1123Label, isLabelValue, qualifiedNameProblem } from "./kubernetes.js";
import { splitDocuments, toManifests } from "./manifests.js";
import { field, str } from "./service-fabrik.js";
import type { Manifest, RenderCapabilities, RenderRequest, RenderValues } from "./types.js";

export type { RenderCapabilities, RenderRequest, RenderValues, Manifest } from "./types.js";
export { engineFor, engineProblem, engineTypes, type TemplateEngine } from "./engine.js";
export { DEFAULT_GOTEMPLATE_LIMITS, renderGoTemplateJson, renderGoTemplateRequest, setGotemplateLimits, type GotemplateLimits } from "./gotemplate.js";
export { serviceFabrikValues, sfServiceBinding, sfServiceInstance } from "./service-fabrik.js";
export { helmModuleCall, helmReleaseName } from "./helm.js";
export { setModuleWorkers } from "./wasm-module.js";


/**
 * The template's name in engine messages, as Service Fabrik named it: `<instance-id>/<action>`,
 * `<binding-id>/bind` for the bind template (its renderTemplate named bind by the binding).
 */
export function templateName(values: Partial<RenderValues>, action: string): string {
  const id = (record: unknown) =>
    str(field(record, "spec", "instanceId")) ?? str(field(record, "spec", "bindingId")) ?? str(field(record, "metadata", "name")) ?? "";
  const owner = action === "bind" && values.binding !== undefined ? (str(field(values.binding, "spec", "bindingId")) ?? id(values.binding)) : id(values.instance);
  return `${owner}/${action}`;
}

/**
 * One template's text, by its engine. Throws RenderError naming the plan, the action and the
 * template's source, with the engine's description of the failure.
 */
export async function renderTemplateText(
  t: PlanTemplate,
  values: RenderValues,
  planName: string,
  name = templateName(values, t.action),
  capabilities?: RenderCapabilities,
): Promise<string> {
  const where = `plan ${planName}: template ${t.action} (${t.source})`;
  const data = { plan: planName, action: t.action, source: t.source };
  const unsupported = engineProblem(t.type, t.action);
  if (unsupported !== undefined) throw new RenderError(`${where}: ${unsupported}`, { data });
  try {
    return await engineFor(t.type)!.render(t, values, capabilities === undefined ? { name } : { name, capabilities });
  } catch (e) {
    if (e instanceof TemplateFailure) throw new RenderError(`${where}: ${e.message}`, { cause: e, data: { ...data, ...e.data } });
    throw e;
  }
}

type Outcome = { text: string } | { error: unknown } | { pending: Promise<void> };
const outcomes = new Map<string, Outcome>();
const OUTCOME_LIMIT = 2048;

/**
 * `renderText` for synchronous callers (the status watcher judges live objects synchronously).
 * Engines that run on this thread render at once; for the others the result is looked up by
 * template and values: the first call starts the render and throws RenderPending, calls after it
 * settled get the text (or its RenderError). Bounded: the oldest results are dropped.
 */
export function renderTextNow(req: Omit<RenderRequest, "defaultNamespace" | "labels">): string {
  assertRequest(req);
  const parts: string[] = [];
  for (const t of req.templates.filter((x) => x.action === req.action)) {
    const engine = engineFor(t.type);
    const name = templateName(req.values, t.action);
    if (engine?.renderSync !== undefined) {
      try {
        parts.push(engine.renderSync(t, req.values, req.capabilities === undefined ? { name } : { name, capabilities: req.capabilities }));
      } catch (e) {
        const where = `plan ${req.planName}: template ${t.action} (${t.source})`;
        if (e instanceof TemplateFailure) throw new RenderError(`${where}: ${e.message}`, { cause: e, data: { plan: req.planName, action: t.action, source: t.source } });
        throw e;
      }
      continue;
    }
    const key = JSON.stringify([t.type, t.content, name, req.planName, t.source, req.values, req.capabilities ?? null]);
    let outcome = outcomes.get(key);
    if (outcome === undefined) {
      const pending = renderTemplateText(t, req.values, req.planName, name, req.capabilities).then(
        (text) => void outcomes.set(key, { text }),
        (error: unknown) => void outcomes.set(key, { error }),
      );
      outcome = { pending };
      if (outcomes.size >= OUTCOME_LIMIT) outcomes.delete(outcomes.keys().next().value as string);
      outcomes.set(key, outcome);
    }
    if ("pending" in outcome) throw new RenderPending(outcome.pending);
    if ("error" in outcome) throw outcome.error;
    parts.push(outcome.text);
  }
  return joinTexts(parts);
}

function joinTexts(parts: string[]): string {
  return parts.reduce((text, part) => (text === "" || text.endsWith("\n") ? text + part : `${text}\n${part}`), "");
}

/** Why the template does not compile, or undefined when it does. Does not execute it. */
export async function compileProblem(t: PlanTemplate, context: TemplateContext): Promise<string | undefined> {
  return engineProblem(t.type, t.action) ?? (await engineFor(t.type)!.compile(t, context));
}

export function hasTemplate(templates: PlanTemplate[], action: string): boolean {
  return templates.some((t) => t.action === action);
}

/**
 * Renders the templates of `req.action` into manifests, in template then document order.
 * A plan may split an action over several templates; their objects are checked together.
 * Returns [] when the plan has no template for the action (the caller decides what that means).
 * Throws RenderError for an unsupported engine, a template that fails to compile or run, and
 * for output that is not valid manifests (every problem listed, with its path).
 */
export async function render(req: RenderRequest): Promise<Manifest[]> {
  assertManifestRequest(req);
  const texts: [PlanTemplate, string][] = [];
  for (const t of req.templates.filter((x) => x.action === req.action)) {
    texts.push([t, await renderTemplateText(t, req.values, req.planName, templateName(req.values, t.action), req.capabilities)]);
  }
  return manifestsOf(req, texts);
}

/** `render` for synchronous callers, like `renderTextNow` (throws RenderPending). */
export function renderNow(req: RenderRequest): Manifest[] {
  assertManifestRequest(req);
  const texts: [PlanTemplate, string][] = req.templates
    .filter((x) => x.action === req.action)
    .map((t) => [t, renderTextNow({ ...req, templates: [t] })]);
  return manifestsOf(req, texts);
}

function assertManifestRequest(req: RenderRequest): void {
  assertRequest(req);
  if (!isDns1123Label(req.defaultNamespace)) {
    throw new InvalidArgumentError(`defaultNamespace ${JSON.stringify(req.defaultNamespace)} is not a DNS-1123 label`);
  }
  for (const [key, value] of Object.entries(req.labels)) {
    const problem = qualifiedNameProblem(key) ?? (isLabelValue(value) ? undefined : `value ${JSON.stringify(value)} is not a label value`);
    if (problem !== undefined) throw new InvalidArgumentError(`broker label ${JSON.stringify(key)}: ${problem}`);
  }
}

function manifestsOf(req: RenderRequest, texts: [PlanTemplate, string][]): Manifest[] {
  const problems: Problem[] = [];
  const documents = texts.flatMap(([t, text]) => splitDocuments(text, t.source, problems));
  const manifests = toManifests(documents, req, problems);
  if (problems.length > 0) {
    const list = problems.map((p) => `- ${formatProblem(p)}`).join("\n");
    throw new RenderError(`plan ${req.planName}: template ${req.action} renders invalid manifests:\n${list}`, {
      data: { plan: req.planName, action: req.action, problems },
    });
  }
  return manifests;
}

/**
 * The checks and defaults `render` applies to template output, applied to objects that come from
 * elsewhere (rendered objects after a manual override): same rules (no Secret data ...), same
 * canonical YAML. `path` locates each object in its `source` for problems. Never throws:
 * manifests are only meaningful when there are no problems.
 */
export function checkObjects(
  objects: { value: unknown; source: string; path: string }[],
  defaults: Pick<RenderRequest, "defaultNamespace" | "labels">,
): { manifests: Manifest[]; problems: Problem[] } {
  const problems: Problem[] = [];
  const manifests = toManifests(objects, defaults, problems);
  return { manifests, problems };
}

/**
 * The text output of the templates of `req.action` (for `sources`, `status` ...), concatenated
 * in template order; "" when there is none. Throws RenderError like `render`.
 */
export async function renderText(req: Omit<RenderRequest, "defaultNamespace" | "labels">): Promise<string> {
  assertRequest(req);
  const parts: string[] = [];
  for (const t of req.templates.filter((x) => x.action === req.action)) {
    parts.push(await renderTemplateText(t, req.values, req.planName, templateName(req.values, t.action), req.capabilities));
  }
  return joinTexts(parts);
}

/**
 * One problem per template that cannot be rendered whatever the values: unsupported engine,
 * syntax error, unknown helper. `file`/`path` come from the template's source
 * (`catalog/plans/x.yaml#spec.templates[2]` gives file `catalog/plans/x.yaml`, path `spec.templates[2].content`).
 */
export async function compileCheck(templates: PlanTemplate[], planName: string, name = (action: string) => `sample-instance/${action}`): Promise<Problem[]> {
  const out: Problem[] = [];
  for (const t of templates) {
    const problem = await compileProblem(t, { name: name(t.action) });
    if (problem === undefined) continue;
    const hash = t.source.indexOf("#");
    const file = hash === -1 ? t.source : t.source.slice(0, hash);
    const path = hash === -1 ? "" : `${t.source.slice(hash + 1)}.content`;
    out.push({ file, path, message: `plan ${planName}: template ${t.action}: ${problem}` });
  }
  return out;
}

function assertRequest(req: Omit<RenderRequest, "defaultNamespace" | "labels">): void {
  if (typeof req.action !== "string" || req.action === "") throw new InvalidArgumentError("action must be a non-empty string");
  if (!Array.isArray(req.templates)) throw new InvalidArgumentError("templates must be an array");
}
