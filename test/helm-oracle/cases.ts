/**
 * The oracle's generated cases: value sets and flags over test/helm-oracle/charts/oracle (a parent
 * chart with a conditional subchart used twice under an alias, a nested subchart, a tagged one, a
 * library and one whose values are imported), and over the repository's own charts. Every case
 * runs through `helm template` and `render-chart` with the same arguments (helm-oracle.test.ts).
 */
import path from "node:path";
import { ROOT, type OracleCase } from "./oracle.js";

export const ORACLE_CHART = path.join(ROOT, "test/helm-oracle/charts/oracle");
const O = ORACLE_CHART;
const WEBAPP = path.join(ROOT, "go/helm/testdata/webapp");
const KVSTORE = path.join(ROOT, "test/broker/testdata/charts/kvstore");
const WEBAPP_VALUES = path.join(ROOT, "go/helm/testdata/extra-values.yaml");
const DEPLOY = path.join(ROOT, "deploy/chart");

/**
 * The files of a chart at `dir` of a case's directory: Chart.yaml (apiVersion v2, `meta` added),
 * values.yaml when given, and one template whose text is `body`, printed in a ConfigMap.
 */
function chart(dir: string, meta: string, values: string, body: string): Record<string, string> {
  const name = path.basename(dir);
  return {
    [`${dir}/Chart.yaml`]: `apiVersion: v2\nname: ${name}\nversion: 0.1.0\n${meta}`,
    ...(values === "" ? {} : { [`${dir}/values.yaml`]: values }),
    [`${dir}/templates/${name}.yaml`]: `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  body: |\n    ${body}\n`,
  };
}

/** A values file in the case's directory. */
const f = (name: string): string => `$DIR/${name}`;

