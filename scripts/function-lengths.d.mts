/** scripts/function-lengths.mjs, for its tests. */
import type { SourceFile } from "typescript";

export const LIMIT: number;
export const ALLOWLIST: string;
export interface FunctionLength {
  /** Path from the project root, `/`-separated. */
  file: string;
  /** Qualified: enclosing classes and functions, then its own name, joined with dots. */
  name: string;
  /** 1-based line of its start. */
  line: number;
  lines: number;
}
export interface AllowEntry {
  file: string;
  function: string;
  adr: string;
  note?: string;
}
export function isMeasured(file: string): boolean;
export function functionLengths(sourceFile: SourceFile, file: string): FunctionLength[];
export function readAllowlist(root: string): AllowEntry[];
export function judge(
  functions: FunctionLength[],
  allowlist: AllowEntry[],
  readAdr: (adr: string) => string | undefined,
  limit?: number,
): { long: (FunctionLength & { allowed: AllowEntry | undefined })[]; over: FunctionLength[]; problems: string[] };
export function checkFunctionLengths(root: string, sourceFiles: readonly SourceFile[], limit?: number): string[];
