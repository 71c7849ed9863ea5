import * as fs from "node:fs/promises";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { tempDirTree, type TempDirTree } from "../../test/support/dir-tree.js";
import { loadClusters } from "./index.js";

const SF = fileURLToPath(new URL("./testdata/service-fabrik/", import.meta.url));
const EXAMPLE_LOCAL = fileURLToPath(new URL("../../examples/registry/clusters/local.yaml", import.meta.url));

let repo: TempDirTree;
beforeEach(async () => {
  repo = await tempDirTree("clusters-");
});
afterEach(async () => {
  await repo.remove();
});

const cluster = (name: string, spec?: Record<string, unknown>) =>
  JSON.stringify({ apiVersion: "gitops-broker.io/v1alpha1", kind: "Cluster", metadata: { name }, ...(spec ? { spec } : {}) });

describe("loadClusters", () => {
  it("loads the example cluster `local`", async () => {
    await repo.write({ "registry/clusters/local.yaml": await fs.readFile(EXAMPLE_LOCAL) });
    const { clusters, problems } = await loadClusters(repo.tree);

    expect(problems).toEqual([]);
    expect(clusters).toEqual([
      {
        id: "local",
        namespace: "gitops-broker-instances",
        schedulable: true,
        labels: { environment: "development" },
        file: "registry/clusters/local.yaml",
        raw: expect.objectContaining({ kind: "Cluster" }),
      },
    ]);
  });

  it("loads a Service Fabrik SFCluster unchanged: its kubeconfig is the referenced Secret", async () => {
    await repo.write({ "registry/clusters/1.yaml": await fs.readFile(path.join(SF, "sfcluster-1.yaml")) });
    const { clusters, problems } = await loadClusters(repo.tree);

    expect(problems).toEqual([]);
    expect(clusters).toEqual([
      {
        id: "1",
        namespace: "gitops-broker-instances",
        schedulable: true,
        labels: {},
        kubeconfig: { secretRef: { name: "1-kubeconfig", key: "kubeconfig", namespace: "interoperator" } },
        file: "registry/clusters/1.yaml",
        raw: expect.objectContaining({ kind: "SFCluster" }),
      },
    ]);
  });

  it("applies defaults and reads every field of our Cluster", async () => {
    await repo.write({
      "registry/clusters/b.yaml": cluster("b"),
      "registry/clusters/a.yml": JSON.stringify({
        apiVersion: "gitops-broker.io/v1alpha1",
        kind: "Cluster",
        metadata: { name: "a", labels: { region: "eu", tier: "x" } },
        spec: {
          namespace: "dbs",
          schedulable: false,
          labels: { tier: "gold" },
          capacity: { maxInstances: 40 },
          kubeconfig: { secretRef: { name: "a-kubeconfig", namespace: "gitops-broker" } },
        },
      }),
    });
    const { clusters, problems } = await loadClusters(repo.tree);

    expect(problems).toEqual([]);
    expect(clusters.map(({ raw: _raw, ...c }) => c)).toEqual([
      {
        id: "a",
        namespace: "dbs",
        schedulable: false,
        labels: { region: "eu", tier: "gold" },
        capacity: { maxInstances: 40 },
        kubeconfig: { secretRef: { name: "a-kubeconfig", key: "kubeconfig", namespace: "gitops-broker" } },
        file: "registry/clusters/a.yml",
      },
      { id: "b", namespace: "gitops-broker-instances", schedulable: true, labels: {}, file: "registry/clusters/b.yaml" },
    ]);
  });

  it("reports invalid entries by file and path and keeps the valid ones", async () => {
    await repo.write({
      "registry/clusters/ok.yaml": cluster("ok", { kubeconfig: { path: "/etc/gitops-broker/ok.kubeconfig" } }),
      "registry/clusters/Bad.yaml": cluster("Bad"),
      "registry/clusters/ns.yaml": cluster("ns", { namespace: "Not_A_Label", kubeconfig: { path: "/k", secretRef: { name: "s" } } }),
      "registry/clusters/other.yaml": cluster("renamed"),
      "registry/clusters/secret.yaml": await fs.readFile(path.join(SF, "sfcluster-1-kubeconfig-secret.yaml")),
      "registry/clusters/two.yaml": `${cluster("two")}\n---\n${cluster("two")}\n`,
    });
    const { clusters, problems } = await loadClusters(repo.tree);

    const dns = "must be a DNS-1123 label (lowercase letters, digits and '-', at most 63 characters)";
    expect(problems).toEqual([
      { file: "registry/clusters/Bad.yaml", path: "metadata.name", message: dns },
      { file: "registry/clusters/ns.yaml", path: "spec.namespace", message: dns },
      { file: "registry/clusters/ns.yaml", path: "spec.kubeconfig", message: "must have exactly one of 'path', 'secretRef'" },
      { file: "registry/clusters/other.yaml", path: "metadata.name", message: "must equal the file name (other): the file is registry/clusters/<cluster-id>.yaml" },
      { file: "registry/clusters/secret.yaml", path: "kind", message: '"Secret" is not a cluster registry entry (expected Cluster or SFCluster)' },
      { file: "registry/clusters/two.yaml", path: "", message: "must hold exactly one cluster document" },
    ]);
    expect(clusters.map((c) => [c.id, c.kubeconfig])).toEqual([["ok", { path: "/etc/gitops-broker/ok.kubeconfig" }]]);
  });

  it("reads the helm capabilities a Cluster declares (kubeVersion, apiVersions) and rejects a malformed version", async () => {
    await repo.write({
      "registry/clusters/both.yaml": cluster("both", { kubeVersion: "v1.30.2", apiVersions: ["monitoring.coreos.com/v1", "x.io/v1/Thing"] }),
      "registry/clusters/version.yaml": cluster("version", { kubeVersion: "1.29" }),
      "registry/clusters/none.yaml": cluster("none"),
      "registry/clusters/bad.yaml": cluster("bad", { kubeVersion: "latest", apiVersions: [""] }),
    });
    const { clusters, problems } = await loadClusters(repo.tree);
    expect(clusters.map((c) => [c.id, c.capabilities])).toEqual([
      ["both", { kubeVersion: "v1.30.2", apiVersions: ["monitoring.coreos.com/v1", "x.io/v1/Thing"] }],
      ["none", undefined],
      ["version", { kubeVersion: "1.29" }],
    ]);
    expect(problems).toEqual([
      { file: "registry/clusters/bad.yaml", path: "spec.kubeVersion", message: "must be a Kubernetes version (major.minor at least, e.g. v1.30.2)" },
      { file: "registry/clusters/bad.yaml", path: "spec.apiVersions[0]", message: "must be a non-empty string" },
    ]);
  });

  it("reads the encryption declaration (SOPS age recipients) and rejects a malformed recipient", async () => {
    const recipient = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p";
    await repo.write({
      "registry/clusters/enc.yaml": cluster("enc", { encryption: { sops: { age: [recipient] } } }),
      "registry/clusters/bad.yaml": cluster("bad", { encryption: { sops: { age: ["not-a-key"] } } }),
    });
    const { clusters, problems } = await loadClusters(repo.tree);
    expect(clusters.map((c) => [c.id, c.encryption])).toEqual([["enc", { sops: { age: [recipient] } }]]);
    expect(problems).toEqual([
      { file: "registry/clusters/bad.yaml", path: "spec.encryption.sops.age[0]", message: "must be an age recipient (age1...)" },
    ]);
  });

  it("reads spec.sync.nudge with its defaults and reports what Argo CD or Flux could not take", async () => {
    const sync = (kind: string, nudge: unknown) => ({ sync: { kind, name: "app", nudge } });
    await repo.write({
      "registry/clusters/ann.yaml": cluster("ann", sync("flux", { via: "annotation" })),
      "registry/clusters/argo.yaml": cluster("argo", sync("argocd", { via: "webhook", url: "https://argocd.example.com/api/webhook", secret: { secretRef: { name: "argocd-webhook" } } })),
      "registry/clusters/fluxgen.yaml": cluster("fluxgen", sync("flux", { via: "webhook", url: "http://notification-controller.flux-system/hook/abc", minIntervalSeconds: 0.5 })),
      "registry/clusters/fluxhmac.yaml": cluster("fluxhmac", sync("flux", { via: "webhook", url: "http://nc/hook/abc", secret: { path: "/run/secrets/token" }, repoURL: "https://git.example.com/org/gitops.git" })),
      "registry/clusters/nourl.yaml": cluster("nourl", sync("flux", { via: "webhook" })),
      "registry/clusters/annurl.yaml": cluster("annurl", sync("argocd", { via: "annotation", url: "http://x/hook" })),
      "registry/clusters/argogeneric.yaml": cluster("argogeneric", sync("argocd", { via: "webhook", url: "http://x/api/webhook", payload: "generic" })),
      "registry/clusters/hmacnosecret.yaml": cluster("hmacnosecret", sync("flux", { via: "webhook", url: "http://x/hook/a", payload: "generic-hmac" })),
      "registry/clusters/inline.yaml": cluster("inline", sync("flux", { via: "webhook", url: "http://x/hook/a", secret: { value: "s3cret" } })),
    });
    const { clusters, problems } = await loadClusters(repo.tree);
    expect(Object.fromEntries(clusters.map((c) => [c.id, c.sync?.nudge]))).toEqual({
      ann: { via: "annotation", minIntervalMs: 1000 },
      argo: {
        via: "webhook",
        url: "https://argocd.example.com/api/webhook",
        payload: "github",
        secret: { secretRef: { name: "argocd-webhook", key: "token" } },
        minIntervalMs: 1000,
      },
      fluxgen: { via: "webhook", url: "http://notification-controller.flux-system/hook/abc", payload: "generic", minIntervalMs: 500 },
      fluxhmac: {
        via: "webhook",
        url: "http://nc/hook/abc",
        payload: "generic-hmac",
        secret: { path: "/run/secrets/token" },
        repoURL: "https://git.example.com/org/gitops.git",
        minIntervalMs: 1000,
      },
    });
    expect(problems.map((p) => [p.file.replace(/^registry\/clusters\//, ""), p.path, p.message])).toEqual([
      ["annurl.yaml", "spec.sync.nudge.url", "is for via: webhook (via: annotation sets an annotation through the kubeconfig)"],
      ["argogeneric.yaml", "spec.sync.nudge.payload", 'Argo CD\'s webhook takes a Git host\'s push event: "github", not "generic"'],
      ["hmacnosecret.yaml", "spec.sync.nudge.secret", "payload generic-hmac signs with the Receiver's token: set secret (a path or a secretRef)"],
      ["inline.yaml", "spec.sync.nudge.secret", "must have exactly one of 'path', 'secretRef'"],
      ["inline.yaml", "spec.sync.nudge.secret.value", "is not allowed"],
      ["nourl.yaml", "spec.sync.nudge.url", "is required with via: webhook"],
    ]);
  });

  it("reports a cluster id declared by two files and leaves both out", async () => {
    await repo.write({ "registry/clusters/x.yaml": cluster("x"), "registry/clusters/x.yml": cluster("x") });
    const { clusters, problems } = await loadClusters(repo.tree);

    expect(problems).toEqual([
      { file: "registry/clusters/x.yaml", path: "metadata.name", message: 'duplicate cluster id "x" (also in registry/clusters/x.yml)' },
      { file: "registry/clusters/x.yml", path: "metadata.name", message: 'duplicate cluster id "x" (also in registry/clusters/x.yaml)' },
    ]);
    expect(clusters).toEqual([]);
  });

  it("returns no clusters when the registry directory is missing", async () => {
    expect(await loadClusters(repo.tree)).toEqual({ clusters: [], problems: [] });
  });
});
