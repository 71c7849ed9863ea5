import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import type { Catalog, ClusterEntry, Plan, Service } from "../catalog/index.js";
import {
  bindingManifestDir,
  bindingRecordPath,
  instanceManifestDir,
  instanceRecordPath,
  recordYaml,
  sensitiveSecretPath,
  type BindingRecord,
  type InstanceRecord,
} from "../repo/index.js";
import { overlayDraft } from "../validate/index.js";
import { tempDirTree, type TempDirTree } from "../../test/support/dir-tree.js";
import { renderInstanceInto } from "./render-instance.js";

const cm = (name: string, data: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n${data}`;
const templates = [
  { action: "provision", content: cm("{{instance.metadata.name}}-cfg", '  from: provision\n  users: "{{#each bindings}}{{metadata.name}} {{/each}}"\n') },
  {
    action: "update",
    content: cm(
      "{{instance.metadata.name}}-cfg",
      '  from: update\n  users: "{{#each bindings}}{{metadata.name}} {{/each}}"\n  refs: "{{#each sensitive}}{{@key}}={{name}}/{{key}} {{/each}}"\n',
    ),
  },
  { action: "bind", content: cm("{{binding.metadata.name}}-creds-ref", '  secret: elsewhere\n  refs: "{{#each sensitive}}{{@key}}={{name}}/{{key}} {{/each}}"\n') },
].map((t) => ({ ...t, type: "handlebars", source: `catalog/plan.yaml#${t.action}` }));

const plan: Plan = {
  id: "plan-1", name: "one", description: "", serviceId: "svc-1", async: false, asyncBinding: false,
  context: {}, templates, file: "catalog/plan.yaml", raw: { spec: { id: "plan-1" } },
};
const service: Service = {
  id: "svc-1", name: "svc", description: "", bindable: true, instancesRetrievable: false, bindingsRetrievable: false,
  planUpdateable: false, plans: [plan], file: "catalog/service.yaml", raw: {},
};
const catalog: Catalog = { services: [service], serviceById: (id) => (id === service.id ? service : undefined), planById: (id) => (id === plan.id ? plan : undefined) };
const cluster = { id: "c1", namespace: "ns", schedulable: true, labels: {}, file: "registry/clusters/c1.yaml", raw: {} } as ClusterEntry;
const view = { catalog, clusters: [cluster] };

function instance(): InstanceRecord {
  return {
    apiVersion: "gitops-broker.io/v1alpha1",
    kind: "ServiceInstance",
    metadata: { name: "db-1", namespace: "ns" },
    spec: { instanceId: "db-1", serviceId: "svc-1", planId: "plan-1", clusterId: "c1" },
    status: { operations: [{ id: "op-1", action: "provision", at: "2026-01-01T00:00:00.000Z" }] },
  };
}

function binding(id: string, at: string, deleted = false): BindingRecord {
  return {
    apiVersion: "gitops-broker.io/v1alpha1",
    kind: "ServiceBinding",
    metadata: { name: id, namespace: "ns" },
    spec: { bindingId: id, instanceId: "db-1", serviceId: "svc-1", planId: "plan-1" },
    status: { ...(deleted ? { deleted } : {}), operations: [{ id: `op-${id}`, action: "bind", at }] },
  };
}

const override = (name: string, patch: Record<string, unknown>, bindingId?: string) =>
  stringify({ apiVersion: "gitops-broker.io/v1alpha1", kind: "Override", target: { apiVersion: "v1", kind: "ConfigMap", name }, ...(bindingId ? { binding: bindingId } : {}), patch });

let repo: TempDirTree;
beforeEach(async () => {
  repo = await tempDirTree();
});
afterEach(async () => {
  await repo.remove();
});

const dir = instanceManifestDir("c1", "db-1");

describe("renderInstanceInto", () => {
  it("renders a freshly provisioned instance with its provision template and replaces its whole directory", async () => {
    await repo.write({ [instanceRecordPath("db-1")]: recordYaml(instance()), [`${dir}/bindings/stale/configmap-x.yaml`]: "stale" });
    const draft = overlayDraft(repo.tree);
    expect(await renderInstanceInto(draft, view, "db-1")).toEqual({ overrides: [], problems: [] });
    expect((await draft.list(dir))?.map((e) => e.name)).toEqual(["configmap-db-1-cfg.yaml"]);
    expect(parse((await draft.readText(`${dir}/configmap-db-1-cfg.yaml`))!)).toMatchObject({ data: { from: "provision", users: "" } });
  });

  it("renders an instance with a namespace of its own (imported) into it, with its provision template, and writes no cluster Namespace", async () => {
    const own = instance();
    own.metadata.namespace = "sf-db-1";
    own.spec.namespace = "sf-db-1";
    own.status.operations = [{ id: "import-1", action: "import", at: "2026-01-01T00:00:00.000Z" }];
    const bound = binding("b-1", "2026-01-01T00:00:00.000Z");
    bound.metadata.namespace = "sf-db-1";
    bound.status.operations = [{ id: "import-b-1", action: "import", at: "2026-01-01T00:00:00.000Z" }];
    await repo.write({ [instanceRecordPath("db-1")]: recordYaml(own), [bindingRecordPath("db-1", "b-1")]: recordYaml(bound) });
    const draft = overlayDraft(repo.tree);
    expect(await renderInstanceInto(draft, view, "db-1")).toEqual({ overrides: [], problems: [] });
    expect(parse((await draft.readText(`${dir}/configmap-db-1-cfg.yaml`))!)).toMatchObject({ metadata: { namespace: "sf-db-1" }, data: { from: "provision", users: "b-1 " } });
    expect(parse((await draft.readText(`${bindingManifestDir("c1", "db-1", "b-1")}/configmap-b-1-creds-ref.yaml`))!)).toMatchObject({ metadata: { namespace: "sf-db-1" } });
    expect(await draft.readText("clusters/c1/namespace.yaml")).toBeNull();
    // Without one, the cluster's instance namespace, and its Namespace file.
    await repo.write({ [instanceRecordPath("db-1")]: recordYaml(instance()) });
    const plain = overlayDraft(repo.tree);
    await renderInstanceInto(plain, view, "db-1");
    expect(parse((await plain.readText(`${dir}/configmap-db-1-cfg.yaml`))!)).toMatchObject({ metadata: { namespace: "ns" } });
    expect(parse((await plain.readText("clusters/c1/namespace.yaml"))!)).toMatchObject({ kind: "Namespace", metadata: { name: "ns" } });
  });

  it("renders update after a bind, the live bindings' objects, and the overrides of the instance and of each binding", async () => {
    await repo.write({
      [instanceRecordPath("db-1")]: recordYaml(instance()),
      [bindingRecordPath("db-1", "b-1")]: recordYaml(binding("b-1", "2026-01-02T00:00:00.000Z")),
      [bindingRecordPath("db-1", "b-0")]: recordYaml(binding("b-0", "2026-01-02T00:00:00.000Z", true)),
      "overrides/db-1/instance.yaml": override("db-1-cfg", { data: { tuned: "yes" } }),
      "overrides/db-1/binding.yaml": override("b-1-creds-ref", { data: { secret: "vault" } }, "b-1"),
      "overrides/db-1/unbound.yaml": override("b-0-creds-ref", { data: {} }, "b-0"),
    });
    const draft = overlayDraft(repo.tree);
    const rendered = await renderInstanceInto(draft, view, "db-1");
    expect(rendered).toEqual({ overrides: ["overrides/db-1/instance.yaml", "overrides/db-1/binding.yaml"], problems: [] });
    expect(parse((await draft.readText(`${dir}/configmap-db-1-cfg.yaml`))!)).toMatchObject({ data: { from: "update", users: "b-1 ", tuned: "yes" } });
    expect(parse((await draft.readText(`${bindingManifestDir("c1", "db-1", "b-1")}/configmap-b-1-creds-ref.yaml`))!)).toMatchObject({
      metadata: { labels: { "gitops-broker.io/binding-id": "b-1" } },
      data: { secret: "vault" },
    });
    expect(await draft.list(bindingManifestDir("c1", "db-1", "b-0"))).toBeNull();
  });

  it("keeps the encrypted Secrets the records name (they cannot be rendered again), and only those", async () => {
    const sealed = (d: string, name: string) => sensitiveSecretPath(d, name);
    const b1 = bindingManifestDir("c1", "db-1", "b-1");
    const withRefs = instance();
    withRefs.spec.sensitiveParameters = { adminPassword: "db-1-sensitive-op-2", "tls.key": "db-1-sensitive-op-1" };
    const bound = binding("b-1", "2026-01-02T00:00:00.000Z");
    bound.spec.sensitiveParameters = { token: "db-1-sensitive-op-b-1" };
    await repo.write({
      [instanceRecordPath("db-1")]: recordYaml(withRefs),
      [bindingRecordPath("db-1", "b-1")]: recordYaml(bound),
      [sealed(dir, "db-1-sensitive-op-1")]: "encrypted 1",
      [sealed(dir, "db-1-sensitive-op-2")]: "encrypted 2",
      [sealed(dir, "db-1-sensitive-op-0")]: "no longer named",
      [sealed(b1, "db-1-sensitive-op-b-1")]: "encrypted b-1",
      [sealed(bindingManifestDir("c1", "db-1", "gone"), "db-1-sensitive-op-x")]: "of no live binding",
    });
    const draft = overlayDraft(repo.tree);
    await renderInstanceInto(draft, view, "db-1");
    expect((await draft.list(`${dir}/sensitive`))?.map((e) => e.name)).toEqual(["secret-db-1-sensitive-op-1.yaml", "secret-db-1-sensitive-op-2.yaml"]);
    expect(await draft.readText(sealed(dir, "db-1-sensitive-op-2"))).toBe("encrypted 2");
    expect(await draft.readText(sealed(b1, "db-1-sensitive-op-b-1"))).toBe("encrypted b-1");
    expect((await draft.list(b1))?.map((e) => e.name)).toEqual(["configmap-b-1-creds-ref.yaml", "sensitive"]);
    // Templates see, per Secret key, the Secret to reference: the instance's, or the binding's in bind.
    expect(parse((await draft.readText(`${dir}/configmap-db-1-cfg.yaml`))!)).toMatchObject({
      data: { refs: "adminPassword=db-1-sensitive-op-2/adminPassword tls.key=db-1-sensitive-op-1/tls.key " },
    });
    expect(parse((await draft.readText(`${b1}/configmap-b-1-creds-ref.yaml`))!)).toMatchObject({ data: { refs: "token=db-1-sensitive-op-b-1/token " } });
    expect(await draft.list(`${dir}/bindings`)).toEqual([expect.objectContaining({ name: "b-1" })]);
  });

  it("refuses an instance that is not live or whose cluster is gone", async () => {
    await repo.write({ [instanceRecordPath("db-1")]: recordYaml(instance()) });
    await expect(renderInstanceInto(overlayDraft(repo.tree), view, "db-2")).rejects.toThrow("instance db-2 does not exist");
    await expect(renderInstanceInto(overlayDraft(repo.tree), { catalog, clusters: [] }, "db-1")).rejects.toThrow(
      "instance db-1 is placed on cluster c1, which is not in the cluster registry",
    );
  });
});

/**
 * A plan whose bind template changes the instance's object, as Service Fabrik's sample does: it
 * reads the instance's ConfigMap through `sources` and outputs all of it with one more key.
 */
describe("renderInstanceInto with bindings that change the instance's objects (ADR 0017)", () => {
  const changing = [
    { action: "provision", content: cm("{{instance.metadata.name}}-cfg", '  size: "{{default "small" instance.spec.parameters.size}}"\n') },
    { action: "sources", content: "cfg:\n  apiVersion: v1\n  kind: ConfigMap\n  name: {{instance.metadata.name}}-cfg\n" },
    {
      action: "bind",
      content: '{{toYaml (merge (dict "data" (dict (concat "user-" binding.metadata.name) "superuser")) cfg)}}\n---\n' + cm("{{binding.metadata.name}}-conn", "  host: x\n"),
    },
  ].map((t) => ({ ...t, type: "handlebars", source: `catalog/plan.yaml#${t.action}` }));
  const plan2: Plan = { ...plan, templates: changing };
  const service2: Service = { ...service, plans: [plan2] };
  const catalog2: Catalog = { services: [service2], serviceById: () => service2, planById: () => plan2 };
  const view2 = { catalog: catalog2, clusters: [cluster] };
  const target = { apiVersion: "v1", kind: "ConfigMap", name: "db-1-cfg" };
  const cfg = async (draft: ReturnType<typeof overlayDraft>) => parse((await draft.readText(`${dir}/configmap-db-1-cfg.yaml`))!) as { data: Record<string, string> };
  const names = async (draft: ReturnType<typeof overlayDraft>, id: string) => (await draft.list(bindingManifestDir("c1", "db-1", id)))?.map((e) => e.name);

  it("composes the patches the binding records hold after the overrides, and commits no copy under the bindings", async () => {
    const b1 = binding("b-1", "2026-01-02T00:00:00.000Z");
    b1.spec.instancePatches = [{ target, patch: { data: { "user-b-1": "superuser" } } }];
    const b2 = binding("b-2", "2026-01-03T00:00:00.000Z");
    b2.spec.instancePatches = [{ target, patch: { data: { "user-b-2": "superuser" } } }];
    await repo.write({
      [instanceRecordPath("db-1")]: recordYaml(instance()),
      [bindingRecordPath("db-1", "b-1")]: recordYaml(b1),
      [bindingRecordPath("db-1", "b-2")]: recordYaml(b2),
      "overrides/db-1/instance.yaml": override("db-1-cfg", { data: { size: "tuned", "user-b-1": "replaced by the binding" } }),
    });
    const draft = overlayDraft(repo.tree);
    expect(await renderInstanceInto(draft, view2, "db-1")).toEqual({ overrides: ["overrides/db-1/instance.yaml"], problems: [] });
    // The bind template, reading the object that already has its user, changes nothing: the
    // records' patches are what keeps the users.
    expect((await cfg(draft)).data).toEqual({ size: "tuned", "user-b-1": "superuser", "user-b-2": "superuser" });
    expect(await names(draft, "b-1")).toEqual(["configmap-b-1-conn.yaml"]);
    expect(await names(draft, "b-2")).toEqual(["configmap-b-2-conn.yaml"]);
    expect(await draft.readText(bindingRecordPath("db-1", "b-1"))).toBe(recordYaml(b1));
  });

  it("reports a patch whose object is no longer rendered, naming the binding record", async () => {
    const b1 = binding("b-1", "2026-01-02T00:00:00.000Z");
    b1.spec.instancePatches = [{ target: { ...target, name: "renamed" }, patch: { data: { a: "b" } } }];
    await repo.write({ [instanceRecordPath("db-1")]: recordYaml(instance()), [bindingRecordPath("db-1", "b-1")]: recordYaml(b1) });
    const rendered = await renderInstanceInto(overlayDraft(repo.tree), view2, "db-1");
    expect(rendered.problems).toEqual([
      { file: bindingRecordPath("db-1", "b-1"), path: "spec.instancePatches[0].target", message: "v1 ConfigMap renamed is not among the objects rendered for instance db-1" },
    ]);
  });

  it("gives a binding made before ADR 0017 (a copy under its directory, no patch) its patch, and drops the copy", async () => {
    const copy = stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "db-1-cfg", namespace: "ns" }, data: { size: "small", "user-b-1": "superuser" } });
    await repo.write({
      [instanceRecordPath("db-1")]: recordYaml(instance()),
      [bindingRecordPath("db-1", "b-1")]: recordYaml(binding("b-1", "2026-01-02T00:00:00.000Z")),
      [bindingRecordPath("db-1", "b-2")]: recordYaml(binding("b-2", "2026-01-02T00:00:00.000Z")),
      [`${bindingManifestDir("c1", "db-1", "b-1")}/configmap-db-1-cfg.yaml`]: copy,
    });
    const draft = overlayDraft(repo.tree);
    expect(await renderInstanceInto(draft, view2, "db-1")).toEqual({ overrides: [], problems: [] });
    expect((parse((await draft.readText(bindingRecordPath("db-1", "b-1")))!) as BindingRecord).spec.instancePatches).toEqual([
      { target, patch: { data: { "user-b-1": "superuser" } } },
    ]);
    expect((await cfg(draft)).data).toEqual({ size: "small", "user-b-1": "superuser" });
    expect(await names(draft, "b-1")).toEqual(["configmap-b-1-conn.yaml"]);
    // b-2 had no copy: a record of this version whose bind changed nothing, left as it is.
    expect(await draft.readText(bindingRecordPath("db-1", "b-2"))).toBe(recordYaml(binding("b-2", "2026-01-02T00:00:00.000Z")));
  });
});
