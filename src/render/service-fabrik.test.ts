import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import type { PlanTemplate } from "../catalog/types.js";
import { renderTemplateText, sfServiceBinding, sfServiceInstance, type RenderValues } from "./index.js";

/**
 * Service Fabrik's sample plan (src/catalog/testdata/service-fabrik/, unchanged) rendered by the
 * gotemplate engine. Every expected text below is reasoned from Go's text/template semantics and
 * sprig's/SF's functions, never produced by running our engine:
 * - `{{-` trims all whitespace (newlines included) before the action; `{{` trims nothing. So a
 *   line `{{- with .x }} {{ $v = . }} {{ end }}` prints two spaces when .x is non-empty (the
 *   space after `}}` and the one before `{{ end }}`) and nothing otherwise.
 * - numbers of the SF objects are float64 (SF passed them through json.Unmarshal into
 *   interface{}): fmt's %v prints float64 9.6 as 9.6, 100 as 100, 1000000 as 1e+06 (strconv 'g'
 *   with the shortest precision switches to an exponent when it is shorter: exponent < -4 or
 *   >= the digits needed, 21 for %v... for 1e6 the shortest 'g' form is "1e+06").
 * - numbers of live objects (sources) are int64, so the status template's `printf "%d" $port`
 *   prints 5432 (a float64 would print "%!d(float64=5432)").
 * - toYaml is sigs.k8s.io/yaml: map keys sorted, list items not indented under their key, the
 *   final newline trimmed; nindent 4 = "\n" + every line indented by 4.
 */

const planDoc = parse(readFileSync(new URL("../catalog/testdata/service-fabrik/sfplan-postgresql-v9.6-xxsmall.yaml", import.meta.url), "utf8")) as {
  spec: { templates: { action: string; type: string; content: string }[]; id: string; serviceId: string };
};
const serviceDoc = parse(readFileSync(new URL("../catalog/testdata/service-fabrik/sfservice-postgresql.yaml", import.meta.url), "utf8")) as Record<string, unknown>;

function template(action: string): PlanTemplate {
  const t = planDoc.spec.templates.find((x) => x.action === action)!;
  return { action, type: t.type, content: t.content, source: `catalog/sfplan.yaml#spec.templates[${action}]` };
}

const INSTANCE = {
  apiVersion: "gitops-broker.io/v1alpha1",
  kind: "ServiceInstance",
  metadata: { name: "key-of-abc-123", namespace: "tenant-a" },
  spec: {
    instanceId: "abc-123",
    serviceId: planDoc.spec.serviceId,
    planId: planDoc.spec.id,
    clusterId: "1",
    organizationGuid: "org-1",
    spaceGuid: "space-1",
    context: { platform: "cloudfoundry", organization_guid: "org-1", space_guid: "space-1" },
    parameters: { foo: "bar", size: 1000000 },
  },
  status: { operations: [] },
};
const BINDING = {
  apiVersion: "gitops-broker.io/v1alpha1",
  kind: "ServiceBinding",
  metadata: { name: "key-of-b-1", namespace: "tenant-a" },
  spec: { bindingId: "b-1", instanceId: "abc-123", serviceId: planDoc.spec.serviceId, planId: planDoc.spec.id },
  status: { operations: [] },
};

function values(extra: Record<string, unknown> = {}, plan: Record<string, unknown> = planDoc): RenderValues {
  return { service: serviceDoc, plan, instance: INSTANCE, bindings: [], ...extra };
}

const render = (action: string, v: RenderValues) => renderTemplateText(template(action), v, "v9.6-xxsmall");

