import Handlebars from "handlebars";
import type { PlanTemplate } from "../catalog/index.js";
import { RenderError, TemplateFailure } from "../errors/index.js";
import { HELPERS } from "./helpers.js";
import type { TemplateEngine } from "./engine.js";
import type { RenderValues } from "./types.js";

/**
 * A private Handlebars instance: the helpers registered here are the whole language (no plan can
 * add one), so `knownHelpersOnly` turns a misspelt helper into a compile error with its line.
 * `noEscape`: the output is YAML, not HTML. Prototype access stays disallowed (the runtime
 * default). `log` is removed: it writes to the console, and rendering does no I/O.
 */
const hb = Handlebars.create();
hb.unregisterHelper("log");
for (const [name, h] of Object.entries(HELPERS)) hb.registerHelper(name, located(name, h.min, h.max, h.fn));

const COMPILE_OPTIONS: CompileOptions = {
  noEscape: true,
  strict: false,
  knownHelpersOnly: true,
  knownHelpers: { ...Object.fromEntries(Object.keys(HELPERS).map((n) => [n, true])), log: false },
};

type CompileOptions = NonNullable<Parameters<typeof hb.compile>[1]>;
type Template = ReturnType<typeof hb.compile>;

interface HelperOptions {
  fn?: unknown;
  hash?: Record<string, unknown>;
  loc?: { start: { line: number } };
}

/** Adds the helper name and template line to a helper's failure, and checks how it is called. */
function located(name: string, min: number, max: number, fn: (...args: unknown[]) => unknown) {
  return (...args: unknown[]): unknown => {
    const options = args.pop() as HelperOptions;
    const data = options.loc ? { line: options.loc.start.line } : {};
    const fail = (message: string, cause?: unknown) => new RenderError(`helper ${name}: ${message}`, { cause, data });
    if (options.fn) throw fail("is not a block helper");
    if (options.hash && Object.keys(options.hash).length > 0) throw fail("takes no hash arguments");
    if (args.length < min || args.length > max) {
      const expected = min === max ? `${min}` : max === Infinity ? `at least ${min}` : `${min} to ${max}`;
      throw fail(`expects ${expected} argument(s), got ${args.length}`);
    }
    try {
      return fn(...args);
    } catch (e) {
      throw fail(e instanceof Error ? e.message : String(e), e);
    }
  };
}

/** Compiled templates by content; compiling is the expensive part, and catalogs change rarely. */
const cache = new Map<string, Template>();
const CACHE_LIMIT = 512;

function compiled(content: string): Template {
  let template = cache.get(content);
  if (template === undefined) {
    template = hb.compile(content, COMPILE_OPTIONS);
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
    cache.set(content, template);
  }
  return template;
}

/**
 * A Handlebars failure as `line N: what: "the template line"` when the line is known: from our
 * helper wrapper, from Handlebars compile errors (`lineNumber`), or from the parser's message,
 * whose own excerpt joins lines and is hard to read.
 */
function describeFailure(e: unknown, content: string): string {
  if (!(e instanceof Error)) return String(e);
  let line: unknown = e instanceof RenderError ? e.data.line : (e as { lineNumber?: unknown }).lineNumber;
  let message = e.message.replace(/ - \d+:\d+$/, "");
  const parse = /^Parse error on line (\d+):/.exec(e.message);
  if (parse) {
    line = Number(parse[1]);
    message = `parse error: ${e.message.split("\n").find((l) => l.startsWith("Expecting")) ?? "invalid syntax"}`;
  }
  if (typeof line !== "number") return message;
  return `line ${line}: ${message}: ${JSON.stringify((content.split("\n")[line - 1] ?? "").trim())}`;
}

/** Handlebars with the helper library of helpers.ts (docs/templates.md). */
export const handlebarsEngine: TemplateEngine = {
  type: "handlebars",
  description: "Handlebars with the broker's helper library (docs/templates.md)",
  compile(t: PlanTemplate): Promise<string | undefined> {
    try {
      hb.precompile(t.content, COMPILE_OPTIONS);
      return Promise.resolve(undefined);
    } catch (e) {
      return Promise.resolve(describeFailure(e, t.content));
    }
  },
  render(t: PlanTemplate, values: RenderValues): Promise<string> {
    try {
      return Promise.resolve(handlebarsEngine.renderSync!(t, values, { name: "" }));
    } catch (e) {
      return Promise.reject(e);
    }
  },
  renderSync(t: PlanTemplate, values: RenderValues): string {
    try {
      return compiled(t.content)(values);
    } catch (e) {
      throw new TemplateFailure(describeFailure(e, t.content));
    }
  },
};
