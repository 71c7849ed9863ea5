/** scripts/test-prerequisites.mjs, for the global setup and its tests. */
export const TOOLS_GO: string;
export const DEFAULT_PROGRAM_DIRS: string[];
export interface Program {
  name: string;
  /** The Debian package that has it; undefined for go (Debian 12's is too old). */
  debian: string | undefined;
  /** Why a program that is there cannot be used. */
  note?: string;
}
export const PROGRAMS: Omit<Program, "note">[];
export function findPrograms(env?: NodeJS.ProcessEnv): { missing: Program[]; path: string };
export function installCommand(missing: Program[], root: boolean): string;
export function describeMissing(missing: Program[], root: boolean): string | undefined;
