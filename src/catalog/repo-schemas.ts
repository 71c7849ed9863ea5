import type { ValidateFunction } from "ajv";
import { validators } from "./document-validators.generated.js";

/**
 * The JSON schemas of repo-layout/schemas/ for catalog and cluster documents, precompiled by
 * scripts/generate-validators.mjs (ADR 0020): the files users point their editors at are the ones
 * the broker enforces, and a test fails when a module no longer matches its schema.
 */
export interface DocumentValidators {
  service: ValidateFunction;
  plan: ValidateFunction;
  cluster: ValidateFunction;
  sfCluster: ValidateFunction;
}

export const documentValidators: DocumentValidators = validators;
