/**
 * The renderer: a plan's templates and the records in, Kubernetes manifests out. Pure: no I/O,
 * no clock, same input gives byte-identical output. The template language is documented in
 * docs/templates.md.
 */
import type { PlanTemplate } from "../catalog/index.js";
import { formatProblem, RenderError, type Problem } from "../errors/index.js";
import { compileProblem, renderTemplateText } from "./engine.js";
import { isDns1123Label, isLabelValue, qualifiedNameProblem } from "./kubernetes.js";
import { splitDocuments, toManifests } from "./manifests.js";
import type { Manifest, RenderRequest } from "./types.js";

export type { RenderRequest, RenderValues, Manifest } from "./types.js";

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
export function render(req: RenderRequest): Manifest[] {
  assertRequest(req);
  if (!isDns1123Label(req.defaultNamespace)) {
    throw new TypeError(`defaultNamespace ${JSON.stringify(req.defaultNamespace)} is not a DNS-1123 label`);
  }
  for (const [key, value] of Object.entries(req.labels)) {
    const problem = qualifiedNameProblem(key) ?? (isLabelValue(value) ? undefined : `value ${JSON.stringify(value)} is not a label value`);
    if (problem !== undefined) throw new TypeError(`broker label ${JSON.stringify(key)}: ${problem}`);
  }
  const problems: Problem[] = [];
  const documents = req.templates
    .filter((t) => t.action === req.action)
    .flatMap((t) => splitDocuments(renderTemplateText(t, req.values, req.planName), t.source, problems));
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
export function renderText(req: Omit<RenderRequest, "defaultNamespace" | "labels">): string {
  assertRequest(req);
  return req.templates
    .filter((t) => t.action === req.action)
    .map((t) => renderTemplateText(t, req.values, req.planName))
    .reduce((text, part) => (text === "" || text.endsWith("\n") ? text + part : `${text}\n${part}`), "");
}

/**
 * One problem per template that cannot be rendered whatever the values: unsupported engine,
 * syntax error, unknown helper. `file`/`path` come from the template's source
 * (`catalog/plans/x.yaml#spec.templates[2]` gives file `catalog/plans/x.yaml`, path `spec.templates[2].content`).
 */
export function compileCheck(templates: PlanTemplate[], planName: string): Problem[] {
  return templates.flatMap((t) => {
    const problem = compileProblem(t);
    if (problem === undefined) return [];
    const hash = t.source.indexOf("#");
    const file = hash === -1 ? t.source : t.source.slice(0, hash);
    const path = hash === -1 ? "" : `${t.source.slice(hash + 1)}.content`;
    return [{ file, path, message: `plan ${planName}: template ${t.action}: ${problem}` }];
  });
}

function assertRequest(req: Omit<RenderRequest, "defaultNamespace" | "labels">): void {
  if (typeof req.action !== "string" || req.action === "") throw new TypeError("action must be a non-empty string");
  if (!Array.isArray(req.templates)) throw new TypeError("templates must be an array");
}
