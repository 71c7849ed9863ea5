import { generateIdentity, identityToRecipient } from "age-encryption";
import fs from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { bindingRecordPath, dirTreeReader, instanceManifestDir, instanceRecordPath, keyOf } from "../../src/repo/index.js";
import { encryptYaml } from "../../src/sops/index.js";
import { formatValidationProblem, validateRepo } from "../../src/validate/index.js";
import { runValidate } from "../../src/cli/validate.js";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { createTempDir, git, pushExternalCommit } from "../support/git-fixtures.js";
import { PROCESS_TEST_TIMEOUT_MS, runProcess } from "../support/processes.js";
import { provisionBody, samplePlans, type SamplePlans } from "../broker/helpers.js";

/**
 * The example repository is what a real broker wrote: the embedded default's seed, instances
 * provisioned, updated, bound and deprovisioned over OSB, and a human override. Every fixture is
 * a fresh clone of it with one thing changed, and must give exactly the expected problem lines.
 */

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../bin/gitops-broker.js");
const LEGACY_ID = "Legacy_DB-1";

let h: Harness;
let plans: SamplePlans;
let scratch: string;
let clones = 0;

const pgFile = (id: string) => `${instanceManifestDir("local", id)}/postgresql-pg-${keyOf(id)}.yaml`;

function overrideYaml(target: Record<string, string>, patch: Record<string, unknown>, extra: Record<string, unknown> = {}): string {
  return stringify({ apiVersion: "gitops-broker.io/v1alpha1", kind: "Override", target, patch, ...extra });
}

beforeAll(async () => {
  h = await startHarness();
  plans = await samplePlans(h.osb);
  scratch = await createTempDir("gitops-broker-validate-");
  const small = (params: Record<string, unknown> = {}) => provisionBody(plans.serviceId, plans.small.id, { parameters: params });
  const ok = (status: number, expected: number) => expect(status).toBe(expected);
  ok((await h.osb.provision("db-1", small({ storageGB: 2 }))).status, 201);
  ok((await h.osb.provision("db-2", provisionBody(plans.serviceId, plans.medium.id), { query: { accepts_incomplete: "true" } })).status, 202);
  ok((await h.osb.provision(LEGACY_ID, small())).status, 201);
  ok((await h.osb.provision("db-gone", small())).status, 201);
  ok((await h.osb.bind("db-1", "app-1", { service_id: plans.serviceId, plan_id: plans.small.id })).status, 201);
  ok((await h.osb.update("db-2", { service_id: plans.serviceId, parameters: { storageGB: 30 } }, { query: { accepts_incomplete: "true" } })).status, 202);
  ok((await h.osb.deprovision("db-gone", { service_id: plans.serviceId, plan_id: plans.small.id })).status, 200);
  await pushExternalCommit(
    h.remoteDir,
    { "overrides/db-1/replicas.yaml": overrideYaml({ apiVersion: "acid.zalan.do/v1", kind: "postgresql", name: "pg-db-1" }, { spec: { numberOfInstances: 2 } }) },
    "db-1: two servers",
  );
  // The next operation on db-1 renders the override into its manifests.
  ok((await h.osb.update("db-1", { service_id: plans.serviceId, parameters: { storageGB: 3 } })).status, 200);
});
afterAll(async () => {
  await h?.close();
  if (scratch) await fs.rm(scratch, { recursive: true, force: true });
});

/** A checkout of the example repository with `files` written (null: deleted). */
async function fixture(files: Record<string, string | null> = {}): Promise<string> {
  const dir = path.join(scratch, `repo-${++clones}`);
  await git(["clone", "--quiet", h.remoteDir, dir]);
  for (const [file, content] of Object.entries(files)) {
    const target = path.join(dir, file);
    if (content === null) await fs.rm(target, { recursive: true });
    else {
      await fs.mkdir(path.dirname(target), { recursive: true });
      await fs.writeFile(target, content);
    }
  }
  return dir;
}

async function lines(files: Record<string, string | null>): Promise<string[]> {
  return (await validateRepo(dirTreeReader(await fixture(files)))).map(formatValidationProblem);
}

