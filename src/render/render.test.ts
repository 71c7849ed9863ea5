import { describe, expect, it } from "vitest";
import { InvalidArgumentError, RenderError } from "../errors/index.js";
import type { PlanTemplate } from "../catalog/index.js";
import { compileCheck, hasTemplate, render, renderNow, renderTextNow, type RenderRequest } from "./index.js";

const LABELS = { "app.kubernetes.io/managed-by": "gitops-broker", "gitops-broker.io/instance-id": "pg-1" };

function template(content: string, action = "provision", type = "handlebars", source = `catalog/plans/pg.yaml#spec.templates[0]`): PlanTemplate {
  return { action, type, content, source };
}

function request(templates: PlanTemplate[] | string, overrides: Partial<RenderRequest> = {}): RenderRequest {
  return {
    action: "provision",
    templates: typeof templates === "string" ? [template(templates)] : templates,
    values: {
      service: {},
      plan: { spec: { context: { teamId: "acid" } } },
      instance: { metadata: { name: "pg-1", namespace: "tenant-a" }, spec: { parameters: { answer: "yes", y: "n" } } },
      bindings: [],
    },
    defaultNamespace: "tenant-a",
    labels: LABELS,
    planName: "small",
    ...overrides,
  };
}

function renderError(req: RenderRequest): RenderError {
  try {
    renderNow(req);
  } catch (e) {
    if (e instanceof RenderError) return e;
    throw e;
  }
  throw new Error("render did not fail");
}

const CONFIG_MAP = `kind: ConfigMap
metadata:
  labels:
    z: last
  name: cfg
data:
  b: "2"
  "10": ten
  "2": two
  a: "1"
apiVersion: v1
`;

