import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { ConfigMap, Service } from "kubernetes-models/v1";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import type { PlanTemplate } from "../catalog/index.js";
import { compileCheck, renderNow, renderTextNow, type Manifest, type RenderRequest, type RenderValues } from "./index.js";

const FIXTURE = "src/render/testdata/zalando-postgres-plan.yaml";
const LABELS = { "app.kubernetes.io/managed-by": "gitops-broker", "gitops-broker.io/instance-id": "pg-1" };

type Validate = (object: Record<string, unknown>) => void;

/** kubernetes-models for the kinds the fixtures render; a kind without a model must be listed in NO_MODEL. */
const MODELS: Record<string, Validate> = {
  "v1/ConfigMap": (o) => new ConfigMap(o).validate(),
  "v1/Service": (o) => new Service(o).validate(),
  "networking.k8s.io/v1/NetworkPolicy": (o) => new NetworkPolicy(o).validate(),
};
const NO_MODEL = new Set(["acid.zalan.do/v1/postgresql"]);

function validateWithModel(m: Manifest): void {
  const key = `${m.apiVersion}/${m.kind}`;
  const validate = MODELS[key];
  if (validate === undefined) {
    expect(NO_MODEL.has(key), `no kubernetes-models model listed for ${key}`).toBe(true);
    return;
  }
  validate(m.object);
}

let plan: Record<string, unknown>;
let templates: PlanTemplate[];

beforeAll(async () => {
  plan = parse(await readFile(fileURLToPath(new URL("./testdata/zalando-postgres-plan.yaml", import.meta.url)), "utf8")) as Record<string, unknown>;
  const spec = plan.spec as { templates: { action: string; type: string; content: string }[] };
  templates = spec.templates.map((t, i) => ({ ...t, source: `${FIXTURE}#spec.templates[${i}]` }));
});

function binding(name: string): Record<string, unknown> {
  return { apiVersion: "gitops-broker.io/v1alpha1", kind: "ServiceBinding", metadata: { name, namespace: "tenant-a" }, spec: { bindingId: name } };
}

function values(parameters: Record<string, unknown> = {}, bindingNames: string[] = []): RenderValues {
  return {
    service: { spec: { name: "postgresql" } },
    plan,
    instance: {
      apiVersion: "gitops-broker.io/v1alpha1",
      kind: "ServiceInstance",
      metadata: { name: "pg-1", namespace: "tenant-a" },
      spec: { instanceId: "pg-1", parameters },
    },
    bindings: bindingNames.map(binding),
  };
}

function request(action: string, v: RenderValues): RenderRequest {
  return { action, templates, values: v, defaultNamespace: "tenant-a", labels: LABELS, planName: "v15-small" };
}

