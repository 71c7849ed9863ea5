import { execFile } from "node:child_process";
import fs from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { clusterDir, clusterNamespacePath, namespaceManifest } from "../../src/repo/index.js";
import { crdValidator } from "../support/crd-schema.js";
import { createTempDir } from "../support/git-fixtures.js";
import { modelFor, typeErrors } from "../support/kube-models.js";
import { commandExists } from "../support/syncable.js";
import { testTool } from "../support/test-tools.js";

/**
 * The delivery examples (examples/argocd, examples/flux): every YAML document, and every
 * commented-out document in them, validates offline, the Flux sources and Kustomizations against
 * the CRDs of source- and kustomize-controller v1.9.6 and the Argo CD kinds against those of Argo
 * CD v3.6.1 (the test tools' `crds`: newer than the kubernetes-models, which know neither
 * `sparseCheckout`, ExternalArtifact sources nor a sync retry's `refresh`), the others against
 * their kubernetes-models, neither admitting a field its schema does not know; each
 * directory builds with `kubectl kustomize` to the documents its kustomization.yaml lists; and the
 * files agree with each other and with the repository layout: one ApplicationSet, one GitRepository
 * and one ArtifactGenerator per repository (the control repository and each store), and per
 * cluster a source that changes only with clusters/<id>/.
 */

const EXAMPLES = path.resolve(import.meta.dirname, "../../examples");
const DELIVERY_DIRS = ["argocd", "flux"];
const run = promisify(execFile);
const hasKubectl = await commandExists("kubectl");

interface ExampleDocument {
  /** `argocd/applicationset.yaml#0`; `(commented)` for a commented-out document. */
  label: string;
  file: string;
  apiVersion: string;
  kind: string;
  object: Record<string, unknown>;
}

/** kustomize's own file, not a Kubernetes object. */
const isKustomizeFile = (name: string) => name === "kustomization.yaml";

