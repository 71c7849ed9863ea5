import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { tempDirTree, type TempDirTree } from "../../test/support/dir-tree.js";
import { keyOf } from "./layout.js";
import { mergePatch, readOverrides } from "./overrides.js";

describe("mergePatch (RFC 7386)", () => {
  // The examples of RFC 7386, appendix A.
  const cases: [unknown, unknown, unknown][] = [
    [{ a: "b" }, { a: "c" }, { a: "c" }],
    [{ a: "b" }, { b: "c" }, { a: "b", b: "c" }],
    [{ a: "b" }, { a: null }, {}],
    [{ a: "b", b: "c" }, { a: null }, { b: "c" }],
    [{ a: ["b"] }, { a: "c" }, { a: "c" }],
    [{ a: "c" }, { a: ["b"] }, { a: ["b"] }],
    [{ a: { b: "c" } }, { a: { b: "d", c: null } }, { a: { b: "d" } }],
    [{ a: [{ b: "c" }] }, { a: [1] }, { a: [1] }],
    [["a", "b"], ["c", "d"], ["c", "d"]],
    [{ a: "b" }, ["c"], ["c"]],
    [{ a: "foo" }, null, null],
    [{ a: "foo" }, "bar", "bar"],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: "b", c: null }, { a: "b" }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ];
  it.each(cases)("%j patched with %j is %j", (target, patch, expected) => {
    const before = structuredClone(target);
    expect(mergePatch(target, patch)).toEqual(expected);
    expect(target).toEqual(before);
  });

  it("treats a __proto__ key as data", () => {
    const patch = JSON.parse('{"__proto__": {"polluted": true}}') as unknown;
    const out = mergePatch({}, patch) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.keys(out)).toEqual(["__proto__"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("readOverrides", () => {
  let repo: TempDirTree;
  beforeEach(async () => {
    repo = await tempDirTree();
  });
  afterEach(async () => {
    await repo.remove();
  });

  const doc = (name: string, extra = "") =>
    `apiVersion: gitops-broker.io/v1alpha1\nkind: Override\ntarget:\n  apiVersion: v1\n  kind: ConfigMap\n  name: ${name}\npatch:\n  data:\n    a: b\n${extra}`;

  it("reads every document of every YAML file below overrides/<key>/, in path order, with a problem per bad one", async () => {
    await repo.write({
      "overrides/db-1/b.yaml": `${doc("two")}---\n${doc("three", "binding: app-1\n")}`,
      "overrides/db-1/a/nested.yml": doc("one"),
      "overrides/db-1/README.md": "not an override",
      "overrides/db-1/c.yaml": "apiVersion: gitops-broker.io/v1alpha1\nkind: Override\ntarget: {kind: ConfigMap}\npatch: []\n",
      "overrides/db-1/d.yaml": "a: [\n",
      "overrides/db-2/x.yaml": doc("other"),
    });
    const { overrides, problems } = await readOverrides(repo.tree, "db-1");
    expect(overrides.map((o) => [o.file, o.at, o.target.name, o.binding])).toEqual([
      ["overrides/db-1/a/nested.yml", "", "one", undefined],
      ["overrides/db-1/b.yaml", "documents[0].", "two", undefined],
      ["overrides/db-1/b.yaml", "documents[1].", "three", "app-1"],
    ]);
    expect(overrides[0]?.patch).toEqual({ data: { a: "b" } });
    expect(problems.map((p) => `${p.file}: ${p.path}: ${p.message}`)).toEqual([
      "overrides/db-1/c.yaml: target: must have required property 'apiVersion'",
      "overrides/db-1/c.yaml: target: must have required property 'name'",
      "overrides/db-1/c.yaml: patch: must be object",
      expect.stringMatching(/^overrides\/db-1\/d\.yaml: : is not valid YAML: /),
    ]);
  });

  it("finds the overrides of an instance id that is not a key under its key", async () => {
    await repo.write({ [`overrides/${keyOf("Not_A_Key")}/x.yaml`]: doc("x") });
    expect((await readOverrides(repo.tree, "Not_A_Key")).overrides.map((o) => o.target.name)).toEqual(["x"]);
    expect(await readOverrides(repo.tree, "db-none")).toEqual({ overrides: [], problems: [] });
  });
});
