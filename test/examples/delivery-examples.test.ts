import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { DEFAULT_INSTANCE_NAMESPACE } from "../../src/catalog/index.js";
import { clusterDir } from "../../src/repo/index.js";
import { modelFor, typeErrors } from "../support/kube-models.js";

/**
 * The delivery examples (examples/argocd, examples/flux): every YAML document, and every
 * commented-out document in them, validates offline against its kubernetes-models model and has no
 * field the model does not know; and the files agree with each other and with the repository layout.
 */

const EXAMPLES = path.resolve(import.meta.dirname, "../../examples");
const DELIVERY_DIRS = ["argocd", "flux"];

interface ExampleDocument {
  /** `argocd/applicationset.yaml#0`; `(commented)` for a commented-out document. */
  label: string;
  apiVersion: string;
  kind: string;
  object: Record<string, unknown>;
}

function loadExamples(): ExampleDocument[] {
  const docs: ExampleDocument[] = [];
  for (const dir of DELIVERY_DIRS) {
    for (const name of fs.readdirSync(path.join(EXAMPLES, dir)).filter((n) => /\.ya?ml$/.test(n)).sort()) {
      const file = `${dir}/${name}`;
      const text = fs.readFileSync(path.join(EXAMPLES, file), "utf8");
      parseAllDocuments(text).forEach((d, i) => {
        if (d.errors.length > 0) throw new Error(`${file}#${i}: ${d.errors.map((e) => e.message).join("; ")}`);
        if (d.contents !== null) docs.push(toExample(`${file}#${i}`, d.toJS()));
      });
      commentedDocuments(text).forEach((t, i) => docs.push(toExample(`${file} (commented #${i})`, parse(t))));
    }
  }
  return docs;
}

