import { readFile } from "node:fs/promises";
import { Ajv, type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import { InternalError } from "../errors/index.js";

/**
 * The JSON schemas of repo-layout/schemas/, compiled once. They are read from the package at run
 * time (the same relative location from src/catalog and dist/catalog) rather than imported, so the
 * files users point their editors at are the ones the broker enforces.
 */
const SCHEMA_DIR = new URL("../../repo-layout/schemas/", import.meta.url);
const ID_BASE = "https://gitops-broker.io/schemas/v1alpha1/";

export interface DocumentValidators {
  service: ValidateFunction;
  plan: ValidateFunction;
  cluster: ValidateFunction;
  sfCluster: ValidateFunction;
}

let compiled: Promise<DocumentValidators> | undefined;

export function documentValidators(): Promise<DocumentValidators> {
  compiled ??= compile().catch((e: unknown) => {
    compiled = undefined; // a later call may succeed (e.g. a file was being replaced)
    throw e;
  });
  return compiled;
}

async function compile(): Promise<DocumentValidators> {
  // verbose: errors carry the failing schema, whose `title` gives friendlier messages.
  // strictRequired is off: `oneOf: [{required: [content]}, ...]` names properties of the parent.
  const ajv = new Ajv({ allErrors: true, verbose: true, strict: true, strictRequired: false });
  addFormats.default(ajv);
  for (const name of ["service", "plan", "cluster"]) {
    const url = new URL(`${name}.schema.json`, SCHEMA_DIR);
    let schema: object;
    try {
      schema = JSON.parse(await readFile(url, "utf8")) as object;
    } catch (e) {
      throw new InternalError(`cannot read the repository schema ${url.pathname}`, { cause: e });
    }
    ajv.addSchema(schema);
  }
  const get = (ref: string): ValidateFunction => {
    const v = ajv.getSchema(ID_BASE + ref);
    if (!v) throw new InternalError(`schema ${ref} is missing from repo-layout/schemas`);
    return v;
  };
  return {
    service: get("service.schema.json"),
    plan: get("plan.schema.json"),
    cluster: get("cluster.schema.json#/definitions/cluster"),
    sfCluster: get("cluster.schema.json#/definitions/sfCluster"),
  };
}
