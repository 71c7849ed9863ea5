import { describe, expect, it } from "vitest";
import { formatProblem } from "../errors/index.js";
import { checkObjects } from "../render/index.js";
import type { Override } from "../repo/index.js";
import { applyOverrides } from "./overrides.js";

const defaults = { defaultNamespace: "ns", labels: { "app.kubernetes.io/managed-by": "gitops-broker", "gitops-broker.io/instance-id": "db-1" } };

function rendered() {
  const { manifests, problems } = checkObjects(
    [
      { value: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "settings" }, data: { size: "small", keep: "me" } }, source: "t", path: "documents[0]" },
      { value: { apiVersion: "v1", kind: "Secret", metadata: { name: "pw" } }, source: "t", path: "documents[1]" },
    ],
    defaults,
  );
  expect(problems).toEqual([]);
  return manifests;
}

function override(file: string, target: Override["target"], patch: Record<string, unknown>): Override {
  return { file, at: "", target, patch };
}

const CONFIG_MAP = { apiVersion: "v1", kind: "ConfigMap", name: "settings" };
const SECRET = { apiVersion: "v1", kind: "Secret", name: "pw" };

describe("applyOverrides", () => {
  it("merges the patch, keeps the broker's labels and the file name, and writes canonical YAML", () => {
    const out = applyOverrides(
      rendered(),
      [override("overrides/db-1/size.yaml", CONFIG_MAP, { data: { size: "large", keep: null }, metadata: { labels: { "gitops-broker.io/instance-id": "other", team: "dba" } } })],
      defaults,
      "instance db-1",
    );
    expect(out.problems).toEqual([]);
    expect(out.applied).toEqual(["overrides/db-1/size.yaml"]);
    const [cm] = out.manifests;
    expect(cm?.fileName).toBe("configmap-settings.yaml");
    expect(cm?.yaml).toBe(
      [
        "apiVersion: v1",
        "kind: ConfigMap",
        "metadata:",
        "  name: settings",
        "  namespace: ns",
        "  labels:",
        "    app.kubernetes.io/managed-by: gitops-broker",
        "    gitops-broker.io/instance-id: db-1",
        "    team: dba",
        "data:",
        "  size: large",
        "",
      ].join("\n"),
    );
  });

  it("skips an override that would give a Secret data, rename an object or miss its target, and applies the others", () => {
    const before = rendered();
    const out = applyOverrides(
      before,
      [
        override("overrides/db-1/a.yaml", SECRET, { stringData: { password: "hunter2" } }),
        override("overrides/db-1/b.yaml", CONFIG_MAP, { metadata: { name: "renamed" } }),
        override("overrides/db-1/c.yaml", { ...CONFIG_MAP, name: "nope" }, { data: {} }),
        override("overrides/db-1/d.yaml", CONFIG_MAP, { data: { size: "medium" } }),
      ],
      defaults,
      "instance db-1",
    );
    expect(out.problems.map(formatProblem)).toEqual([
      "overrides/db-1/a.yaml: patch.stringData: the patched v1 Secret pw: renders Secret pw with stringData; secrets must come from the cluster (created by the operator or synced by a secret store), a credential is never written to Git",
      "overrides/db-1/b.yaml: patch: must not change apiVersion, kind, metadata.name or metadata.namespace (they identify the object and its file)",
      "overrides/db-1/c.yaml: target: v1 ConfigMap nope is not among the objects rendered for instance db-1",
    ]);
    expect(out.applied).toEqual(["overrides/db-1/d.yaml"]);
    expect(out.manifests[1]).toEqual(before[1]);
    expect(out.manifests[0]?.object).toMatchObject({ data: { size: "medium", keep: "me" } });
  });
});
