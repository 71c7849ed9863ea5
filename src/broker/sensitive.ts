import { sensitiveParameters, type ParametersSchemaKey, type Plan } from "../catalog/index.js";
import { BadRequestError } from "../errors/index.js";
import type { Ctx } from "./context.js";

/**
 * Sensitive parameters (writeOnly / format: password) never reach Git in plaintext. A cluster may
 * declare how to encrypt them (`spec.encryption`), but this broker version does not encrypt yet, so
 * every request carrying one is refused before anything is committed (ADR 0007). Called inside the
 * queued operation, once the instance's cluster is known (for provision: after placement).
 */
export function refuseSensitiveParameters(
  ctx: Ctx,
  plan: Plan,
  which: ParametersSchemaKey,
  parameters: unknown,
  clusterId: string,
): void {
  const found = sensitiveParameters(plan, which, parameters);
  if (found.length === 0) return;
  const what = `${found.map((f) => `${f.path} is marked ${f.marker}`).join(", ")} in plan ${plan.name}`;
  const cluster = ctx.deps.view.clusters().find((c) => c.id === clusterId);
  throw new BadRequestError(
    cluster?.encryption
      ? `${what}: cluster ${clusterId} declares SOPS encryption, but this broker version cannot encrypt yet, so sensitive parameters are refused`
      : `${what}: sensitive parameters cannot be stored in Git unless cluster ${clusterId} declares how to encrypt them`,
  );
}