function loadExamples(): ExampleDocument[] {
  const docs: ExampleDocument[] = [];
  for (const dir of DELIVERY_DIRS) {
    for (const name of fs.readdirSync(path.join(EXAMPLES, dir)).filter((n) => /\.ya?ml$/.test(n) && !isKustomizeFile(n)).sort()) {
      const file = `${dir}/${name}`;
      const text = fs.readFileSync(path.join(EXAMPLES, file), "utf8");
      parseAllDocuments(text).forEach((d, i) => {
        if (d.errors.length > 0) throw new Error(`${file}#${i}: ${d.errors.map((e) => e.message).join("; ")}`);
        if (d.contents !== null) docs.push(toExample(`${file}#${i}`, file, d.toJS()));
      });
      commentedDocuments(text).forEach((t, i) => docs.push(toExample(`${file} (commented #${i})`, file, parse(t))));
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

function toExample(label: string, file: string, value: unknown): ExampleDocument {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error(`${label} is not an object`);
  const object = value as Record<string, unknown>;
  const { apiVersion, kind } = object;
  if (typeof apiVersion !== "string" || typeof kind !== "string") throw new Error(`${label} has no apiVersion/kind`);
  return { label, file, apiVersion, kind, object };
}

const examples = loadExamples();

function all(kind: string, label = ""): Record<string, unknown>[] {
  return examples.filter((d) => d.kind === kind && d.label.startsWith(label)).map((d) => d.object);
}

function only(kind: string, label?: string): Record<string, unknown> {
  const found = all(kind, label);
  const [doc] = found;
  if (doc === undefined || found.length > 1) throw new Error(`expected one ${kind} ${label ?? ""}, found ${found.length}`);
  return doc;
}

/** Value at a dotted path (numeric segments index arrays); undefined when absent. */
function at(value: unknown, dotted: string): unknown {
  return dotted.split(".").reduce<unknown>((v, key) => (typeof v === "object" && v !== null ? (v as Record<string, unknown>)[key] : undefined), value);
}

const named = (o: Record<string, unknown>) => String(at(o, "metadata.name"));

/** The CRDs the test tools copy out of the Flux and Argo CD modules, by apiVersion/kind. */
const CRD_FILES: Record<string, string> = {
  "source.toolkit.fluxcd.io/v1 GitRepository": "source.toolkit.fluxcd.io_gitrepositories.yaml",
  "kustomize.toolkit.fluxcd.io/v1 Kustomization": "kustomize.toolkit.fluxcd.io_kustomizations.yaml",
  "argoproj.io/v1alpha1 Application": "application-crd.yaml",
  "argoproj.io/v1alpha1 ApplicationSet": "applicationset-crd.yaml",
  "argoproj.io/v1alpha1 AppProject": "appproject-crd.yaml",
};
const crdFileOf = (apiVersion: string, kind: string) => CRD_FILES[`${apiVersion} ${kind}`];

/**
 * source-watcher's ArtifactGenerator (source.extensions.fluxcd.io/v1beta1) has neither a model nor
 * a CRD here (its module is not served by the Go module proxy): its documents are held to the
 * fields of its v1beta1 API as source-watcher v2.0.0 (Flux 2.7.0) declares them
 * (api/v1beta1/artifactgenerator_types.go), by path.
 */
const ARTIFACT_GENERATOR_FIELDS = new Set([
  "apiVersion",
  "kind",
  "metadata",
  "metadata.name",
  "metadata.namespace",
  "spec",
  "spec.sources",
  "spec.sources[].alias",
  "spec.sources[].kind",
  "spec.sources[].name",
  "spec.sources[].namespace",
  "spec.artifacts",
  "spec.artifacts[].name",
  "spec.artifacts[].revision",
  "spec.artifacts[].originRevision",
  "spec.artifacts[].copy",
  "spec.artifacts[].copy[].from",
  "spec.artifacts[].copy[].to",
  "spec.artifacts[].copy[].exclude",
  "spec.artifacts[].copy[].strategy",
]);

/** Every field path of `value` (array elements as `[]`). */
function fieldPaths(value: unknown, prefix = ""): string[] {
  if (Array.isArray(value)) return value.flatMap((v) => fieldPaths(v, `${prefix}[]`));
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([k, v]) => {
    const p = prefix === "" ? k : `${prefix}.${k}`;
    return [p, ...fieldPaths(v, p)];
  });
}

/** The problems of one document against its CRD (when the test tools ship one), else its model. */
let validators: Map<string, (object: unknown) => string[]>;
beforeAll(async () => {
  validators = new Map();
  for (const [key, file] of Object.entries(CRD_FILES)) validators.set(key, await crdValidator(path.join(testTool("crds"), file)));
});

describe("delivery examples", () => {
  it("finds the documents of both tools, the commented remote-cluster Kustomization included", () => {
    expect(examples.map((d) => `${d.label} ${d.kind} ${named(d.object)}`)).toEqual([
      "argocd/applicationset-store-eu.yaml#0 ApplicationSet gitops-broker-store-eu",
      "argocd/applicationset.yaml#0 ApplicationSet gitops-broker",
      "argocd/appproject.yaml#0 AppProject gitops-broker",
      "flux/artifactgenerator.yaml#0 ArtifactGenerator gitops-broker",
      "flux/artifactgenerator.yaml#1 ArtifactGenerator gitops-broker-store-eu",
      "flux/gitrepository.yaml#0 GitRepository gitops-broker",
      "flux/gitrepository.yaml#1 GitRepository gitops-broker-store-eu",
      "flux/kustomization-local.yaml#0 Kustomization gitops-broker-local",
      "flux/kustomization-local.yaml (commented #0) Kustomization gitops-broker-eu-prod-1",
      "flux/receiver.yaml#0 Receiver gitops-broker-github",
      "flux/sparse-checkout.yaml#0 GitRepository gitops-broker-local",
      "flux/sparse-checkout.yaml#1 Kustomization gitops-broker-local",
    ]);
  });

  it.each(examples.filter((d) => crdFileOf(d.apiVersion, d.kind) !== undefined).map((d) => [d.label, d] as const))(
    "%s validates against its CRD, no unknown field",
    (_label, doc) => {
      expect(validators.get(`${doc.apiVersion} ${doc.kind}`)!(doc.object)).toEqual([]);
    },
  );

  const modelled = examples.filter((d) => crdFileOf(d.apiVersion, d.kind) === undefined && d.kind !== "ArtifactGenerator");
  it.each(modelled.map((d) => [d.label, d] as const))("%s has a model and validates against it", (_label, doc) => {
    const Model = modelFor(doc.apiVersion, doc.kind);
    if (Model === undefined) throw new Error(`no kubernetes-models model for ${doc.apiVersion} ${doc.kind}: it would go unvalidated`);
    expect(() => new Model(doc.object).validate()).not.toThrow();
  });

  it("has no field unknown to the models (validate() alone lets them through)", () => {
    const errors = typeErrors(modelled);
    expect(Object.fromEntries(modelled.map((d, i) => [d.label, errors[i]]))).toEqual(Object.fromEntries(modelled.map((d) => [d.label, []])));
  });

  it("has ArtifactGenerators with only the fields of source-watcher's v1beta1 API", () => {
    const generators = examples.filter((d) => d.kind === "ArtifactGenerator");
    expect(generators.map((d) => d.apiVersion)).toEqual(["source.extensions.fluxcd.io/v1beta1", "source.extensions.fluxcd.io/v1beta1"]);
    for (const d of generators) expect(fieldPaths(d.object).filter((p) => !ARTIFACT_GENERATOR_FIELDS.has(p)), d.label).toEqual([]);
    const misspelt = structuredClone(generators[0]!.object);
    (at(misspelt, "spec.artifacts.0") as Record<string, unknown>).orginRevision = "@control";
    expect(fieldPaths(misspelt).filter((p) => !ARTIFACT_GENERATOR_FIELDS.has(p))).toEqual(["spec.artifacts[].orginRevision"]);
  });

  it("fails the CRD validation on a wrong type and on a misspelt field, and the type check on a misspelt field deep in the ApplicationSet", () => {
    const kustomizations = validators.get("kustomize.toolkit.fluxcd.io/v1 Kustomization")!;
    const kustomization = only("Kustomization", "flux/kustomization-local.yaml#");
    const spec = kustomization.spec as Record<string, unknown>;
    expect(kustomizations({ ...kustomization, spec: { ...spec, prune: "yes" } })).toEqual(["/spec/prune: must be boolean"]);
    expect(kustomizations({ ...kustomization, spec: { ...spec, prunne: true } })).toEqual(["/spec: must NOT have additional properties (prunne)"]);
    expect(kustomizations({ ...kustomization, spec: { ...spec, sourceRef: { kind: "ArtifactGenerator", name: "x" } } })).toEqual([
      "/spec/sourceRef/kind: must be equal to one of the allowed values",
    ]);
    const source = only("GitRepository", "flux/sparse-checkout.yaml#");
    const sourceSpec = source.spec as Record<string, unknown>;
    expect(validators.get("source.toolkit.fluxcd.io/v1 GitRepository")!({ ...source, spec: { ...sourceSpec, sparseCheckout: "clusters/local" } })).toEqual([
      "/spec/sparseCheckout: must be array",
    ]);

    const appSet = structuredClone(only("ApplicationSet", "argocd/applicationset.yaml#"));
    (at(appSet, "spec.template.spec.source") as Record<string, unknown>).directory = { recurce: true };
    (at(appSet, "spec.template.spec.syncPolicy.retry") as Record<string, unknown>).refresh = "yes";
    expect(validators.get("argoproj.io/v1alpha1 ApplicationSet")!(appSet)).toEqual([
      "/spec/template/spec/source/directory: must NOT have additional properties (recurce)",
      "/spec/template/spec/syncPolicy/retry/refresh: must be boolean",
    ]);
  });

  it.skipIf(!hasKubectl)("builds each directory with kubectl kustomize to the documents its kustomization.yaml lists", async () => {
    for (const dir of DELIVERY_DIRS) {
      const { stdout } = await run("kubectl", ["kustomize", path.join(EXAMPLES, dir)]);
      const built = parseAllDocuments(stdout).map((d) => d.toJS() as Record<string, unknown>);
      const listed = (parse(fs.readFileSync(path.join(EXAMPLES, dir, "kustomization.yaml"), "utf8")) as { resources: string[] }).resources;
      const expected = examples.filter((d) => listed.includes(path.basename(d.file)) && !d.label.includes("(commented")).map((d) => d.object);
      const key = (o: Record<string, unknown>) => `${String(o.kind)}/${named(o)}`;
      expect(built.map(key).sort(), dir).toEqual(expected.map(key).sort());
      for (const o of built) expect(o, key(o)).toEqual(expected.find((e) => key(e) === key(o)));
    }
  });
});

describe("Argo CD example", () => {
  const project = only("AppProject");
  const appSets = all("ApplicationSet");
  const control = only("ApplicationSet", "argocd/applicationset.yaml#");
  const store = only("ApplicationSet", "argocd/applicationset-store-eu.yaml#");

  /**
   * Argo CD's git files generator with goTemplate, for one file it matched: the file's YAML fields,
   * and `path` = {path: its directory, basename: the directory's name}
   * (applicationset/generators/git.go).
   */
  function generatorParams(file: string, content: string): Record<string, unknown> {
    const dir = path.posix.dirname(file);
    return { ...(parse(content) as Record<string, unknown>), path: { path: dir, basename: path.posix.basename(dir) } };
  }

  /** The template's expressions (`{{ .a.b }}` only) evaluated for one set of parameters; any other expression fails the test. */
  function renderTemplate(value: unknown, params: Record<string, unknown>): unknown {
    if (typeof value === "string") {
      return value.replace(/\{\{(.*?)\}\}/g, (_m, expr: string) => {
        const e = expr.trim();
        if (!/^(\.[A-Za-z_]\w*)+$/.test(e)) throw new Error(`template expression {{${expr}}} is not emulated by this test`);
        const v = at(params, e.slice(1));
        if (v === undefined) throw new Error(`{{${expr}}}: missing key (missingkey=error)`);
        return String(v);
      });
    }
    if (Array.isArray(value)) return value.map((v) => renderTemplate(v, params));
    if (typeof value === "object" && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderTemplate(v, params)]));
    return value;
  }

  /** The Application the ApplicationSet generates for a cluster directory the broker wrote, with its Namespace. */
  function applicationFor(appSet: Record<string, unknown>, clusterId: string, namespace: string): Record<string, unknown> {
    const params = generatorParams(clusterNamespacePath(clusterId), namespaceManifest(namespace));
    const template = at(appSet, "spec.template") as Record<string, unknown>;
    return { apiVersion: "argoproj.io/v1alpha1", kind: "Application", ...(renderTemplate(template, params) as Record<string, unknown>), metadata: { namespace: at(appSet, "metadata.namespace"), ...(renderTemplate(template.metadata, params) as object) } };
  }

  it("has one ApplicationSet per repository, the control repository's and a store's, the same but for the repository", () => {
    const repos = appSets.map((a) => at(a, "spec.generators.0.git.repoURL"));
    expect(new Set(repos).size).toBe(appSets.length);
    for (const a of appSets) expect(at(a, "spec.template.spec.source.repoURL")).toBe(at(a, "spec.generators.0.git.repoURL"));
    expect([...(at(project, "spec.sourceRepos") as string[])].sort()).toEqual([...repos].sort());
    const withoutRepo = (a: Record<string, unknown>) => {
      const c = structuredClone(a.spec) as Record<string, unknown>;
      (at(c, "generators.0.git") as Record<string, unknown>).repoURL = "";
      (at(c, "template.spec.source") as Record<string, unknown>).repoURL = "";
      return c;
    };
    expect(withoutRepo(store)).toEqual(withoutRepo(control));
  });

  it("generates one Application per cluster directory, from the Namespace the broker keeps in each", () => {
    for (const a of appSets) {
      expect(at(a, "spec.goTemplate")).toBe(true);
      expect(at(a, "spec.goTemplateOptions")).toEqual(["missingkey=error"]);
      // The generator's glob is the broker's namespace.yaml path with the cluster id as `*`.
      expect(at(a, "spec.generators.0.git.files")).toEqual([{ path: clusterNamespacePath("local").replace("/local/", "/*/") }]);
      expect(at(a, "spec.generators.0.git.revision")).toBe("main");
      expect(at(a, "spec.template.spec.source.targetRevision")).toBe("main");
      expect(at(a, "spec.template.spec.source.directory")).toEqual({ recurse: true });
      expect(at(a, "spec.template.spec.syncPolicy.automated")).toEqual({ prune: true, selfHeal: true });
      // No PruneLast: one refused manifest must not hold back the other instances' deletions.
      expect(at(a, "spec.template.spec.syncPolicy.syncOptions")).toEqual(["CreateNamespace=false", "ApplyOutOfSyncOnly=true"]);
      // Each retry of a failed sync takes the newest commit, one backoff step (at most a minute) later.
      expect(at(a, "spec.template.spec.syncPolicy.retry")).toEqual({ limit: 5, refresh: true, backoff: { duration: "10s", factor: 2, maxDuration: "1m" } });
      expect(at(a, "spec.syncPolicy.preserveResourcesOnDeletion")).toBe(true);
    }
  });

  it("renders, for a cluster directory of each repository, an Application Argo CD's CRD accepts, that refreshes only on its own directory", () => {
    const applications = validators.get("argoproj.io/v1alpha1 Application")!;
    for (const [appSet, clusterId, namespace] of [[control, "local", "gitops-broker-instances"], [store, "eu-prod-1", "pg-eu"]] as const) {
      const app = applicationFor(appSet, clusterId, namespace);
      expect(applications(app), clusterId).toEqual([]);
      expect(at(app, "metadata.name")).toBe(`gitops-broker-${clusterId}`);
      // manifest-generate-paths: an absolute path (leading /) in the repository, the cluster's directory.
      expect(at(app, "metadata.annotations")).toEqual({ "argocd.argoproj.io/manifest-generate-paths": `/${clusterDir(clusterId)}` });
      expect(at(app, "spec.source.path")).toBe(clusterDir(clusterId));
      expect(at(app, "spec.source.repoURL")).toBe(at(appSet, "spec.generators.0.git.repoURL"));
      expect(at(app, "spec.destination")).toEqual({ name: clusterId, namespace });
      expect(at(app, "spec.project")).toBe(named(project));
    }
    // The project admits the control repository's cluster as the example registers it.
    expect(at(project, "spec.destinations")).toContainEqual(at(applicationFor(control, "local", "gitops-broker-instances"), "spec.destination"));
  });

  it("admits Namespace as the only cluster-scoped kind", () => {
    expect(at(project, "spec.clusterResourceWhitelist")).toEqual([{ group: "", kind: "Namespace" }]);
    expect(at(project, "spec.namespaceResourceWhitelist")).toEqual([{ group: "*", kind: "*" }]);
  });
});