/** `gitops-broker validate <args>` in process: its exit code and what it wrote to each stream. */
async function validateInProcess(args: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runValidate(args, { stdout: (t) => out.push(t), stderr: (t) => err.push(t) });
  return { code, out, err };
}

async function read(dir: string, file: string): Promise<string> {
  return fs.readFile(path.join(dir, file), "utf8");
}

/** A plan of the sample service with the given templates (a new id and name, so nothing else changes). */
function planYaml(name: string, templates: Record<string, unknown>[]): string {
  return stringify({
    apiVersion: "gitops-broker.io/v1alpha1",
    kind: "Plan",
    metadata: { name },
    spec: { id: `plan-${name}`, name, serviceId: plans.serviceId, description: `plan ${name}`, templates },
  });
}

describe("gitops-broker validate on the example repository", () => {
  it("finds nothing in what the broker wrote (overrides, bindings, a hashed key, a deprovisioned instance)", async () => {
    const dir = await fixture();
    expect(parse(await read(dir, pgFile("db-1")))).toMatchObject({ spec: { numberOfInstances: 2 } });
    expect(await read(dir, instanceRecordPath(LEGACY_ID))).toMatch(/deleted|instanceId: Legacy_DB-1/);
    expect((await validateRepo(dirTreeReader(dir))).map(formatValidationProblem)).toEqual([]);
  });
});

