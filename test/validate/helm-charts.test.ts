import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { formatValidationProblem, validateRepo } from "../../src/validate/index.js";
import { tempDirTree, type TempDirTree } from "../support/dir-tree.js";
import { repoFiles } from "../support/repo-files.js";

/** `validate` checks a helm plan's chart: it loads, its dependencies are there, its templates parse. */

const SERVICE_ID = "4de30cf9-a981-48c9-9acf-909805db46bc"; // the sample catalog's postgresql

const plan = (url: string) => `apiVersion: osb.servicefabrik.io/v1alpha1
kind: SFPlan
metadata:
  name: kv
spec:
  id: kv-plan
  name: kv
  serviceId: ${SERVICE_ID}
  description: a chart
  templates:
  - action: provision
    type: helm
    url: ${url}
    content: |
      name: {{ .instance.spec.instanceId }}
`;

let repo: TempDirTree;
beforeEach(async () => {
  repo = await tempDirTree("validate-helm-");
  await repo.write(await repoFiles([{ id: "c1" }]));
});
afterEach(async () => {
  await repo.remove();
});

const lines = async () => (await validateRepo(repo.tree)).map(formatValidationProblem);

describe("validate: helm plans", () => {
  it("accepts a chart that loads and renders with sample inputs", async () => {
    await repo.write({
      "catalog/kv.yaml": plan("catalog/charts/kv"),
      "catalog/charts/kv/Chart.yaml": "apiVersion: v2\nname: kv\nversion: 1.0.0\n",
      "catalog/charts/kv/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name }}\n",
    });
    expect(await lines()).toEqual([]);
  });

  it("reports a template that does not parse, a missing dependency and a bad Chart.yaml, with Helm's messages", async () => {
    await repo.write({
      "catalog/kv.yaml": plan("catalog/charts/kv"),
      "catalog/charts/kv/Chart.yaml": "apiVersion: v2\nname: kv\nversion: 1.0.0\n",
      "catalog/charts/kv/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name | nope }}\n",
    });
    expect(await lines()).toEqual([
      expect.stringContaining('plan kv: template provision: helm: parse error at (kv/templates/cm.yaml:4): function "nope" not defined'),
    ]);
    await repo.write({
      "catalog/charts/kv/Chart.yaml": "apiVersion: v2\nname: kv\nversion: 1.0.0\ndependencies:\n  - name: db\n    version: 1.0.0\n    repository: https://charts.example.com\n",
      "catalog/charts/kv/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\n",
    });
    expect(await lines()).toEqual([expect.stringContaining("helm: An error occurred while checking for chart dependencies.")]);
    await repo.write({ "catalog/charts/kv/Chart.yaml": "apiVersion: v2\nname: kv\nversion: one\n" });
    expect(await lines()).toEqual([expect.stringContaining('helm: validation: chart.metadata.version "one" is invalid')]);
  });
});
