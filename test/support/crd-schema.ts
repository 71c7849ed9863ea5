/**
 * Offline validation of a custom resource against the schema of its CustomResourceDefinition (the
 * CRDs the test tools copy out of Flux's and Argo CD's modules, test-tools.ts `crds`), for
 * documents newer than the kubernetes-models of the same kinds (kube-models.ts): types, enums,
 * required fields and patterns with ajv, and, like kube-apiserver's strict field validation, every
 * field the schema does not declare (an object schema with `properties` admits no other field
 * unless it says `x-kubernetes-preserve-unknown-fields` or has `additionalProperties`).
 *
 * Not checked: the CEL rules (`x-kubernetes-validations`) and `metadata` beyond being an object,
 * which the API server checks for every kind alike.
 *
 *   const validate = await crdValidator(path.join(testTool("crds"), "source.toolkit.fluxcd.io_gitrepositories.yaml"));
 *   validate(object)   // [] or ["/spec/sparseCheckout: must be array", ...]
 */
import { readFile } from "node:fs/promises";
import { Ajv } from "ajv";
import { parse } from "yaml";

type Schema = Record<string, unknown>;

/** The schema with `additionalProperties: false` wherever Kubernetes would prune unknown fields. */
function strict(schema: Schema): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "properties" && typeof value === "object" && value !== null) {
      out[key] = Object.fromEntries(Object.entries(value as Record<string, Schema>).map(([k, v]) => [k, strict(v)]));
    } else if ((key === "items" || key === "additionalProperties") && typeof value === "object" && value !== null) {
      out[key] = strict(value as Schema);
    } else if ((key === "anyOf" || key === "allOf" || key === "oneOf") && Array.isArray(value)) {
      out[key] = (value as Schema[]).map(strict);
    } else {
      out[key] = value;
    }
  }
  if (out.properties !== undefined && out.additionalProperties === undefined && out["x-kubernetes-preserve-unknown-fields"] !== true) {
    out.additionalProperties = false;
  }
  return out;
}

/**
 * A validator of objects of the CRD in `file` (its served `version`, default the storage version):
 * resolves to a function returning every problem as `<instance path>: <message>`.
 */
export async function crdValidator(file: string, version?: string): Promise<(object: unknown) => string[]> {
  const crd = parse(await readFile(file, "utf8")) as {
    spec: { group: string; names: { kind: string }; versions: { name: string; storage?: boolean; schema?: { openAPIV3Schema?: Schema } }[] };
  };
  const served = crd.spec.versions.find((v) => (version === undefined ? v.storage === true : v.name === version));
  const schema = served?.schema?.openAPIV3Schema;
  if (schema === undefined) throw new Error(`${file}: no schema for version ${version ?? "(storage)"} of ${crd.spec.names.kind}`);
  // strict: false lets the x-kubernetes-* keywords through; formats are the API server's business.
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
  const validate = ajv.compile(strict(schema));
  return (object) => (validate(object) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || "/"}: ${e.message ?? e.keyword}${e.keyword === "additionalProperties" ? ` (${String(e.params.additionalProperty)})` : ""}`));
}