export const GENERATED_CASES: OracleCase[] = [
  // Release, namespace, name template.
  { name: "defaults", args: [O] },
  { name: "release name and namespace", args: ["my-rel", O, "--namespace", "prod"] },
  { name: "-n=NS and a NAME", args: ["x1", O, "-n=team-a"] },
  { name: "--name-template", args: [O, "--name-template", "{{ printf \"%s-%s\" \"gen\" \"rel\" }}"] },
  { name: "NAME and --name-template together fails", args: ["a", O, "--name-template", "b"] },
  { name: "an invalid release name fails", args: ["Not_Valid", O] },
  { name: "a release name longer than 53 fails", args: ["a".repeat(54), O] },
  { name: "--is-upgrade", args: [O, "--is-upgrade"] },

  // Null deletion.
  { name: "--set null deletes a default table", args: [O, "--set", "config.b=null"] },
  { name: "--set null deletes a nested default", args: [O, "--set", "config.b.c=null,config.flag=null"] },
  { name: "--set null deletes a subchart's default", args: [O, "--set", "sub.replicas=null,sub.settings.shape=null"] },
  { name: "--set null on the nested subchart", args: [O, "--set", "sub.deep.level=null"] },
  {
    name: "-f nulls in parent and subchart",
    args: [O, "-f", f("nulls.yaml")],
    files: { "nulls.yaml": "config:\n  a: null\n  b:\n    d: null\nsub:\n  image: null\n  settings:\n    color: null\nimage:\n  tag: null\n" },
  },
  {
    name: "-f null then a later file sets it again",
    args: [O, "-f", f("a.yaml"), "-f", f("b.yaml")],
    files: { "a.yaml": "config:\n  b: null\n", "b.yaml": "config:\n  b:\n    e: 5\n" },
  },
  { name: "null for a key without default", args: [O, "--set", "nothere=null,config.nothere=null"] },
  { name: "null for a global", args: [O, "--set", "global.labels.tier=null"] },

  // Globals and subchart scopes.
  { name: "--set a global reaches the subcharts", args: [O, "--set", "global.region=us-2,global.extra=x"] },
  {
    name: "-f globals merged as tables",
    args: [O, "-f", f("g.yaml")],
    files: { "g.yaml": "global:\n  labels:\n    owner: me\n  nested:\n    a: {b: 1}\nsub:\n  global:\n    region: from-parent-for-sub\n" },
  },
  { name: "values for the subchart by its name", args: [O, "--set", "sub.settings.color=green,sub.newKey=1,exporter.port=1234"] },
  { name: "values for the aliased subchart", args: [O, "--set", "second.enabled=true,second.replicas=7,second.settings.size=xl"] },
  { name: "a subchart's values that are not a table fails", args: [O, "--set", "sub=oops"] },

  // Conditions and tags.
  { name: "condition off", args: [O, "--set", "sub.enabled=false"] },
  { name: "second condition path used when the first is unset", args: [O, "--set", "sub.enabled=null,global.subEnabled=false"] },
  { name: "condition that is not a bool is ignored", args: [O, "--set", "sub.enabled=maybe"] },
  { name: "nested condition off", args: [O, "--set", "sub.deep.enabled=false"] },
  { name: "tag off", args: [O, "--set", "tags.backend=false"] },
  { name: "one tag on wins over one off", args: [O, "--set", "tags.backend=false,tags.extras=true"] },
  { name: "tags not a table", args: [O, "--set", "tags=none"] },

  // --set forms.
  { name: "--set list items with fields", args: [O, "--set", "service.ports[0].name=web,service.ports[0].port=8080,service.ports[1].name=tls,service.ports[1].port=443"] },
  { name: "--set list item beyond the end", args: [O, "--set", "config.list[3]=z"] },
  { name: "--set nested lists", args: [O, "--set", "config.grid[1][0]=a,config.grid[0][2]=b"] },
  { name: "--set {a,b} lists", args: [O, "--set", "config.list={p,q,r},config.nums={1,2,true}"] },
  { name: "--set escaped dots and commas", args: [O, "--set", "annotations.example\\.com/team=a\\,b,config.dotted\\.key=1"] },
  { name: "--set repeated flags, the last wins", args: [O, "--set", "replicas=2", "--set", "replicas=3", "--set=config.a=x"] },
  { name: "--set comma-separated pairs", args: [O, "--set", "replicas=4,image.tag=v9,config.flag=false"] },
  { name: "--set typed values", args: [O, "--set", "config.t=TRUE,config.z=0,config.lead=0123,config.big=12345678901234567890,config.neg=-5,config.f=1.5,config.e="] },
  { name: "--set value with '=' in it", args: [O, "--set", "config.eq=a=b"] },
  { name: "--set key without a value fails", args: [O, "--set", "config.a"] },
  { name: "--set with a trailing comma", args: [O, "--set", "config.a=1,"] },
  { name: "--set unterminated list fails", args: [O, "--set", "config.list={a,b"] },
  { name: "--set bad index fails", args: [O, "--set", "config.list[x]=1"] },
  { name: "--set negative index fails", args: [O, "--set", "config.list[-1]=1"] },
  { name: "--set a list where the default is a table fails", args: [O, "--set", "config.b[0]=1"] },
  { name: "--set-string keeps strings", args: [O, "--set-string", "replicas=3,config.t=true,config.n=null,image.tag=0123"] },
  { name: "--set-json objects, lists and null", args: [O, "--set-json", "config.obj={\"x\":[1,2,{\"y\":null}],\"z\":1.5}", "--set-json", "service.ports=[{\"name\":\"j\",\"port\":1}],config.b=null"] },
  { name: "--set-json blanks around the comma belong to the next key", args: [O, "--set-json", "config.j=1 , x=2,config.k=\"s\""] },
  { name: "--set-json empty value is null", args: [O, "--set-json", "config.b="] },
  { name: "--set-json bad JSON fails", args: [O, "--set-json", "config.obj={x}"] },
  {
    name: "--set-file",
    args: [O, "--set-file", `config.script=${f("script.sh")},config.other=${f("other.txt")}`],
    files: { "script.sh": "#!/bin/sh\necho 'hi, there'\n", "other.txt": "plain" },
  },
  { name: "--set-file of a missing file fails", args: [O, "--set-file", `config.script=${f("none.sh")}`] },
  { name: "--set-literal keeps commas and braces", args: [O, "--set-literal", "config.raw={a,b},c=d\\e"] },
  {
    name: "-f then --set-json then --set then --set-string then --set-file, whatever the flag order",
    args: [O, "--set-file", `config.v=${f("v.txt")}`, "--set-string", "config.v=string", "--set", "config.v=set", "--set-json", "config.v=\"json\"", "-f", f("v.yaml")],
    files: { "v.txt": "file", "v.yaml": "config:\n  v: values-file\n" },
  },

  // -f files.
  {
    name: "-f files: later wins, tables merge",
    args: [O, "-f", f("one.yaml"), "--values", f("two.yaml")],
    files: { "one.yaml": "replicas: 5\nconfig:\n  b:\n    c: 10\n  list: [1]\n", "two.yaml": "config:\n  b:\n    d: 20\n  list: []\n" },
  },
  {
    name: "-f comma-separated",
    args: [O, "-f", `${f("one.yaml")},${f("two.yaml")}`],
    files: { "one.yaml": "replicas: 6\n", "two.yaml": "image:\n  tag: two\n" },
  },
  {
    name: "-f YAML features: anchors, merge keys, tags, odd keys and numbers",
    args: [O, "-f", f("y.yaml"), "-s", "templates/values-dump.yaml"],
    files: {
      "y.yaml": [
        "base: &base {a: 1, b: [x, y]}",
        "config:",
        "  merged:",
        "    <<: *base",
        "    b: over",
        "  ref: *base",
        "  tagged: !!str 123",
        "  bin: !!binary aGVsbG8=",
        "  when: 2024-01-02T03:04:05Z",
        "  1: numeric key",
        "  yes: bool key",
        "  neg: -0.0",
        "  exp: 6.02e23",
        "  octal: 0755",
        "  sexagesimal: 1:30",
        "  folded: >",
        "    one",
        "    two",
        "  literal: |+",
        "    kept",
        "",
        "",
      ].join("\n"),
    },
  },
  { name: "-f duplicate keys", args: [O, "-f", f("d.yaml"), "-s", "templates/values-dump.yaml"], files: { "d.yaml": "replicas: 1\nreplicas: 2\n" } },
  { name: "-f infinity fails", args: [O, "-f", f("inf.yaml")], files: { "inf.yaml": "config:\n  inf: .inf\n" } },
  { name: "-f JSON values", args: [O, "-f", f("v.json")], files: { "v.json": "{\"replicas\": 8, \"config\": {\"b\": {\"c\": \"json\"}}}" } },
  { name: "-f empty file", args: [O, "-f", f("empty.yaml")], files: { "empty.yaml": "" } },
  { name: "-f values that are not a map fails", args: [O, "-f", f("list.yaml")], files: { "list.yaml": "- a\n- b\n" } },
  { name: "-f missing file fails", args: [O, "-f", f("missing.yaml")] },
  { name: "-f bad YAML fails", args: [O, "-f", f("bad.yaml")], files: { "bad.yaml": "a: [1, 2\n" } },
  {
    name: "-f extraObjects rendered through tpl",
    args: [O, "-f", f("extra.yaml")],
    files: { "extra.yaml": "extraObjects:\n  - apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: '{{ .Release.Name }}-extra'\n  - apiVersion: v1\n    kind: LimitRange\n    metadata:\n      name: lr\n" },
  },
  { name: "schema violation in a subchart fails", args: [O, "--set", "sub.replicas=-1"] },
  { name: "schema: wrong type in a subchart fails", args: [O, "--set", "sub.replicas=many"] },
  { name: "--skip-schema-validation", args: [O, "--set", "sub.replicas=-1", "--skip-schema-validation"] },

  // Capabilities.
  { name: "--api-versions", args: [O, "--api-versions", "example.com/v1", "-a", "example.com/v1/Widget"] },
  { name: "--api-versions comma-separated", args: [O, "--api-versions=example.com/v1,other.io/v2"] },
  { name: "--kube-version", args: [O, "--kube-version", "1.28.3"] },
  { name: "--kube-version with v and suffix", args: [O, "--kube-version", "v1.31.0-gke.1"] },
  { name: "--kube-version major.minor", args: [O, "--kube-version", "1.29"] },
  { name: "--kube-version below the chart's kubeVersion fails", args: [O, "--kube-version", "1.20.0"] },
  { name: "--kube-version invalid fails", args: [O, "--kube-version", "banana"] },

  // CRDs, hooks, tests, NOTES.
  { name: "--include-crds", args: [O, "--include-crds"] },
  { name: "--include-crds with the subchart off", args: [O, "--include-crds", "--set", "sub.enabled=false"] },
  { name: "--no-hooks", args: [O, "--no-hooks"] },
  { name: "--skip-tests", args: [O, "--skip-tests"] },
  { name: "--no-hooks --skip-tests --include-crds", args: [O, "--no-hooks", "--skip-tests", "--include-crds"] },
  { name: "hooks off by value", args: [O, "--set", "hooks.enabled=false"] },
  { name: "hook weight not a number", args: [O, "--set", "hooks.weight=heavy"] },
  { name: "NOTES that fail: the render fails", args: [O, "--set", "notes.fail=true"] },

  // Failing templates: the errors are compared.
  ...["include-missing", "nil-pointer", "tpl-parse", "tpl-exec", "fail-in-include", "required-in-include", "invalid-yaml", "wrong-arg", "recursion"].map(
    (how): OracleCase => ({ name: `a template that fails: ${how} fails`, args: [O, "--set", `failWith=${how}`] }),
  ),
  { name: "a document without a kind is kept", args: [O, "--set", "failWith=kind-missing", "-s", "templates/failures.yaml"] },
  { name: "a template parse error in a subchart fails", args: [path.join(ROOT, "test/helm-oracle/charts/broken"), "--set", "x=1"] },

  // --show-only.
  { name: "--show-only one template", args: [O, "--show-only", "templates/workload.yaml"] },
  { name: "--show-only several, in flag order", args: [O, "-s", "templates/kinds.yaml", "-s", "templates/values-dump.yaml"] },
  { name: "--show-only a subchart's template", args: [O, "-s", "charts/sub/templates/configmap.yaml", "--set", "second.enabled=true"] },
  { name: "--show-only a glob", args: [O, "-s", "templates/*.yaml"] },
  { name: "--show-only a hook template", args: [O, "-s", "templates/hooks.yaml"] },
  { name: "--show-only a test with --skip-tests fails", args: [O, "-s", "templates/tests/test-connection.yaml", "--skip-tests"] },
  { name: "--show-only a missing template fails", args: [O, "-s", "templates/none.yaml"] },
  { name: "--show-only an empty template fails", args: [O, "-s", "templates/blank.yaml"] },

  // Charts written for one case (in $DIR/c).
  {
    name: "a dependency whose version does not match is rendered as an unlisted subchart",
    args: [f("c"), "--set", "sub.enabled=false"],
    files: {
      ...chart("c", "dependencies:\n  - name: sub\n    version: ~0.2.0\n    condition: sub.enabled\n", "", "parent"),
      ...chart("c/charts/sub", "", "v: sub\n", "{{ .Values.v }}"),
    },
  },
  {
    name: "import-values into nested parent paths",
    args: [f("c")],
    files: {
      ...chart("c", "dependencies:\n  - name: sub\n    version: 0.1.0\n    import-values:\n      - child: deep.table\n        parent: into.here\n      - child: scalar\n        parent: s\n      - missing\n", "into:\n  here:\n    own: parent\ns: parent\n", "{{ toJson .Values }}"),
      ...chart("c/charts/sub", "", "deep:\n  table:\n    a: 1\n    own: child\nscalar: 5\nexports:\n  other: {x: 1}\n", "{{ toJson .Values }}"),
    },
  },
  {
    name: "a chart of apiVersion v1 with requirements.yaml",
    args: [f("c"), "--set", "sub.on=false"],
    files: {
      "c/Chart.yaml": "apiVersion: v1\nname: c\nversion: 1.0.0\n",
      "c/requirements.yaml": "dependencies:\n  - name: sub\n    version: 0.1.0\n    condition: sub.on\n",
      "c/templates/t.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
      ...chart("c/charts/sub", "", "on: true\n", "{{ .Values.on }}"),
    },
  },
  {
    name: "tags from a subchart's values.yaml act at the top, the parent's win",
    args: [f("c"), "--set", "tags.two=true"],
    files: {
      ...chart("c", "dependencies:\n  - name: sub\n    version: 0.1.0\n", "", "{{ toJson .Values }}"),
      ...chart("c/charts/sub", "dependencies:\n  - name: one\n    version: 0.1.0\n    tags: [one]\n  - name: two\n    version: 0.1.0\n    tags: [two]\n", "tags:\n  one: false\n  two: false\n", "{{ toJson .Values }}"),
      ...chart("c/charts/sub/charts/one", "", "", "one"),
      ...chart("c/charts/sub/charts/two", "", "", "two"),
    },
  },
  {
    name: "defines: the parent's wins over a subchart's of the same name",
    args: [f("c")],
    files: {
      ...chart("c", "dependencies:\n  - name: sub\n    version: 0.1.0\n", "", '{{ define "both" }}parent{{ end }}{{ include "both" . }}'),
      ...chart("c/charts/sub", "", "", '{{ define "both" }}sub{{ end }}{{ include "both" . }}/{{ .Template.Name }}'),
    },
  },
  {
    name: "CRLF line ends in values and templates",
    args: [f("c"), "--include-crds"],
    files: {
      ...chart("c", "", "a: 1\r\nb:\r\n  c: two\r\n", "{{ toJson .Values }}\r\nline: 2\r\n"),
      "c/crds/crd.yaml": "apiVersion: apiextensions.k8s.io/v1\r\nkind: CustomResourceDefinition\r\nmetadata:\r\n  name: x.example.com\r\n",
    },
  },
  {
    name: "templates ordered by kind, then by file name, then in the file",
    args: [f("c")],
    files: {
      "c/Chart.yaml": "apiVersion: v2\nname: c\nversion: 1.0.0\n",
      "c/templates/b.yaml": "kind: Service\nmetadata: {name: b1}\n---\nkind: ConfigMap\nmetadata: {name: b2}\n---\nkind: Service\nmetadata: {name: b3}\n",
      "c/templates/a/z.yaml": "kind: Service\nmetadata: {name: az}\n",
      "c/templates/a.yaml": "kind: Service\nmetadata: {name: a}\n---\nkind: Zeta\n---\nkind: Alpha\n---\n# no kind\nmetadata: {name: none}\n",
      "c/templates/_partial.yaml": "kind: ConfigMap\nmetadata: {name: never}\n",
      "c/templates/notes.txt": "kind: ConfigMap\nmetadata: {name: from-txt}\n",
    },
  },
  {
    name: ".helmignore leaves templates out",
    args: [f("c")],
    files: {
      ...chart("c", "", "", "kept"),
      "c/.helmignore": "templates/skip*\n# comment\n\n*.bak\nsub/\n",
      "c/templates/skip-me.yaml": "kind: ConfigMap\nmetadata: {name: skipped}\n",
      "c/templates/sub/x.yaml": "kind: ConfigMap\nmetadata: {name: in-sub}\n",
      "c/templates/y.yaml.bak": "kind: ConfigMap\nmetadata: {name: bak}\n",
    },
  },
  {
    // Helm ignores every path a negated pattern does not match, Chart.yaml included.
    name: "a negated .helmignore pattern fails",
    args: [f("c")],
    files: { ...chart("c", "", "", "kept"), "c/.helmignore": "!templates/c.yaml\n" },
  },
  {
    name: "hooks: events with blanks and capitals, weights, kinds",
    args: [f("c")],
    files: {
      "c/Chart.yaml": "apiVersion: v2\nname: c\nversion: 1.0.0\n",
      "c/templates/hooks.yaml": [
        ["Job", "a", "post-install", "5"], ["ConfigMap", "b", " Pre-Install , post-upgrade", "-1"], ["Secret", "c", "pre-install", "x"],
        ["Job", "d", "pre-install", "-3"], ["ConfigMap", "e", "test-success", ""], ["Pod", "f", "pre-delete,post-rollback", "2"],
      ].map(([kind, name, hook, weight]) => `kind: ${kind}\nmetadata:\n  name: ${name}\n  annotations:\n    helm.sh/hook: "${hook}"\n    helm.sh/hook-weight: "${weight}"\n`).join("---\n"),
      "c/templates/plain.yaml": "kind: ConfigMap\nmetadata:\n  name: plain\n  annotations:\n    other: x\n",
    },
  },
  { name: "--show-only a hook template with --no-hooks fails", args: [O, "-s", "templates/hooks.yaml", "--no-hooks"] },
  { name: "a Chart.yaml without a version fails", args: [f("c")], files: { "c/Chart.yaml": "apiVersion: v2\nname: c\n", "c/templates/t.yaml": "x: 1\n" } },
  { name: "a chart whose values.yaml is not YAML fails", args: [f("c")], files: { ...chart("c", "", "a: [\n", "x") } },
  { name: "a global that is not a table", args: [f("c")], files: { ...chart("c", "dependencies:\n  - name: sub\n    version: 0.1.0\n", "global: flat\n", "{{ toJson .Values }}"), ...chart("c/charts/sub", "", "global:\n  g: 1\n", "{{ toJson .Values }}") } },
  { name: "--kube-version with +build metadata against a prerelease range", args: [f("c"), "--kube-version", "v1.29.4+k3s1"], files: { ...chart("c", 'kubeVersion: ">=1.29.0-0 <1.30.0-0"\n', "", "{{ .Capabilities.KubeVersion }}") } },

  // The chart `helm create` writes, where most users' charts start.
  { name: "helm create's chart", args: ["$SCAFFOLD"] },
  { name: "helm create's chart with ingress, autoscaling, no service account", args: ["app", "$SCAFFOLD", "--set", "ingress.enabled=true,autoscaling.enabled=true,serviceAccount.create=false", "-n", "web"] },
  {
    name: "helm create's chart with an HTTPRoute, TLS, annotations and resources",
    args: [
      "$SCAFFOLD", "--set", "httpRoute.enabled=true", "--set", "ingress.enabled=true", "--set", "ingress.tls[0].secretName=s,ingress.tls[0].hosts[0]=h",
      "--set", "podAnnotations.a=b,resources.limits.cpu=1", "--api-versions", "gateway.networking.k8s.io/v1", "--skip-tests",
    ],
  },

  // Documented differences (ADR 0023), asserted precisely.
  {
    name: "toToml and fromToml: toml v1.3.2's large floats and error line (documented)",
    args: [O, "--set", "probeToml=true", "-s", "templates/toml.yaml"],
    // Helm 3.21 links BurntSushi/toml v1.6.0, the module v1.3.2 (Service Fabrik v0.27.1's), which
    // writes floats from 1e6 up in 'f' form, not 'g', and counts an unexpected end of the first
    // line as line 0.
    documented: (helm) => helm.replace("big = 9.007199254740992e+15", "big = 9007199254740992.0").replace("m = 1e+06", "m = 1000000.0").replace(String.raw`toml: line 1 (last key \\\"a\\\"): unexpected EOF`, String.raw`toml: line 0 (last key \\\"a\\\"): unexpected EOF`),
  },

  // The repository's charts with values.
  { name: "webapp with values", args: ["w", WEBAPP, "-f", WEBAPP_VALUES, "--set", "database.host=db,replicaCount=3,metrics.enabled=true", "--include-crds", "--kube-version", "1.30.0"] },
  { name: "webapp subchart off", args: ["w", WEBAPP, "--set", "database.host=db,cache.enabled=false,metrics.enabled=false"] },
  { name: "kvstore with exporter", args: ["my-kv", KVSTORE, "--set", "auth.username=admin,exporter.enabled=true", "--namespace", "data", "--include-crds"] },
  { name: "kvstore without its required value fails", args: [KVSTORE] },
  {
    name: "deploy/chart as the README installs it",
    args: [
      "gitops-broker", DEPLOY, "-n", "gitops-broker",
      "--set", "image.repository=registry.example.com/gitops-broker", "--set", "image.tag=0.1.0",
      "--set", "config.git.remote=https://github.com/acme/gitops.git",
      "--set", "auth.existingSecret=broker-auth", "--set", "git.tokenSecret=git-token", "--set", "webhook.existingSecret=webhook",
    ],
  },
  { name: "deploy/chart upgrade with monitoring APIs", args: ["b", DEPLOY, "--is-upgrade", "-a", "monitoring.coreos.com/v1", "--set", "config.git.remote=/data/remote.git"] },
];