describe("one fixture per problem class", () => {
  it("a catalog file against its schema", async () => {
    const bad = planYaml("bad", []).replace("description: plan bad", "description: 42");
    expect(await lines({ "catalog/postgresql/plans/bad.yaml": bad })).toEqual([
      "catalog/postgresql/plans/bad.yaml: spec.description: must be string",
    ]);
  });

  it("a registry file against its schema", async () => {
    const bad = stringify({ apiVersion: "gitops-broker.io/v1alpha1", kind: "Cluster", metadata: { name: "east" }, spec: { schedulable: "maybe" } });
    expect(await lines({ "registry/clusters/east.yaml": bad })).toEqual([
      "registry/clusters/east.yaml: spec.schedulable: must be boolean",
    ]);
  });

  it("an instance record against its schema", async () => {
    const file = instanceRecordPath("db-2");
    const dir = await fixture();
    const record = parse(await read(dir, file)) as { spec: Record<string, unknown> };
    record.spec.credentials = { password: "hunter2" };
    expect(await lines({ [file]: stringify(record) })).toEqual([`${file}: spec.credentials: is not allowed`]);
  });

  it("a binding record against its schema", async () => {
    const file = bindingRecordPath("db-1", "app-1");
    const dir = await fixture();
    const record = parse(await read(dir, file)) as { status: { operations: { action: string }[] } };
    record.status.operations[0]!.action = "rebind";
    expect(await lines({ [file]: stringify(record) })).toEqual([
      `${file}: status.operations[0].action: must be one of "bind", "unbind", "import"`,
    ]);
  });

  it("an override against its schema", async () => {
    const bad = overrideYaml({ apiVersion: "acid.zalan.do/v1", kind: "postgresql", name: "pg-db-2" }, { spec: {} }).replace("kind: Override", "kind: Overide");
    expect(await lines({ "overrides/db-2/bad.yaml": bad })).toEqual(['overrides/db-2/bad.yaml: kind: must be "Override"']);
  });

  it("an override whose target the instance does not render", async () => {
    const missing = overrideYaml({ apiVersion: "v1", kind: "ConfigMap", name: "settings" }, { data: { a: "b" } });
    expect(await lines({ "overrides/db-2/settings.yaml": missing })).toEqual([
      "overrides/db-2/settings.yaml: target: v1 ConfigMap settings is not among the objects rendered for instance db-2",
    ]);
  });

  it("overrides of no instance, and of a binding that is not bound", async () => {
    const target = { apiVersion: "acid.zalan.do/v1", kind: "postgresql", name: "pg-db-1" };
    expect(
      await lines({
        "overrides/nobody/x.yaml": overrideYaml(target, { spec: {} }),
        "overrides/db-1/b.yaml": overrideYaml(target, { spec: {} }, { binding: "app-9" }),
      }),
    ).toEqual([
      "overrides/db-1/b.yaml: binding: instance db-1 has no live binding app-9",
      "overrides/nobody/: no instance has the key nobody: these overrides apply to nothing",
    ]);
  });

  it("quota files: against their schema, services and plans of the catalog, a scope over its limit (a warning)", async () => {
    const quota = (scope: Record<string, unknown>, limits: Record<string, unknown>[]) =>
      stringify({ apiVersion: "gitops-broker.io/v1alpha1", kind: "Quota", scope, limits });
    expect(
      await lines({
        "quota/good.yaml": quota({ organization: "org-guid" }, [{ service: "postgresql", plans: ["small", plans.medium.id], instances: 5 }]),
        "quota/full.yaml": quota({ space: "space-guid" }, [{ service: plans.serviceId, plans: ["small"], instances: 1 }]),
        "quota/names.yaml": quota({ subaccount: "sub-1" }, [
          { service: "mysql", instances: 1 },
          { service: "postgresql", plans: ["tiny"], instances: 1 },
        ]),
        "quota/two-scopes.yaml": quota({ organization: "o", space: "s" }, [{ service: "postgresql", instances: -2 }]),
        "quota/README.md": "quotas\n",
      }),
    ).toEqual([
      "quota/README.md: warning: is not read by the broker (only *.yaml and *.yml files are quotas)",
      "quota/two-scopes.yaml: scope: must NOT have more than 1 properties",
      "quota/two-scopes.yaml: limits[0].instances: must be >= -1",
      'quota/full.yaml: limits[0].instances: warning: space "space-guid" has 2 live instance(s), over this limit of 1: new ones are refused, live ones stay',
      'quota/names.yaml: limits[0].service: no service "mysql" in the catalog (a name or an id)',
      'quota/names.yaml: limits[1].plans: service postgresql has no plan "tiny" (a name or an id)',
    ]);
  });

  it("a template that does not compile", async () => {
    const plan = planYaml("broken", [{ action: "provision", type: "handlebars", content: "{{#if instance}}\nkind: x\n" }]);
    expect(await lines({ "catalog/postgresql/plans/broken.yaml": plan })).toEqual([
      `catalog/postgresql/plans/broken.yaml: spec.templates[0].content: plan broken: template provision: line 3: parse error: Expecting 'OPEN_INVERSE_CHAIN', 'INVERSE', 'OPEN_ENDBLOCK', got 'EOF': ""`,
    ]);
  });

  it("a template that renders invalid manifests for sample inputs (Secret data)", async () => {
    const content = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{instance.metadata.name}}-pw\nstringData:\n  password: {{default \"x\" instance.spec.parameters.password}}\n";
    const plan = planYaml("leaky", [{ action: "provision", type: "handlebars", content }]);
    expect(await lines({ "catalog/postgresql/plans/leaky.yaml": plan })).toEqual([
      "catalog/postgresql/plans/leaky.yaml: spec.templates[0]: with sample inputs: documents[0].stringData: renders Secret sample-instance-pw with stringData; secrets must come from the cluster (created by the operator or synced by a secret store), a credential is never written to Git",
    ]);
  });

  it("sample inputs reference a Secret for every sensitive parameter a schema declares, as after a request", async () => {
    const configMap = (ref: string) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: "{{${ref}.name}}-ref"\ndata:\n  key: "{{${ref}.key}}"\n`;
    const schemas = (properties: Record<string, unknown>) => ({
      create: { parameters: { $schema: "http://json-schema.org/draft-07/schema#", type: "object", properties } },
    });
    const wired = parse(planYaml("wired", [
      { action: "provision", type: "handlebars", content: configMap("sensitive.[tls.key]") },
      { action: "bind", type: "handlebars", content: configMap("sensitive.token") },
    ])) as { spec: Record<string, unknown> };
    wired.spec.schemas = {
      service_instance: schemas({ tls: { type: "object", properties: { key: { type: "string", format: "password" } } } }),
      service_binding: schemas({ token: { type: "string", writeOnly: true } }),
    };
    expect(await lines({ "catalog/postgresql/plans/wired.yaml": stringify(wired) })).toEqual([]);
    // A reference to a parameter no schema marks sensitive renders an empty name.
    const unwired = planYaml("unwired", [{ action: "provision", type: "handlebars", content: configMap("sensitive.tls") }]);
    const found = await lines({ "catalog/postgresql/plans/unwired.yaml": unwired });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^catalog\/postgresql\/plans\/unwired.yaml: spec.templates\[0\]: with sample inputs: .*metadata.name/);
  });

  it("a clusterSelector template that renders no label selector", async () => {
    const plan = planYaml("picky", [
      { action: "provision", type: "handlebars", content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n" },
      { action: "clusterSelector", type: "handlebars", content: "environment in (dev" },
    ]);
    const found = await lines({ "catalog/postgresql/plans/picky.yaml": plan });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(
      /^catalog\/postgresql\/plans\/picky\.yaml: spec\.templates\[1\]: with sample inputs: plan picky: template clusterSelector renders "environment in \(dev", not a label selector: .+/,
    );
  });

  it("a gotemplate plan renders with the sample inputs; a Go template that does not parse is an error with Go's line", async () => {
    const good = planYaml("sf", [{ action: "provision", type: "gotemplate", content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .instance.metadata.name }}-cm\n" }]);
    expect(await lines({ "catalog/postgresql/plans/sf.yaml": good })).toEqual([]);
    const bad = planYaml("sf", [{ action: "provision", type: "gotemplate", content: "a: 1\nb: {{ .x | nope }}\n" }]);
    // Go's parser: `function "nope" not defined` on line 2; SF's renderer names the template
    // `<instance-id>/<action>` (validate's sample instance is `sample-instance`).
    expect(await lines({ "catalog/postgresql/plans/sf.yaml": bad })).toEqual([
      `catalog/postgresql/plans/sf.yaml: spec.templates[0].content: plan sf: template provision: gotemplate renderer - can't create template for sample-instance/provision. template: sample-instance/provision:2: function "nope" not defined`,
    ]);
  });

  it("offboarding protection: a cluster or plan with live instances cannot go", async () => {
    expect(await lines({ "registry/clusters/local.yaml": null })).toEqual([
      `registry/clusters/local.yaml: cluster local is missing from the registry but holds 3 live instance(s): ${[LEGACY_ID, "db-1", "db-2"].sort().join(", ")}; move or deprovision them first`,
    ]);
    expect(await lines({ "catalog/postgresql/plans/medium.yaml": null })).toEqual([
      `catalog/: plan ${plans.medium.id} is missing from the catalog but 1 live instance(s) use it: db-2; update or deprovision them first`,
    ]);
  });

  it("plaintext Secret data anywhere under clusters/", async () => {
    const secret = stringify({ apiVersion: "v1", kind: "Secret", metadata: { name: "leak", namespace: "gitops-broker-instances" }, data: { password: "aHVudGVyMg==" } });
    expect(await lines({ "clusters/local/leak.yaml": secret })).toEqual([
      "clusters/local/leak.yaml: data: Secret leak holds plaintext data: credentials must never be in Git (let the operator or a secret store create them)",
      "clusters/local/leak.yaml: drift: not rendered by the broker for any live instance",
    ]);
  });

  it("SOPS-encrypted Secrets pass the Secret check, unless a value is plaintext; the ones a record names must exist", async () => {
    const recipient = await identityToRecipient(await generateIdentity());
    const now = new Date("2026-01-01T00:00:00Z");
    const sealed = (stringData: Record<string, string>) =>
      encryptYaml({ apiVersion: "v1", kind: "Secret", metadata: { name: "sealed", namespace: "gitops-broker-instances" }, stringData }, { recipients: [recipient], now });
    const half = parse(await sealed({ password: "hunter2" })) as { stringData: Record<string, string> };
    half.stringData.user = "admin";
    const db1 = parse(await read(await fixture(), instanceRecordPath("db-1"))) as { spec: Record<string, unknown> };
    db1.spec.sensitiveParameters = { adminPassword: "db-1-sensitive-op-1" };
    expect(
      await lines({
        "clusters/local/sealed.yaml": await sealed({ password: "hunter2" }),
        "clusters/local/half-sealed.yaml": stringify(half),
        [instanceRecordPath("db-1")]: stringify(db1),
      }),
    ).toEqual([
      "clusters/local/half-sealed.yaml: stringData.user: Secret sealed has SOPS metadata but a plaintext value: encrypt it with sops (credentials must never be in Git in plaintext)",
      "clusters/local/half-sealed.yaml: drift: not rendered by the broker for any live instance",
      `${instanceManifestDir("local", "db-1")}/sensitive/secret-db-1-sensitive-op-1.yaml: drift: missing, the record of instance db-1 names this encrypted Secret of its sensitive parameters`,
      "clusters/local/sealed.yaml: drift: not rendered by the broker for any live instance",
    ]);
  });

  it("manual edits under clusters/: changed, missing and extra files are drift", async () => {
    const dir = await fixture();
    const edited = (await read(dir, pgFile("db-1"))).replace("numberOfInstances: 2", "numberOfInstances: 5");
    const extra = `${instanceManifestDir("local", "db-1")}/configmap-tuning.yaml`;
    expect(
      await lines({
        [pgFile("db-1")]: edited,
        [pgFile("db-2")]: null,
        [extra]: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tuning\n",
        "clusters/local/notes.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\n",
      }),
    ).toEqual(
      [
        `${extra}: drift: not rendered by the broker for instance db-1`,
        `${pgFile("db-1")}: drift: differs from what the broker renders for instance db-1; change it through the platform or overrides/db-1/ (after a change of plan small, which has no autoUpdateInstances: gitops-broker update --plan ${plans.small.id})`,
        `${pgFile("db-2")}: drift: missing, the broker renders it for instance db-2`,
        "clusters/local/notes.yaml: drift: not rendered by the broker for any live instance",
      ].sort(),
    );
  });
});

