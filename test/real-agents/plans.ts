import { parse, stringify } from "yaml";

/**
 * The sample medium plan (of sampleCatalogFiles) under `id` and the name `broken`, rendering a
 * postgresql the CRD refuses (numberOfInstances "two", not an integer), failed 40 s after its 202
 * (maximumPollingDuration): the agents' own failure reaches the operation.
 */
export function brokenPlan(files: Record<string, string>, id: string): string {
  const medium = parse(files["catalog/postgresql/plans/medium.yaml"]!) as { metadata: { name: string }; spec: Record<string, unknown> & { context: Record<string, unknown> } };
  medium.metadata.name = id;
  medium.spec = { ...medium.spec, id, name: "broken", maximumPollingDuration: 40, context: { ...medium.spec.context, numberOfInstances: "two" } };
  return stringify(medium);
}
