import { formatProblem, type Problem } from "../errors/index.js";

/**
 * A problem `validate` found. Errors fail the pull request (exit code 1); warnings are printed
 * but pass (exit code 0): they name what works today but will not do what the author may expect
 * (overrides of a deprovisioned instance).
 */
export interface ValidationProblem extends Problem {
  severity: "error" | "warning";
  /** More lines for a person (a unified diff for drift); the problem line stands without it. */
  detail?: string;
}

export function error(p: Problem & { detail?: string }): ValidationProblem {
  return { ...p, severity: "error" };
}

export function warning(p: Problem & { detail?: string }): ValidationProblem {
  return { ...p, severity: "warning" };
}

/** `file: path: message`, `file: path: warning: message` for warnings (path left out when empty). */
export function formatValidationProblem(p: ValidationProblem): string {
  return formatProblem({ file: p.file, path: p.path, message: p.severity === "warning" ? `warning: ${p.message}` : p.message });
}