describe("every problem in one run", () => {
  it("a broken plan file, a template that does not compile and a hand edit: all three, and no 'plan missing'", async () => {
    const dir = await fixture();
    const medium = (await read(dir, "catalog/postgresql/plans/medium.yaml")).replace(/^(\s+description:) .*$/m, "$1 42");
    const edited = (await read(dir, pgFile("db-1"))).replace("numberOfInstances: 2", "numberOfInstances: 5");
    const found = await lines({
      "catalog/postgresql/plans/medium.yaml": medium,
      "catalog/postgresql/plans/broken.yaml": planYaml("broken", [{ action: "provision", type: "handlebars", content: "{{#if}}" }]),
      [pgFile("db-1")]: edited,
    });
    expect(found.some((l) => l.startsWith("catalog/postgresql/plans/medium.yaml: spec.description: must be string"))).toBe(true);
    expect(found.some((l) => l.startsWith("catalog/postgresql/plans/broken.yaml: spec.templates[0]"))).toBe(true);
    expect(found.some((l) => l.startsWith(`${pgFile("db-1")}: drift: differs from what the broker renders for instance db-1`))).toBe(true);
    expect(found).toContain(
      `catalog/postgresql/plans/medium.yaml: warning: drift of 1 live instance(s) of plan ${plans.medium.id} not checked until this file loads: db-2`,
    );
    expect(found.filter((l) => /is missing from the catalog/.test(l))).toEqual([]);
  });
});

