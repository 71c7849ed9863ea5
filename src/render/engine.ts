import type { PlanTemplate } from "../catalog/index.js";
import { InvalidArgumentError } from "../errors/index.js";
import type { RenderCapabilities, RenderValues } from "./types.js";

/**
 * The template engines, by the `type` a plan's template names. An engine is one module that
 * compiles (checks) a template, renders it, and describes its own failures; `render`,
 * `validate` and the plan documentation read this registry, so adding an engine is adding a
 * module and one line in engines.ts.
 */
export interface TemplateEngine {
  /** The `type` plans write, e.g. `handlebars`. */
  readonly type: string;
  /** Further spellings accepted for `type` (Service Fabrik took `Gotemplate`, `GOTEMPLATE` ...). */
  readonly aliases?: readonly string[];
  /** One line for `validate` and the docs. */
  readonly description: string;
  /** Actions the engine cannot render (e.g. text templates for a chart engine). */
  supports?(action: string): boolean;
  /** Why the template cannot be used whatever the values (a syntax error ...), or undefined. */
  compile(template: PlanTemplate, context: TemplateContext): Promise<string | undefined>;
  /**
   * The template's output text. Rejects with the failure described for a user (engine's own
   * text, with line and column where it knows them), without the `plan x: template y` prefix.
   */
  render(template: PlanTemplate, values: RenderValues, context: TemplateContext): Promise<string>;
  /** The same, synchronously, for engines that run on the calling thread (handlebars). */
  renderSync?(template: PlanTemplate, values: RenderValues, context: TemplateContext): string;
}

export interface TemplateContext {
  /** Name of the template in the engine's messages: Service Fabrik's `<instance-id>/<action>`. */
  name: string;
  /** The target cluster's Kubernetes version and API versions (helm's `.Capabilities`); undefined: Helm's defaults. */
  capabilities?: RenderCapabilities;
}

const engines = new Map<string, TemplateEngine>();
const primary: TemplateEngine[] = [];

export function registerEngine(engine: TemplateEngine): void {
  for (const type of [engine.type, ...(engine.aliases ?? [])]) {
    if (engines.has(type)) throw new InvalidArgumentError(`template engine ${JSON.stringify(type)} registered twice`);
    engines.set(type, engine);
  }
  primary.push(engine);
}

export function engineFor(type: string): TemplateEngine | undefined {
  return engines.get(type);
}

/** The registered engines' types (not their aliases), in registration order. */
export function engineTypes(): string[] {
  return primary.map((e) => e.type);
}

/** Why a template's `type` and action cannot be rendered, or undefined. */
export function engineProblem(type: string, action: string): string | undefined {
  const engine = engines.get(type);
  if (engine === undefined) return `engine ${JSON.stringify(type)} is not supported (supported: ${engineTypes().join(", ")})`;
  if (engine.supports && !engine.supports(action)) return `engine ${engine.type} cannot render the ${action} template`;
  return undefined;
}