describe("Zalando postgres operator plan", () => {
  it("compiles", async () => {
    expect(await compileCheck(templates, "v15-small")).toEqual([]);
  });

  it("renders the postgresql cluster and its NetworkPolicy on provision", () => {
    const manifests = renderNow(request("provision", values({}, ["b-1", "b-2"])));
    expect(manifests.map((m) => m.fileName)).toEqual(["postgresql-sapcp-pg-1.yaml", "networkpolicy-sapcp-pg-1-access.yaml"]);
    expect(manifests[0]?.yaml).toBe(`apiVersion: acid.zalan.do/v1
kind: postgresql
metadata:
  name: sapcp-pg-1
  namespace: tenant-a
  annotations:
    gitops-broker.io/plan-id: 6a3c1f2e-3d1b-4f5e-9a55-2b8d2c4e7f10
    gitops-broker.io/service-id: 0c0a7a3e-52a4-4c53-9a4a-0e4c5d1a2b3c
  labels:
    app.kubernetes.io/instance: pg-1
    app.kubernetes.io/managed-by: gitops-broker
    app.kubernetes.io/name: postgresql
    gitops-broker.io/instance-id: pg-1
spec:
  databases:
    main: owner
  numberOfInstances: 2
  postgresql:
    parameters:
      max_connections: "100"
    version: "15"
  resources:
    limits:
      cpu: "1"
      memory: 2Gi
    requests:
      cpu: 500m
      memory: 256Mi
  teamId: sapcp
  users:
    b-1: []
    b-2: []
    owner:
      - superuser
      - createdb
  volume:
    size: 20Gi
`);
    expect(manifests[1]?.object.spec).toEqual({
      podSelector: { matchLabels: { "cluster-name": "sapcp-pg-1" } },
      policyTypes: ["Ingress"],
      ingress: [{ ports: [{ port: 5432, protocol: "TCP" }], from: [{ ipBlock: { cidr: "10.0.0.0/8" } }] }],
    });
    for (const m of manifests) {
      expect(parse(m.yaml)).toEqual(m.object);
      validateWithModel(m);
    }
  });

  it("takes instance parameters over plan defaults, and renders update like provision", () => {
    const v = values({ numberOfInstances: 3, maxConnections: 250 });
    const [cluster] = renderNow(request("provision", v));
    expect(cluster?.object.spec).toMatchObject({ numberOfInstances: 3, postgresql: { parameters: { max_connections: "250" } } });
    expect(renderNow(request("update", v)).map((m) => m.yaml)).toEqual(renderNow(request("provision", v)).map((m) => m.yaml));
  });

  it("renders a binding's connection ConfigMap that names the operator's Secret", () => {
    const manifests = renderNow({ ...request("bind", { ...values({}, ["b-1"]), binding: binding("b-1") }), labels: { ...LABELS, "gitops-broker.io/binding-id": "b-1" } });
    expect(manifests.map((m) => m.fileName)).toEqual(["configmap-b-1-connection.yaml"]);
    expect(manifests[0]?.object).toEqual({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "b-1-connection", namespace: "tenant-a", labels: { ...LABELS, "gitops-broker.io/binding-id": "b-1" } },
      data: {
        dbname: "main",
        host: "sapcp-pg-1.tenant-a.svc",
        port: "5432",
        secretName: "b-1.sapcp-pg-1.credentials.postgresql.acid.zalan.do",
        username: "b-1",
      },
    });
    for (const m of manifests) validateWithModel(m);
  });

  it("renders the sources the status watcher reads, with the binding's Secret only for a binding", () => {
    const text = (v: RenderValues) => renderTextNow({ action: "sources", templates, values: v, planName: "v15-small" });
    expect(parse(text(values()))).toEqual({
      postgresql: { apiVersion: "acid.zalan.do/v1", kind: "postgresql", name: "sapcp-pg-1", namespace: "tenant-a" },
    });
    expect(parse(text({ ...values({}, ["b-1"]), binding: binding("b-1") }))).toMatchObject({
      secret: { apiVersion: "v1", kind: "Secret", name: "b-1.sapcp-pg-1.credentials.postgresql.acid.zalan.do", namespace: "tenant-a" },
    });
  });
});

describe("kubernetes-models validation of rendered objects", () => {
  const service = (port: string) => `apiVersion: v1
kind: Service
metadata:
  name: {{instance.metadata.name}}
spec:
  type: ClusterIP
  selector:
    cluster-name: {{instance.metadata.name}}
  ports:
  - name: postgresql
    port: ${port}
    targetPort: 5432
`;
  const req = (content: string): RenderRequest => ({
    action: "provision",
    templates: [{ action: "provision", type: "handlebars", content, source: "inline" }],
    values: values(),
    defaultNamespace: "tenant-a",
    labels: LABELS,
    planName: "test",
  });

  it("accepts a rendered Service", () => {
    const [m] = renderNow(req(service("5432")));
    expect(m?.kind).toBe("Service");
    validateWithModel(m as Manifest);
  });

  it("catches what the renderer does not check (so the check above can fail)", () => {
    const [m] = renderNow(req(service('"5432"')));
    expect(() => validateWithModel(m as Manifest)).toThrow(/port must be integer/);
  });
});