describe("plan-driven drift", () => {
  it("with autoUpdateInstances: a warning that the broker will re-render, with the diff; exit 0", async () => {
    const dir = await fixture();
    const small = (await read(dir, "catalog/postgresql/plans/small.yaml"))
      .replace("memory: 1Gi", "memory: 2Gi")
      .replace(/^(\s+)manager:/m, "$1autoUpdateInstances: true\n$1manager:");
    await fs.writeFile(path.join(dir, "catalog/postgresql/plans/small.yaml"), small);
    const problems = await validateRepo(dirTreeReader(dir));
    expect(problems.map(formatValidationProblem)).toEqual(
      [pgFile("db-1"), pgFile(LEGACY_ID)].sort().map(
        (file) =>
          `${file}: warning: will be re-rendered: plan small has autoUpdateInstances, so after the merge the broker re-renders instance ${file === pgFile("db-1") ? "db-1" : LEGACY_ID} to this (a hand edit here would be overwritten too)`,
      ),
    );
    expect(problems[0]!.detail).toMatch(/^--- a\/clusters\/.*\tin the checkout\n\+\+\+ b\/clusters\/.*\tas the broker renders it\n@@ /);
    expect(problems[0]!.detail).toMatch(/^-\s+memory: 1Gi$/m);
    expect(problems[0]!.detail).toMatch(/^\+\s+memory: 2Gi$/m);

    const { code, out, err } = await validateInProcess([dir]);
    expect(code).toBe(0);
    expect(out.join("")).toMatch(/will be re-rendered[^\n]*\n {4}--- a\/clusters\/[\s\S]*\n {4}-\s+memory: 1Gi\n {4}\+\s+memory: 2Gi\n/);
    expect(err.join("")).toMatch(/0 error\(s\), 2 warning\(s\)/);
  });
});

