import * as fs from "node:fs/promises";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDirTree, type TempDirTree } from "../../test/support/dir-tree.js";
import { loadCatalog, type Plan, type Service } from "../catalog/index.js";
import type { RenderValues } from "../render/index.js";
import { renderSources, renderStatus } from "./status-templates.js";

/** The sample catalog's sources/status templates (examples/catalog/templates/postgresql-*.hbs). */
const EXAMPLES = fileURLToPath(new URL("../../examples/catalog/", import.meta.url));
const NAMESPACE = "gitops-broker-instances";

let repo: TempDirTree;
let service: Service;
let plan: Plan;
beforeAll(async () => {
  repo = await tempDirTree("status-templates-");
  await fs.cp(EXAMPLES, path.join(repo.root, "catalog"), { recursive: true });
  const { catalog, problems } = await loadCatalog(repo.tree);
  expect(problems).toEqual([]);
  service = catalog.services[0]!;
  plan = service.plans.find((p) => p.name === "medium")!;
});
afterAll(async () => {
  await repo.remove();
});

const instance = { kind: "ServiceInstance", metadata: { name: "db-1", namespace: NAMESPACE }, spec: { instanceId: "db-1" } };
const binding = { kind: "ServiceBinding", metadata: { name: "app-1", namespace: NAMESPACE }, spec: { bindingId: "app-1" } };
const values = (extra: Record<string, unknown> = {}): RenderValues => ({ service: service.raw, plan: plan.raw, instance, bindings: [], ...extra });
const b64 = (s: string) => Buffer.from(s).toString("base64");

const postgresql = (phase?: string) => ({
  apiVersion: "acid.zalan.do/v1",
  kind: "postgresql",
  metadata: { name: "pg-db-1", namespace: NAMESPACE },
  ...(phase ? { status: { PostgresClusterStatus: phase } } : {}),
});
const master = { apiVersion: "v1", kind: "Service", metadata: { name: "pg-db-1" }, spec: { clusterIP: "10.96.0.7", ports: [{ port: 5432 }] } };
const secret = { apiVersion: "v1", kind: "Secret", metadata: { name: "app-1.pg-db-1.credentials.postgresql.acid.zalan.do" }, data: { username: b64("app-1"), password: b64("s3cr3t-pw") } };

describe("the sample catalog's sources template", () => {
  it("names the postgresql and its master Service, and a binding's Secret", () => {
    const cluster = { apiVersion: "acid.zalan.do/v1", kind: "postgresql", name: "pg-db-1", namespace: NAMESPACE };
    const svc = { apiVersion: "v1", kind: "Service", name: "pg-db-1", namespace: NAMESPACE };
    expect(Object.fromEntries(renderSources(plan, values()))).toEqual({ postgresql: cluster, master: svc });
    expect(Object.fromEntries(renderSources(plan, values({ binding, bindings: [binding] })))).toEqual({
      postgresql: cluster,
      master: svc,
      secret: { apiVersion: "v1", kind: "Secret", name: "app-1.pg-db-1.credentials.postgresql.acid.zalan.do", namespace: NAMESPACE },
    });
  });
});

describe("the sample catalog's status template", () => {
  it("follows the operator's PostgresClusterStatus for provision and update", () => {
    expect(renderStatus(plan, "provision", values())).toEqual({ state: "in progress", description: "PostgreSQL cluster: waiting for the operator" });
    expect(renderStatus(plan, "provision", values({ postgresql: postgresql("Creating") }))).toMatchObject({ state: "in progress" });
    expect(renderStatus(plan, "provision", values({ postgresql: postgresql("Running") }))).toEqual({
      state: "succeeded",
      description: "PostgreSQL cluster pg-db-1 is running",
    });
    expect(renderStatus(plan, "provision", values({ postgresql: postgresql("CreateFailed") }))).toMatchObject({ state: "failed" });
    expect(renderStatus(plan, "update", values({ postgresql: postgresql("UpdateFailed") }))).toEqual({
      state: "failed",
      error: "the operator could not update PostgreSQL cluster pg-db-1",
      instanceUsable: true,
      updateRepeatable: true,
    });
  });

  it("succeeds a deprovision once the postgresql is gone", () => {
    expect(renderStatus(plan, "deprovision", values({ postgresql: postgresql("Running") }))).toMatchObject({ state: "in progress" });
    expect(renderStatus(plan, "deprovision", values())).toEqual({ state: "succeeded" });
  });

  it("answers a bind with the credentials from the operator's Secret, once it exists", () => {
    const bindValues = values({ binding, bindings: [binding], postgresql: postgresql("Running"), master });
    expect(renderStatus(plan, "bind", bindValues)).toMatchObject({ state: "in progress" });
    expect(renderStatus(plan, "bind", { ...bindValues, secret })).toEqual({
      state: "succeeded",
      response: {
        credentials: {
          dbname: "app",
          hostname: "10.96.0.7",
          password: "s3cr3t-pw",
          port: 5432,
          uri: "postgresql://app-1:s3cr3t-pw@10.96.0.7:5432/app?sslmode=require",
          username: "app-1",
        },
      },
    });
    expect(renderStatus(plan, "unbind", { ...bindValues, secret })).toMatchObject({ state: "in progress" });
    expect(renderStatus(plan, "unbind", bindValues)).toEqual({ state: "succeeded" });
  });
});

describe("invalid template output", () => {
  const withTemplates = (sources: string, status: string): Plan => ({
    ...plan,
    templates: [
      { action: "sources", type: "handlebars", content: sources, source: "inline-sources" },
      { action: "status", type: "handlebars", content: status, source: "inline-status" },
    ],
  });

  it("refuses sources that shadow a value or lack a field", () => {
    const bad = withTemplates("instance:\n  apiVersion: v1\n  kind: Secret\n  name: x\ncm:\n  apiVersion: v1\n  kind: ConfigMap\n", "");
    expect(() => renderSources(bad, values())).toThrow(/key instance is reserved.*cm: name must be non-empty strings/);
  });

  it("refuses an unknown state and a response that is not JSON, without quoting the response", () => {
    const bad = withTemplates("", "bind:\n  state: done\n  response: '{\"credentials\": {\"password\": \"hunter2\"'\n");
    let message = "";
    try {
      renderStatus(bad, "bind", values());
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/bind\.state must be one of in progress, succeeded, failed; bind\.response is not valid JSON/);
    expect(message).not.toContain("hunter2");
  });

  it("has no section for an action the template does not mention", () => {
    expect(renderStatus(withTemplates("", "provision:\n  state: succeeded\n"), "bind", values())).toBeUndefined();
  });
});
