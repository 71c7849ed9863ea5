/**
 * The JSON schemas of repo-layout/schemas/ for catalog and cluster documents (service, plan,
 * cluster, sfCluster), precompiled by scripts/generate-validators.mjs (ADR 0020): the files users
 * point their editors at are the ones the broker enforces, and a test fails when a module no longer
 * matches its schema.
 */
export { validators as documentValidators } from "./document-validators.generated.js";
