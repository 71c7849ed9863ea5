/**
 * The kubernetes-models of a document, for offline validation of the delivery examples:
 * `@kubernetes-models/argo-cd` for argoproj.io, `@kubernetes-models/flux-cd` for the Flux groups,
 * `kubernetes-models` for the core API groups.
 *
 * A model's `validate()` checks types, enums and required fields but, like the CRD schemas it is
 * generated from, lets unknown fields through (the API server prunes them silently), so a
 * misspelt field would pass. `typeErrors` closes that gap with the model's TypeScript interface
 * (`I<Kind>`), whose excess-property check names every field the schema does not know.
 */
import { createRequire } from "node:module";
import path from "node:path";
import ts from "typescript";

export type ModelClass = new (data: Record<string, unknown>) => { validate(): void };

export interface TypedDocument {
  apiVersion: string;
  kind: string;
  object: unknown;
}

const require = createRequire(import.meta.url);

export function modelModule(apiVersion: string): string {
  const group = apiVersion.includes("/") ? apiVersion.slice(0, apiVersion.indexOf("/")) : "";
  if (group === "argoproj.io") return `@kubernetes-models/argo-cd/${apiVersion}`;
  if (group.endsWith(".toolkit.fluxcd.io")) return `@kubernetes-models/flux-cd/${apiVersion}`;
  return `kubernetes-models/${apiVersion}`;
}

/** The model class of apiVersion/kind, or undefined when the packages have none. */
export function modelFor(apiVersion: string, kind: string): ModelClass | undefined {
  let exports: Record<string, unknown>;
  try {
    exports = require(modelModule(apiVersion)) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const model = exports[kind];
  return typeof model === "function" ? (model as ModelClass) : undefined;
}

/**
 * Type-checks each document against its model's interface in one in-memory program and returns
 * the error messages of each document, in input order (an empty list when it conforms).
 */
export function typeErrors(docs: TypedDocument[]): string[][] {
  // Inside the repository, so that the model packages resolve from its node_modules.
  const fileName = path.resolve(import.meta.dirname, "__typed-documents__.ts");
  const lines = docs.flatMap((d, i) => [
    `import type { I${d.kind} as T${i} } from ${JSON.stringify(modelModule(d.apiVersion))};`,
    `export const d${i}: T${i} = ${JSON.stringify(d.object)};`,
  ]);
  const text = lines.join("\n");
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, language, ...rest) =>
    name === fileName ? ts.createSourceFile(name, text, language) : getSourceFile.call(host, name, language, ...rest);
  host.fileExists = (name) => name === fileName || fileExists.call(host, name);
  host.readFile = (name) => (name === fileName ? text : readFile.call(host, name));
  const program = ts.createProgram([fileName], options, host);

  const errors = docs.map((): string[] => []);
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n");
    if (diagnostic.file?.fileName !== fileName || diagnostic.start === undefined) {
      throw new Error(`type-checking the documents failed: ${message}`);
    }
    const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
    errors[Math.floor(line / 2)]?.push(message);
  }
  return errors;
}