/** Documents shown commented out (`# apiVersion: ...` and the `#` lines that follow), uncommented. */
function commentedDocuments(text: string): string[] {
  const blocks: string[] = [];
  let block: string[] | undefined;
  for (const line of text.split("\n")) {
    if (block === undefined && line.startsWith("# apiVersion: ")) block = [];
    if (block !== undefined && /^#( |$)/.test(line)) {
      block.push(line.replace(/^# ?/, ""));
    } else if (block !== undefined) {
      blocks.push(block.join("\n"));
      block = undefined;
    }
  }
  if (block !== undefined) blocks.push(block.join("\n"));
  return blocks;
}

function toExample(label: string, value: unknown): ExampleDocument {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error(`${label} is not an object`);
  const object = value as Record<string, unknown>;
  const { apiVersion, kind } = object;
  if (typeof apiVersion !== "string" || typeof kind !== "string") throw new Error(`${label} has no apiVersion/kind`);
  return { label, apiVersion, kind, object };
}

const examples = loadExamples();

function only(kind: string, label?: string): Record<string, unknown> {
  const found = examples.filter((d) => d.kind === kind && (label === undefined || d.label.startsWith(label)));
  const [doc] = found;
  if (doc === undefined || found.length > 1) throw new Error(`expected one ${kind} ${label ?? ""}, found ${found.length}`);
  return doc.object;
}

/** Value at a dotted path (numeric segments index arrays); undefined when absent. */
function at(value: unknown, dotted: string): unknown {
  return dotted.split(".").reduce<unknown>((v, key) => (typeof v === "object" && v !== null ? (v as Record<string, unknown>)[key] : undefined), value);
}

describe("delivery examples", () => {
  it("finds the documents of both tools, the commented remote-cluster Kustomization included", () => {
    expect(examples.map((d) => `${d.label} ${d.kind}`)).toEqual([
      "argocd/applicationset.yaml#0 ApplicationSet",
      "argocd/appproject.yaml#0 AppProject",
      "flux/gitrepository.yaml#0 GitRepository",
      "flux/kustomization-local.yaml#0 Kustomization",
      "flux/kustomization-local.yaml (commented #0) Kustomization",
      "flux/receiver.yaml#0 Receiver",
    ]);
  });

  it.each(examples.map((d) => [d.label, d] as const))("%s has a model and validates against it", (_label, doc) => {
    const Model = modelFor(doc.apiVersion, doc.kind);
    if (Model === undefined) throw new Error(`no kubernetes-models model for ${doc.apiVersion} ${doc.kind}: it would go unvalidated`);
    expect(() => new Model(doc.object).validate()).not.toThrow();
  });

  it("has no field unknown to the models (validate() alone lets them through)", () => {
    const errors = typeErrors(examples);
    expect(Object.fromEntries(examples.map((d, i) => [d.label, errors[i]]))).toEqual(
      Object.fromEntries(examples.map((d) => [d.label, []])),
    );
  });

  it("fails validation on a wrong type, and the type check on a misspelt field", () => {
    const kustomization = only("Kustomization", "flux/kustomization-local.yaml#");
    const spec = kustomization.spec as Record<string, unknown>;
    const Model = modelFor("kustomize.toolkit.fluxcd.io/v1", "Kustomization")!;

    const wrongType = { ...kustomization, spec: { ...spec, prune: "yes" } };
    expect(() => new Model(wrongType).validate()).toThrow(/prune/);

    const misspelt = { ...kustomization, spec: { ...spec, prunne: true } };
    expect(() => new Model(misspelt).validate()).not.toThrow();
    const [errors] = typeErrors([{ apiVersion: "kustomize.toolkit.fluxcd.io/v1", kind: "Kustomization", object: misspelt }]);
    expect(errors).toEqual([expect.stringMatching(/'"prunne"' does not exist/)]);
  });

  it("finds a misspelt field deep in the ApplicationSet template", () => {
    const appSet = structuredClone(only("ApplicationSet"));
    const source = at(appSet, "spec.template.spec.source") as Record<string, unknown>;
    source.directory = { recurce: true };
    const [errors] = typeErrors([{ apiVersion: "argoproj.io/v1alpha1", kind: "ApplicationSet", object: appSet }]);
    expect(errors).toEqual([expect.stringMatching(/'"recurce"' does not exist/)]);
  });

  it("reports a document without a model", () => {
    expect(modelFor("gitops-broker.io/v1alpha1", "Cluster")).toBeUndefined();
    expect(modelFor("argoproj.io/v1alpha1", "Rollout")).toBeUndefined();
    expect(modelFor("v1", "Namespace")).toBeTypeOf("function");
  });
});

describe("Argo CD example", () => {
  const appSet = only("ApplicationSet");
  const project = only("AppProject");
  const template = at(appSet, "spec.template.spec");
  const registry = parse(fs.readFileSync(path.join(EXAMPLES, "registry/clusters/local.yaml"), "utf8")) as Record<string, unknown>;

  /**
   * The two template expressions of the example, as Argo CD's Go template evaluates them for one
   * registry file; any other expression fails the test rather than go unchecked.
   */
  function renderTemplate(s: string, cluster: Record<string, unknown>): string {
    return s.replace(/\{\{(.*?)\}\}/g, (_m, expr: string) => {
      const e = expr.trim();
      if (e === ".metadata.name") return String(at(cluster, "metadata.name"));
      if (e === `dig "spec" "namespace" "${DEFAULT_INSTANCE_NAMESPACE}" .`) {
        return String(at(cluster, "spec.namespace") ?? DEFAULT_INSTANCE_NAMESPACE);
      }
      throw new Error(`template expression {{${expr}}} is not emulated by this test`);
    });
  }

  it("generates one Application per registry file, syncing clusters/<id> recursively and automatically", () => {
    expect(at(appSet, "spec.goTemplate")).toBe(true);
    expect(at(appSet, "spec.generators.0.git.files")).toEqual([{ path: "registry/clusters/*.yaml" }]);
    expect(at(appSet, "spec.generators.0.git.revision")).toBe("main");
    expect(at(template, "source.targetRevision")).toBe("main");
    expect(at(template, "source.directory")).toEqual({ recurse: true });
    expect(at(template, "syncPolicy.automated")).toEqual({ prune: true, selfHeal: true });
    expect(at(template, "syncPolicy.syncOptions")).toEqual(["CreateNamespace=false", "PruneLast=true", "ApplyOutOfSyncOnly=true"]);
    expect(at(appSet, "spec.syncPolicy.preserveResourcesOnDeletion")).toBe(true);
  });

  it("renders, for registry/clusters/local.yaml, an Application the project admits", () => {
    const render = (p: string) => renderTemplate(String(at(template, p)), registry);
    expect(render("source.path")).toBe(clusterDir("local"));
    expect(render("destination.name")).toBe("local");
    expect(render("destination.namespace")).toBe(at(registry, "spec.namespace"));
    expect(renderTemplate(String(at(appSet, "spec.template.metadata.name")), registry)).toBe("gitops-broker-local");

    expect(at(template, "project")).toBe(at(project, "metadata.name"));
    expect(at(project, "spec.sourceRepos")).toEqual([at(template, "source.repoURL")]);
    expect(at(appSet, "spec.generators.0.git.repoURL")).toBe(at(template, "source.repoURL"));
    expect(at(project, "spec.destinations")).toContainEqual({ name: render("destination.name"), namespace: render("destination.namespace") });
  });

  it("falls back to the broker's default namespace for a registry file without spec.namespace (SFCluster)", () => {
    const sfCluster = { apiVersion: "resource.servicefabrik.io/v1alpha1", kind: "SFCluster", metadata: { name: "sf-1" }, spec: { secretRef: "sf-1" } };
    expect(renderTemplate(String(at(template, "destination.namespace")), sfCluster)).toBe(DEFAULT_INSTANCE_NAMESPACE);
  });

  it("admits Namespace as the only cluster-scoped kind", () => {
    expect(at(project, "spec.clusterResourceWhitelist")).toEqual([{ group: "", kind: "Namespace" }]);
    expect(at(project, "spec.namespaceResourceWhitelist")).toEqual([{ group: "*", kind: "*" }]);
  });
});

describe("Flux example", () => {
  const source = only("GitRepository");
  const receiver = only("Receiver");
  const local = only("Kustomization", "flux/kustomization-local.yaml#");
  const remote = only("Kustomization", "flux/kustomization-local.yaml (commented");
  const sourceRef = { kind: "GitRepository", name: at(source, "metadata.name") };

  it("tracks branch main of the repository with credentials from a Secret", () => {
    expect(at(source, "spec.ref")).toEqual({ branch: "main" });
    expect(at(source, "spec.secretRef.name")).toEqual(expect.any(String));
    expect(at(source, "spec.url")).toBe(at(only("ApplicationSet"), "spec.template.spec.source.repoURL"));
  });

  it("applies ./clusters/local with prune and wait, and the remote example through kubeConfig.secretRef", () => {
    for (const [k, cluster] of [[local, "local"], [remote, "eu-prod-1"]] as const) {
      expect(at(k, "spec.sourceRef")).toEqual(sourceRef);
      expect(at(k, "spec.path")).toBe(`./${clusterDir(cluster)}`);
      expect(at(k, "spec.prune")).toBe(true);
      expect(at(k, "spec.wait")).toBe(true);
      expect(at(k, "spec.timeout")).toEqual(expect.any(String));
      expect(at(k, "metadata.namespace")).toBe(at(source, "metadata.namespace"));
    }
    expect(at(local, "spec.kubeConfig")).toBeUndefined();
    expect(at(remote, "spec.kubeConfig.secretRef.name")).toBe("eu-prod-1-kubeconfig");
    // The broker's encrypted Secrets (ADR 0007) are decrypted with the cluster's age identity.
    expect(at(remote, "spec.decryption")).toEqual({ provider: "sops", secretRef: { name: "sops-age" } });
  });

  it("refreshes the GitRepository on GitHub push events", () => {
    expect(at(receiver, "spec.type")).toBe("github");
    expect(at(receiver, "spec.events")).toContain("push");
    expect(at(receiver, "spec.resources")).toEqual([{ apiVersion: at(source, "apiVersion"), ...sourceRef }]);
  });
});