describe("render", () => {
  it("writes deterministic YAML: apiVersion, kind, metadata (name, namespace) first, every other key sorted", () => {
    const [m] = renderNow(request(CONFIG_MAP));
    expect(m?.yaml).toBe(
      [
        "apiVersion: v1",
        "kind: ConfigMap",
        "metadata:",
        "  name: cfg",
        "  namespace: tenant-a",
        "  labels:",
        "    app.kubernetes.io/managed-by: gitops-broker",
        "    gitops-broker.io/instance-id: pg-1",
        "    z: last",
        "data:",
        '  "10": ten',
        '  "2": two',
        '  a: "1"',
        '  b: "2"',
        "",
      ].join("\n"),
    );
    expect(m).toMatchObject({ apiVersion: "v1", kind: "ConfigMap", name: "cfg", namespace: "tenant-a", fileName: "configmap-cfg.yaml" });
    expect(m?.object).toEqual({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "cfg", namespace: "tenant-a", labels: { ...LABELS, z: "last" } },
      data: { a: "1", b: "2", "2": "two", "10": "ten" },
    });
  });

  it("renders byte-identical output for the same input, whatever the key order in the template", () => {
    const shuffled = `apiVersion: v1\ndata:\n  a: "1"\n  "2": two\n  b: "2"\n  "10": ten\nmetadata:\n  name: cfg\n  labels:\n    z: last\nkind: ConfigMap\n`;
    const first = renderNow(request(CONFIG_MAP)).map((m) => m.yaml);
    expect(renderNow(request(CONFIG_MAP)).map((m) => m.yaml)).toEqual(first);
    expect(renderNow(request(shuffled)).map((m) => m.yaml)).toEqual(first);
  });

  it("keeps strings strings for a YAML 1.1 reader, never writes anchors, never folds long lines", () => {
    const content = `apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  answer: {{quote instance.spec.parameters.answer}}
  "{{instance.spec.parameters.y}}": "on"
  long: "${"x".repeat(300)} ${"y".repeat(300)}"
shared: &s {a: "1"}
again: *s
`;
    const [m] = renderNow(request(content));
    expect(m?.yaml).toContain('  answer: "yes"\n');
    expect(m?.yaml).toContain('  "n": "on"\n');
    expect(m?.yaml).toContain(`  long: ${"x".repeat(300)} ${"y".repeat(300)}\n`);
    expect(m?.yaml).toContain('again:\n  a: "1"\ndata:');
    expect(m?.yaml).toContain('shared:\n  a: "1"\n');
    expect(m?.yaml).not.toMatch(/[&*]s\b/);
  });

  it("refuses unquoted values Kubernetes would read as booleans or timestamps, with the line", () => {
    const e = renderError(request(`apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  enabled: {{instance.spec.parameters.answer}}\n`));
    expect(e.message).toContain(
      'catalog/plans/pg.yaml#spec.templates[0]: line 6: Value may be parsed as either !!str or !!bool (Kubernetes reads YAML 1.1; quote the string): "  enabled: yes"',
    );
  });

  it("sets the default namespace on namespaced objects, keeps an explicit one, none on cluster-scoped kinds", () => {
    const manifests = renderNow(
      request(`apiVersion: v1
kind: Service
metadata: {name: svc}
spec: {ports: [{port: 5432}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: other}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
rules: []
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: example.com/fast
`),
    );
    expect(manifests.map((m) => [m.kind, m.namespace])).toEqual([
      ["Service", "tenant-a"],
      ["ConfigMap", "other"],
      ["ClusterRole", undefined],
      ["StorageClass", undefined],
    ]);
    expect(manifests[2]?.object.metadata).toEqual({ name: "reader", labels: LABELS });
    expect(manifests[2]?.yaml).not.toContain("namespace:");
  });

  it("refuses a namespace on a cluster-scoped kind", () => {
    const e = renderError(request(`apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n  namespace: tenant-a\n`));
    expect(e.message).toBe(
      "plan small: template provision renders invalid manifests:\n- catalog/plans/pg.yaml#spec.templates[0]: documents[0].metadata.namespace: Namespace is cluster-scoped and must not have a namespace",
    );
  });

  it("merges the broker labels into every object; broker labels win", () => {
    const [m] = renderNow(
      request(`apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  labels:
    app.kubernetes.io/managed-by: helm
    app: db
`),
    );
    expect(m?.object.metadata).toEqual({ name: "cfg", namespace: "tenant-a", labels: { ...LABELS, app: "db" } });
  });

  it("refuses a Secret with data or stringData, and allows one without", () => {
    const secret = (body: string) => `apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n${body}`;
    const e = renderError(request([template(secret("data:\n  password: cGFzcw==\nstringData:\n  user: admin\n"), "bind")], { action: "bind" }));
    expect(e.message).toBe(
      [
        "plan small: template bind renders invalid manifests:",
        "- catalog/plans/pg.yaml#spec.templates[0]: documents[0].data: renders Secret creds with data; secrets must come from the cluster (created by the operator or synced by a secret store), a credential is never written to Git",
        "- catalog/plans/pg.yaml#spec.templates[0]: documents[0].stringData: renders Secret creds with stringData; secrets must come from the cluster (created by the operator or synced by a secret store), a credential is never written to Git",
      ].join("\n"),
    );
    expect(e.data.problems).toHaveLength(2);
    expect(renderNow(request(secret("type: Opaque\ndata: {}\n")))[0]?.kind).toBe("Secret");
  });

  it("refuses the same object twice, across the templates of an action too", () => {
    const cm = (ns: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: ${ns}}\n`;
    const e = renderError(request(`${cm("tenant-a")}---\n${cm("tenant-a")}`));
    expect(e.message).toContain("documents[1]: v1 ConfigMap tenant-a/cfg is rendered twice (also documents[0])");
    const implicit = renderError(
      request([template(cm("tenant-a")), template("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\n", "provision", "handlebars", "catalog/templates/extra.hbs")]),
    );
    expect(implicit.message).toContain(
      "- catalog/templates/extra.hbs: documents[0]: v1 ConfigMap tenant-a/cfg is rendered twice (also documents[0] of catalog/plans/pg.yaml#spec.templates[0])",
    );
  });

  it("disambiguates file names of objects sharing kind and name, without a slash", () => {
    const manifests = renderNow(
      request(`apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: other}
---
apiVersion: example.com/v1
kind: configmap
metadata: {name: cfg}
---
apiVersion: v1
kind: Service
metadata: {name: cfg}
`),
    );
    expect(manifests.map((m) => m.fileName)).toEqual([
      "configmap-cfg_tenant-a_core.yaml",
      "configmap-cfg_other_core.yaml",
      "configmap-cfg_tenant-a_example.com.yaml",
      "service-cfg.yaml",
    ]);
  });

  it("refuses objects whose kinds differ only in case, as their files would clash", () => {
    const e = renderError(request(`apiVersion: example.com/v1\nkind: Foo\nmetadata: {name: x}\n---\napiVersion: example.com/v1\nkind: foo\nmetadata: {name: x}\n`));
    expect(e.message).toContain(
      "documents[1]: example.com/v1 foo tenant-a/x and example.com/v1 Foo tenant-a/x would share the file foo-x_tenant-a_example.com.yaml",
    );
  });

  it("reports every invalid object and field in one error", () => {
    const e = renderError(
      request(`apiVersion: v1
kind: ConfigMap
metadata:
  name: Not_A_Name
  namespace: a.b
  labels:
    version: 9.6
    bad key: x
  annotations:
    replicas: 2
---
kind: Deployment
metadata:
  name: ${"a".repeat(254)}
---
apiVersion: v1
kind: Foo/Bar
metadata: {name: x}
---
apiVersion: v1
kind: ConfigMap
---
- just
- a list
`),
    );
    expect(e.message.split("\n")).toEqual([
      "plan small: template provision renders invalid manifests:",
      '- catalog/plans/pg.yaml#spec.templates[0]: documents[0].metadata.name: "Not_A_Name" is not a DNS-1123 subdomain (lowercase alphanumerics, \'-\' and \'.\', at most 253 characters; required)',
      '- catalog/plans/pg.yaml#spec.templates[0]: documents[0].metadata.namespace: "a.b" is not a DNS-1123 label (lowercase alphanumerics and \'-\', at most 63 characters)',
      '- catalog/plans/pg.yaml#spec.templates[0]: documents[0].metadata.labels["version"]: 9.6 must be a string (quote it)',
      '- catalog/plans/pg.yaml#spec.templates[0]: documents[0].metadata.labels["bad key"]: key "bad key" is not a qualified name (at most 63 alphanumerics, \'-\', \'_\' or \'.\', starting and ending alphanumeric, with an optional DNS prefix and \'/\')',
      '- catalog/plans/pg.yaml#spec.templates[0]: documents[0].metadata.annotations["replicas"]: 2 must be a string (quote it)',
      "- catalog/plans/pg.yaml#spec.templates[0]: documents[1].apiVersion: missing is not an apiVersion ([group/]version)",
      `- catalog/plans/pg.yaml#spec.templates[0]: documents[1].metadata.name: "${"a".repeat(254)}" is not a DNS-1123 subdomain (lowercase alphanumerics, '-' and '.', at most 253 characters; required)`,
      '- catalog/plans/pg.yaml#spec.templates[0]: documents[2].kind: "Foo/Bar" is not a kind (letters and digits, starting with a letter)',
      "- catalog/plans/pg.yaml#spec.templates[0]: documents[3].metadata: is required and must be a mapping",
      "- catalog/plans/pg.yaml#spec.templates[0]: documents[4]: is a list, not a Kubernetes object (a mapping)",
    ]);
    expect(e.code).toBe("RenderError");
  });

  it("refuses alias bombs instead of expanding them", () => {
    const bomb = ["a: &a [x, x, x, x, x, x, x, x, x]", ..."bcde".split("").map((k, i) => `${k}: &${k} [${Array(9).fill(`*${"abcd"[i]}`).join(", ")}]`)];
    const e = renderError(request(`apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n${bomb.join("\n")}\n`));
    expect(e.message).toContain("documents[0]: Excessive alias count indicates a resource exhaustion attack");
  });

  it("reports a YAML syntax error with its line in the rendered output and the text of that line", () => {
    const e = renderError(request(`apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{instance.metadata.name}}: oops\n`));
    expect(e.message).toBe(
      'plan small: template provision renders invalid manifests:\n- catalog/plans/pg.yaml#spec.templates[0]: line 4: Nested mappings are not allowed in compact mappings: "  name: pg-1: oops"',
    );
  });

  it("reports a template syntax error with the plan, action, source and line", () => {
    const e = renderError(request(`apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{default "x" instance.metadata.name}\n`));
    expect(e.message).toMatch(/^plan small: template provision \(catalog\/plans\/pg\.yaml#spec\.templates\[0\]\): line 4: parse error: Expecting /);
    expect(e.message).toMatch(/got 'INVALID': "name: \{\{default \\"x\\" instance\.metadata\.name\}"$/);
    expect(e.data).toEqual({ plan: "small", action: "provision", source: "catalog/plans/pg.yaml#spec.templates[0]" });
    expect(e.cause).toBeInstanceOf(Error);
  });

  it("reports a mismatched block with its line", () => {
    const e = renderError(request(`a: 1\n{{#each bindings}}\n{{/with}}\n`));
    expect(e.message).toBe(`plan small: template provision (catalog/plans/pg.yaml#spec.templates[0]): line 2: each doesn't match with: "{{#each bindings}}"`);
  });

  it("renders each template by its type's engine, and refuses unknown engines", async () => {
    const go = template('kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: {{ .instance.metadata.name }}-go\ndata:\n  team: {{ .plan.spec.context.teamId | quote }}\n', "provision", "gotemplate", "go.tpl");
    const hb = template("kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: {{instance.metadata.name}}-hb\n", "provision", "handlebars", "hb.hbs");
    const manifests = await render(request([go, hb]));
    expect(manifests.map((m) => [m.name, m.object.data])).toEqual([
      ["pg-1-go", { team: "acid" }],
      ["pg-1-hb", undefined],
    ]);
    // The engine's failure is wrapped once, with the plan, action and source; Go's own text
    // names the template `<instance-id>/<action>` (the instance has no spec.instanceId here, so
    // its metadata.name) with line and column.
    await expect(render(request([template("a: {{ index .instance.spec.parameters.answer 5 }}", "provision", "gotemplate", "go.tpl")]))).rejects.toThrow(
      'plan small: template provision (go.tpl): gotemplate renderer - can\'t render template for pg-1/provision. template: pg-1/provision:1:6: executing "pg-1/provision" at <index .instance.spec.parameters.answer 5>: error calling index: index out of range: 5',
    );
    await expect(render(request([template("x", "provision", "jsonnet")]))).rejects.toThrow(
      'plan small: template provision (catalog/plans/pg.yaml#spec.templates[0]): engine "jsonnet" is not supported (supported: handlebars, gotemplate, helm)',
    );
  });

  it("drops empty documents and keeps the others in order", () => {
    const manifests = renderNow(
      request(`---
# only a comment
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
---
null
---
{{#if instance.spec.parameters.nope}}
apiVersion: v1
kind: ConfigMap
metadata: {name: skipped}
{{/if}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b}
...
`),
    );
    expect(manifests.map((m) => m.name)).toEqual(["a", "b"]);
  });

  it("renders every template of the action, in order, and nothing for an action without a template", () => {
    const cm = (name: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}}\n`;
    const templates = [template(cm("one")), template(cm("bound"), "bind"), template(cm("two"), "provision", "handlebars", "catalog/templates/two.hbs")];
    expect(renderNow(request(templates)).map((m) => m.name)).toEqual(["one", "two"]);
    expect(renderNow(request(templates, { action: "deprovision" }))).toEqual([]);
    expect(hasTemplate(templates, "bind")).toBe(true);
    expect(hasTemplate(templates, "unbind")).toBe(false);
  });

  it("refuses an invalid default namespace or broker label (a broker bug, not a template error)", () => {
    expect(() => renderNow(request(CONFIG_MAP, { defaultNamespace: "Tenant" }))).toThrow(InvalidArgumentError);
    expect(() => renderNow(request(CONFIG_MAP, { labels: { "gitops-broker.io/instance-id": "x".repeat(64) } }))).toThrow(
      /broker label "gitops-broker.io\/instance-id": value "x+" is not a label value/,
    );
  });
});

describe("renderText", () => {
  it("returns the output of the action's templates, concatenated; empty without a template", () => {
    const templates = [template("a: {{instance.metadata.name}}", "status"), template("b: 2\n", "status"), template("c: 3", "sources")];
    const req = { action: "status", templates, values: request(CONFIG_MAP).values, planName: "small" };
    expect(renderTextNow(req)).toBe("a: pg-1\nb: 2\n");
    expect(renderTextNow({ ...req, action: "clusterSelector" })).toBe("");
  });
});

describe("compileCheck", () => {
  it("finds templates that cannot render whatever the values", async () => {
    const templates = [
      template("fine: {{default 1 instance.x}}"),
      template("a\nb: {{x y=}}\n", "bind", "handlebars", "catalog/plans/pg.yaml#spec.templates[1]"),
      template("{{toYml x}}", "update", "handlebars", "catalog/templates/update.hbs"),
      template("a\n{{ toYml .x }}", "status", "gotemplate", "catalog/plans/pg.yaml#spec.templates[3]"),
      template("{{ x }}", "sources", "jinja", "catalog/plans/pg.yaml#spec.templates[4]"),
      template("{{ .x | toYaml }}", "provision", "GoTemplate", "catalog/plans/pg.yaml#spec.templates[5]"),
    ];
    const problems = await compileCheck(templates, "small");
    expect(problems.map((p) => [p.file, p.path])).toEqual([
      ["catalog/plans/pg.yaml", "spec.templates[1].content"],
      ["catalog/templates/update.hbs", ""],
      ["catalog/plans/pg.yaml", "spec.templates[3].content"],
      ["catalog/plans/pg.yaml", "spec.templates[4].content"],
    ]);
    expect(problems[0]?.message).toBe(
      `plan small: template bind: line 2: parse error: Expecting 'OPEN_SEXPR', 'ID', 'STRING', 'NUMBER', 'BOOLEAN', 'UNDEFINED', 'NULL', 'DATA', got 'CLOSE': "b: {{x y=}}"`,
    );
    expect(problems[1]?.message).toBe('plan small: template update: line 1: You specified knownHelpersOnly, but used the unknown helper toYml: "{{toYml x}}"');
    // Go's parse error (text/template/parse): "template: <name>:<line>: function %q not defined",
    // wrapped as Service Fabrik's renderer wrapped it; the name is SF's `<instance-id>/<action>`.
    expect(problems[2]?.message).toBe(
      'plan small: template status: gotemplate renderer - can\'t create template for sample-instance/status. template: sample-instance/status:2: function "toYml" not defined',
    );
    expect(problems[3]?.message).toBe('plan small: template sources: engine "jinja" is not supported (supported: handlebars, gotemplate, helm)');
  });
});