describe("Flux example", () => {
  const sources = all("GitRepository", "flux/gitrepository.yaml#");
  const generators = all("ArtifactGenerator");
  const receiver = only("Receiver");
  const local = only("Kustomization", "flux/kustomization-local.yaml#");
  const remote = only("Kustomization", "flux/kustomization-local.yaml (commented");
  const sparseSource = only("GitRepository", "flux/sparse-checkout.yaml#");
  const sparseKustomization = only("Kustomization", "flux/sparse-checkout.yaml#");

  /** The paths of `paths` that Flux leaves out of an artifact with this `spec.ignore`, as git itself reads the same .gitignore rules. */
  async function ignoredBy(ignore: string, paths: string[]): Promise<string[]> {
    const dir = await createTempDir("flux-ignore-");
    await run("git", ["init", "-q", dir]);
    await writeFile(path.join(dir, ".gitignore"), ignore);
    // Exit status 1: none of them is ignored.
    const child = execFile("git", ["-C", dir, "check-ignore", "--no-index", "--stdin"], { encoding: "utf8" });
    let out = "";
    child.stdout!.on("data", (d: string) => (out += d));
    child.stdin!.end(`${paths.join("\n")}\n`);
    const code = await new Promise<number | null>((resolve, reject) => child.once("error", reject).once("close", resolve));
    if (code !== 0 && code !== 1) throw new Error(`git check-ignore exited with ${String(code)}`);
    return out.split("\n").filter(Boolean);
  }

  const REPOSITORY_PATHS = [
    "catalog/postgresql/service.yaml",
    "registry/clusters/local.yaml",
    "instances/ab/abc/record.yaml",
    "README.md",
    clusterNamespacePath("local"),
    `${clusterDir("local")}/instances/ab/abc/postgresql.yaml`,
    clusterNamespacePath("eu-prod-1"),
  ];

  it("has one GitRepository per repository, the ones the Argo CD example delivers, each archiving clusters/ only", async () => {
    const delivered = all("ApplicationSet").map((a) => String(at(a, "spec.generators.0.git.repoURL")));
    expect(sources.map((s) => String(at(s, "spec.url"))).sort()).toEqual(delivered.sort());
    for (const s of sources) {
      expect(at(s, "spec.ref")).toEqual({ branch: "main" });
      expect(at(s, "spec.secretRef.name")).toEqual(expect.any(String));
      expect(await ignoredBy(String(at(s, "spec.ignore")), REPOSITORY_PATHS)).toEqual(REPOSITORY_PATHS.filter((p) => !p.startsWith("clusters/")));
    }
    expect(new Set(sources.map((s) => at(s, "spec.secretRef.name"))).size).toBe(sources.length);
  });

  it("cuts, per repository, one artifact per cluster holding that cluster's directory, which its Kustomization applies", () => {
    expect(generators.map((g) => at(g, "spec.sources.0.name"))).toEqual(sources.map(named));
    const artifacts = new Map<string, { source: string; from: string }>();
    for (const g of generators) {
      const [source, ...others] = at(g, "spec.sources") as { alias: string; kind: string; name: string }[];
      expect(others).toEqual([]);
      expect(source!.kind).toBe("GitRepository");
      for (const a of at(g, "spec.artifacts") as { name: string; originRevision: string; copy: { from: string; to: string }[] }[]) {
        expect(a.originRevision).toBe(`@${source!.alias}`);
        expect(a.copy).toHaveLength(1);
        artifacts.set(a.name, { source: source!.name, from: a.copy[0]!.from });
        expect(a.copy[0]!.to).toBe("@artifact/");
      }
    }
    for (const [k, cluster, source] of [[local, "local", "gitops-broker"], [remote, "eu-prod-1", "gitops-broker-store-eu"]] as const) {
      const ref = at(k, "spec.sourceRef") as { kind: string; name: string };
      expect(ref).toEqual({ kind: "ExternalArtifact", name: `gitops-broker-${cluster}` });
      // `dir/**` copies what is below dir to the artifact's root, where the Kustomization reads.
      expect(artifacts.get(ref.name)).toEqual({ source, from: `@${source === "gitops-broker" ? "control" : "store"}/${clusterDir(cluster)}/**` });
      expect(at(k, "spec.path")).toBe("./");
      expect(at(k, "spec.prune")).toBe(true);
      expect(at(k, "spec.wait")).toBe(true);
      expect(at(k, "spec.timeout")).toEqual(expect.any(String));
      expect(at(k, "metadata.namespace")).toBe("flux-system");
    }
    for (const g of generators) expect(at(g, "metadata.namespace")).toBe("flux-system");
    expect(at(local, "spec.kubeConfig")).toBeUndefined();
    expect(at(remote, "spec.kubeConfig.secretRef.name")).toBe("eu-prod-1-kubeconfig");
    // The broker's encrypted Secrets (ADR 0007) are decrypted with the cluster's age identity.
    expect(at(remote, "spec.decryption")).toEqual({ provider: "sops", secretRef: { name: "sops-age" } });
  });

  it("without source-watcher: a GitRepository per cluster checking out and archiving clusters/<id>/ only", async () => {
    expect(at(sparseSource, "spec.sparseCheckout")).toEqual([clusterDir("local")]);
    expect(at(sparseSource, "spec.url")).toBe(at(sources[0], "spec.url"));
    expect(await ignoredBy(String(at(sparseSource, "spec.ignore")), REPOSITORY_PATHS)).toEqual(REPOSITORY_PATHS.filter((p) => !p.startsWith(`${clusterDir("local")}/`)));
    expect(at(sparseKustomization, "spec.sourceRef")).toEqual({ kind: "GitRepository", name: named(sparseSource) });
    expect(at(sparseKustomization, "spec.path")).toBe(`./${clusterDir("local")}`);
    expect(named(sparseKustomization)).toBe(named(local));
  });

  it("refreshes every repository's GitRepository on GitHub push events", () => {
    expect(at(receiver, "spec.type")).toBe("github");
    expect(at(receiver, "spec.events")).toContain("push");
    expect(at(receiver, "spec.resources")).toEqual(sources.map((s) => ({ apiVersion: at(s, "apiVersion"), kind: "GitRepository", name: named(s) })));
  });
});
