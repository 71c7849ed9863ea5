import { BaseError, type ErrorOptions } from "./base.js";

/** What stops a start or a load: a configuration, a catalog, a data directory held by another process. */

/** One problem in a configuration or repository file, located by a JSON-pointer-like path. */
export interface Problem {
  /** File (repo-relative) or "config"/"env". */
  file: string;
  /** Path inside the document, e.g. `spec.templates[2].content` ("" for the whole file). */
  path: string;
  message: string;
}

export function formatProblem(p: Problem): string {
  return p.path ? `${p.file}: ${p.path}: ${p.message}` : `${p.file}: ${p.message}`;
}

export class ConfigError extends BaseError {
  static override readonly code: string = "ConfigError";
  readonly problems: Problem[];
  constructor(problems: Problem[], options?: ErrorOptions) {
    super(`invalid configuration:\n${problems.map(formatProblem).join("\n")}`, options);
    this.problems = problems;
  }
}

export class CatalogError extends BaseError {
  static override readonly code: string = "CatalogError";
  readonly problems: Problem[];
  constructor(problems: Problem[], options?: ErrorOptions) {
    super(`invalid catalog:\n${problems.map(formatProblem).join("\n")}`, options);
    this.problems = problems;
  }
}

/** Another process holds the data directory (see lockDataDir). */
export class DataDirLockedError extends BaseError {
  static override readonly code: string = "DataDirLocked";
  readonly holderPid: number | undefined;
  constructor(dataDir: string, role: string, holderPid: number | undefined, holderHost: string | undefined, options?: ErrorOptions) {
    const holder = holderPid === undefined ? "another process (PID unknown)" : `PID ${holderPid}${holderHost ? ` on ${holderHost}` : ""}`;
    const who = role === "serve" ? "gitops-broker serve" : "a gitops-broker command";
    super(`data directory ${dataDir} is in use by ${who}: ${holder}`, {
      ...options,
      data: { dataDir, role, holderPid, holderHost },
    });
    this.holderPid = holderPid;
  }
}
