/** scripts/generate-validators.mjs, for the test that checks the committed modules. */
export interface GeneratedModule {
  /** Path from the repository root, e.g. src/repo/record-validators.generated.ts. */
  file: string;
  text: string;
}
export interface ModuleSpec {
  file: string;
  options: Record<string, unknown>;
  formats: boolean;
  schemas: string[];
  exports: Record<string, string>;
}
export const MODULES: ModuleSpec[];
export function generate(): Promise<GeneratedModule[]>;