describe("Service Fabrik's values", () => {
  it("shape the instance record as the SFServiceInstance the inter-operator read", () => {
    expect(sfServiceInstance(INSTANCE)).toEqual({
      apiVersion: "osb.servicefabrik.io/v1alpha1",
      kind: "SFServiceInstance",
      metadata: {
        name: "abc-123",
        namespace: "tenant-a",
        labels: { plan_id: planDoc.spec.id, service_id: planDoc.spec.serviceId, platform: "cloudfoundry", organization_guid: "org-1", space_guid: "space-1" },
        finalizers: ["broker.servicefabrik.io"],
      },
      spec: {
        instanceId: "abc-123",
        serviceId: planDoc.spec.serviceId,
        planId: planDoc.spec.id,
        context: INSTANCE.spec.context,
        organizationGuid: "org-1",
        spaceGuid: "space-1",
        parameters: INSTANCE.spec.parameters,
        clusterId: "1",
      },
    });
    // An id that is not a DNS-1123 subdomain is named by its sha224 (SF's getKubernetesName).
    const odd = sfServiceInstance({ ...INSTANCE, spec: { ...INSTANCE.spec, instanceId: "ABC_123" } });
    expect((odd.metadata as { name: string }).name).toMatch(/^[0-9a-f]{56}$/);
  });

  it("give a successor binding its predecessor's id, camelCased as SF camelCased a bind body (ours: OSB 2.17)", async () => {
    const successor = { ...BINDING, spec: { ...BINDING.spec, bindingId: "b-2", predecessorBindingId: "b-1" } };
    expect(sfServiceBinding(successor).spec).toMatchObject({ predecessorBindingId: "b-1" });
    expect(sfServiceBinding(BINDING).spec).not.toHaveProperty("predecessorBindingId");
    const t: PlanTemplate = { action: "bind", type: "gotemplate", content: "{{ .binding.spec.predecessorBindingId }}", source: "test" };
    expect(await renderTemplateText(t, values({ binding: successor }), "p")).toBe("b-1");
  });

  it("type the SF objects' numbers as float64 and the live objects' integers as int64", async () => {
    const t: PlanTemplate = { action: "status", type: "gotemplate", content: '{{ .instance.spec.parameters.size }} {{ .svc.spec.size }} {{ printf "%d" .svc.spec.size }}', source: "t" };
    // 1000000 as float64 prints 1e+06; as int64 1000000.
    expect(await renderTemplateText(t, values({ svc: { spec: { size: 1000000 } } }), "p")).toBe("1e+06 1000000 1000000");
  });
});