describe("not a GitOps repository", () => {
  it("exits 2 for an empty directory, the broker's own source tree and a bare repository", async () => {
    const empty = await createTempDir("gitops-broker-empty-");
    try {
      for (const [dir, message] of [
        [empty, /is not a GitOps repository of gitops-broker: no catalog\/ and no registry\/clusters\//],
        [path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../.."), /is not a GitOps repository of gitops-broker/],
        [h.remoteDir, /is a bare Git repository: validate a checkout of it/],
        [path.join(empty, "nope"), /is not a directory/],
      ] as const) {
        const { code, out, err } = await validateInProcess([dir]);
        expect(code).toBe(2);
        expect(out).toEqual([]);
        expect(err.join("")).toMatch(message);
      }
    } finally {
      await fs.rm(empty, { recursive: true, force: true });
    }
  });
});

/** Runs the CLI as a real process; resolves with its exit code and output. */
function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runProcess(process.execPath, [BIN, ...args]);
}

describe("gitops-broker validate", () => {
  it("exits 0 on a clean repository, 1 with the problems as a JSON array with --json", async () => {
    const [cleanDir, dir] = [await fixture(), await fixture({ "clusters/local/notes.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\n" })];
    const clean = await validateInProcess([cleanDir]);
    expect({ code: clean.code, stdout: clean.out.join("") }).toMatchObject({ code: 0, stdout: "" });
    expect(clean.err.join("")).toMatch(/0 error\(s\), 0 warning\(s\)/);
    const json = await validateInProcess(["--json", dir]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.out.join(""))).toEqual([
      { file: "clusters/local/notes.yaml", path: "", message: "drift: not rendered by the broker for any live instance", severity: "error" },
    ]);
  });
});

describe("gitops-broker validate as a process", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("exits 1 with one line per problem on stdout, 2 on a usage error", async () => {
    const dir = await fixture({ "clusters/local/notes.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\n" });
    // Independent processes: run together, each takes a few seconds to start.
    const [text, unknownFlag] = await Promise.all([cli(["validate", dir]), cli(["validate", "--strict", dir])]);
    expect(text).toMatchObject({ code: 1, stdout: "clusters/local/notes.yaml: drift: not rendered by the broker for any live instance\n" });
    expect(text.stderr).toMatch(/1 error\(s\), 0 warning\(s\)/);
    expect(unknownFlag).toMatchObject({ code: 2, stdout: "" });
    expect(unknownFlag.stderr).toMatch(/unknown option '--strict'/);
  }, 240_000); // two processes starting on a busy machine
});