describe("the sample SF plan (postgresql v9.6-xxsmall)", () => {
  it("provision", async () => {
    // 12 spaces from the six non-empty `with`s inside `with .plan.spec.context` (namePrefix,
    // version, cpuCount, memoryGB, diskGB, maxConnections; enableLoadBalancers is false), 2 from
    // `with .instance.metadata.name`; then the newline after `$users := ...}}`, not trimmed.
    const expected = `${" ".repeat(14)}
apiVersion: acid.zalan.do/v1
kind: postgresql
metadata:
  name: sapcp-abc-123
  annotations:
    operator-broker/service-id: 24731fb8-7b84-5f57-914f-c3d55d793dd4
    operator-broker/plan-id: 39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88
spec:
  teamId: sapcp
  postgresql:
    version: "9.6"
    parameters:
      max_connections: "100"
  numberOfInstances: 2
  databases:
    main: main
  users:
    main:
    - superuser
    - createdb
  resources:
    requests:
      cpu: 500m
      memory: 256Mi
    limits:
      cpu: "1"
      memory: 2Gi
  volume:
    size: 20Gi
`;
    expect(await render("provision", values())).toBe(expected);
  });

  it("provision with load balancers", async () => {
    const plan = structuredClone(planDoc) as unknown as { spec: { context: Record<string, unknown> } };
    plan.spec.context.enableLoadBalancers = true;
    const text = await render("provision", values({}, plan));
    // One more non-empty `with` (16 spaces). In the `if`: `{{ toYaml . | nindent 4 }}` has no
    // trim marker, so the 6 spaces before it stay on their own line, and nindent starts a new one.
    expect(text.startsWith(`${" ".repeat(16)}\napiVersion:`)).toBe(true);
    expect(text.endsWith(`    size: 20Gi
  enableMasterLoadBalancer: true
  enableReplicaLoadBalancer: true
  allowedSourceRanges:
      
    - 0.0.0.0/0
`)).toBe(true);
  });

  it("sources, without and with a binding", async () => {
    // 6 spaces: instance name, namespace, namePrefix (no .binding: `with` of a missing key is empty).
    expect(await render("sources", values())).toBe(`${" ".repeat(6)}
postgresql:
  apiVersion: acid.zalan.do/v1
  kind: postgresql
  name: sapcp-abc-123
  namespace: tenant-a
`);
    expect(await render("sources", values({ binding: BINDING }))).toBe(`${" ".repeat(8)}
postgresql:
  apiVersion: acid.zalan.do/v1
  kind: postgresql
  name: sapcp-abc-123
  namespace: tenant-a
secret:
  apiVersion: v1
  kind: Secret
  name: b-1.sapcp-abc-123.credentials.postgresql.acid.zalan.do
  namespace: tenant-a
svc:
  apiVersion: v1
  kind: Service
  name: sapcp-abc-123
  namespace: tenant-a
`);
  });

  const postgresql = {
    apiVersion: "acid.zalan.do/v1",
    kind: "postgresql",
    metadata: { name: "sapcp-abc-123", namespace: "tenant-a" },
    spec: { numberOfInstances: 2, users: { main: ["superuser", "createdb"] } },
    status: { PostgresClusterStatus: "Running" },
  };

  it("status of a running cluster with the binding's Secret and Service", async () => {
    const live = {
      binding: BINDING,
      postgresql,
      svc: { apiVersion: "v1", kind: "Service", spec: { clusterIP: "10.0.0.7", ports: [{ port: 5432 }] } },
      secret: { apiVersion: "v1", kind: "Secret", data: { username: Buffer.from("b-1").toString("base64"), password: Buffer.from("pw").toString("base64") } },
    };
    // provision: `description: {{ with .reason }}...{{ else }} "" {{ end }}` prints the else
    // branch with its spaces. bind: 6 spaces (clusterIP, password, username `with`s), then the
    // newline before the `{{ end }}` of the succeeded branch. mustToJson sorts the map keys;
    // squote wraps the JSON in single quotes. deprovision: `with .postgresql` is non-empty, its
    // inner `with .metadata.deletionTimestamp` empty: two spaces.
    const response = `{"credentials":{"dbname":"main","hostname":"10.0.0.7","password":"pw","port":"5432","uri":"postgres://b-1:pw@10.0.0.7:5432/main?sslmode=require","username":"b-1"}}`;
    expect(await render("status", values(live))).toBe(`# Status template for provision call

provision:
  state: succeeded
  description:  "" 

# Status template for bind call      

bind:
  state: succeeded
  error: ""
  response: '${response}'

# Status template for unbind call
unbind:
  state: succeeded
  error: ""

# Status template for deprovision call  
deprovision:
  state: in progress
  error: ""
`);
  });

  it("status before anything exists", async () => {
    // No live object: every `with` is empty; bind stays in progress with an empty response; the
    // deprovision `with .postgresql` takes its else branch: " " + "  " (two spaces before end).
    expect(await render("status", values({ binding: BINDING }))).toBe(`# Status template for provision call

provision:
  state: in progress
  description:  "" 

# Status template for bind call
bind:
  state: in progress
  error: ""
  response: 

# Status template for unbind call
unbind:
  state: succeeded
  error: ""

# Status template for deprovision call   
deprovision:
  state: succeeded
  error: ""
`);
  });

  it("bind and unbind add and remove the binding's user in the live postgresql", async () => {
    // 2 spaces from `with .binding.metadata.name`, the newline after `$_ := set ...}}`, then
    // toYaml (keys sorted: b-1 before main) and the template's final newline.
    expect(await render("bind", values({ binding: BINDING, postgresql: structuredClone(postgresql) }))).toBe(`  
apiVersion: acid.zalan.do/v1
kind: postgresql
metadata:
  name: sapcp-abc-123
  namespace: tenant-a
spec:
  numberOfInstances: 2
  users:
    b-1:
    - superuser
    main:
    - superuser
    - createdb
status:
  PostgresClusterStatus: Running
`);
    const bound = structuredClone(postgresql);
    (bound.spec.users as Record<string, string[]>)["b-1"] = ["superuser"];
    expect(await render("unbind", values({ binding: BINDING, postgresql: bound }))).toBe(`  
apiVersion: acid.zalan.do/v1
kind: postgresql
metadata:
  name: sapcp-abc-123
  namespace: tenant-a
spec:
  numberOfInstances: 2
  users:
    main:
    - superuser
    - createdb
status:
  PostgresClusterStatus: Running
`);
  });

  it("names a failing template <binding-id>/bind as SF did, with Go's line and column", async () => {
    // Without the live postgresql, `get $postgresql "spec"` gets a nil map and returns "";
    // `get $spec "users"` then fails on its argument type: line 5, and the column is the 0-based
    // byte offset of the failing node `$spec` in `{{- $users := get $spec "users" }}` (18;
    // text/template/parse's ErrorContext counts from 0 after the newline).
    await expect(render("bind", values({ binding: BINDING }))).rejects.toThrow(
      /^plan v9\.6-xxsmall: template bind \(catalog\/sfplan\.yaml#spec\.templates\[bind\]\): gotemplate renderer - can't render template for b-1\/bind\. template: b-1\/bind:5:18: executing "b-1\/bind" at <\$spec>: wrong type for value; expected map\[string\]interface \{\}; got string$/,
    );
  });
});
