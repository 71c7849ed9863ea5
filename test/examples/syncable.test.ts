import fs from "node:fs/promises";
import path from "node:path";
import { generateIdentity, identityToRecipient } from "age-encryption";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import {
  LABEL_BINDING,
  LABEL_INSTANCE,
  LABEL_MANAGED_BY,
  bindingManifestDir,
  clusterDir,
  clusterNamespacePath,
  instanceManifestDir,
  keyOf,
  namespaceManifest,
  sensitiveSecretPath,
} from "../../src/repo/index.js";
import { encryptYaml } from "../../src/sops/index.js";
import { writeFiles } from "../support/dir-tree.js";
import { createTempDir } from "../support/git-fixtures.js";
import { assertSyncableClusterDir, commandExists, kustomizeClusterDir, readClusterDirObjects } from "../support/syncable.js";

/**
 * A cluster directory written the way the broker writes it (layout paths from src/repo, the
 * Namespace from the broker) syncs as is: with Argo CD's directory recurse and with Flux's
 * generated kustomization.yaml, emulated with `kubectl kustomize`.
 */

const hasKubectl = await commandExists("kubectl");

const CLUSTER = "local";
const NAMESPACE = "gitops-broker-instances";
const INSTANCE_ID = "6f0c2d4e-8b1a-4c3d-9e5f-0a1b2c3d4e5f";
const BINDING_ID = "binding/with/slashes"; // not a DNS label: stored under its sha224 key
const instanceKey = keyOf(INSTANCE_ID);
const bindingKey = keyOf(BINDING_ID);

const yaml = (o: unknown) => stringify(o, { lineWidth: 0 });

function postgresql(): Record<string, unknown> {
  return {
    apiVersion: "acid.zalan.do/v1",
    kind: "postgresql",
    metadata: {
      name: `pg-${instanceKey}`,
      namespace: NAMESPACE,
      labels: { [LABEL_MANAGED_BY]: "gitops-broker", [LABEL_INSTANCE]: instanceKey },
    },
    spec: {
      teamId: "pg",
      numberOfInstances: 1,
      postgresql: { version: "16" },
      volume: { size: "5Gi" },
      users: { app_owner: ["createdb"], [`b-${bindingKey.slice(0, 8)}`]: [] },
    },
  };
}

function bindingConfigMap(): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: `binding-${bindingKey.slice(0, 16)}`,
      namespace: NAMESPACE,
      labels: { [LABEL_MANAGED_BY]: "gitops-broker", [LABEL_INSTANCE]: instanceKey, [LABEL_BINDING]: bindingKey },
    },
    data: { host: `pg-${instanceKey}.${NAMESPACE}.svc`, port: "5432" },
  };
}

const SEALED = `${instanceKey}-sensitive-op-1`;

/** A sensitive parameter as the broker seals it: a SOPS-encrypted Secret (ADR 0007). */
async function sealedSecret(): Promise<string> {
  const recipient = await identityToRecipient(await generateIdentity());
  const secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: SEALED, namespace: NAMESPACE, labels: { [LABEL_MANAGED_BY]: "gitops-broker", [LABEL_INSTANCE]: instanceKey } },
    type: "Opaque",
    stringData: { adminPassword: "hunter2" },
  };
  return encryptYaml(secret, { recipients: [recipient], now: new Date("2026-01-01T00:00:00Z") });
}

/** clusters/local/ as the broker writes it: repo-relative paths → file contents. */
async function brokerClusterFiles(): Promise<Record<string, string>> {
  const pg = postgresql();
  const cm = bindingConfigMap();
  return {
    [clusterNamespacePath(CLUSTER)]: namespaceManifest(NAMESPACE),
    [`${instanceManifestDir(CLUSTER, INSTANCE_ID)}/postgresql-${(pg.metadata as { name: string }).name}.yaml`]: yaml(pg),
    [sensitiveSecretPath(instanceManifestDir(CLUSTER, INSTANCE_ID), SEALED)]: await sealedSecret(),
    [`${bindingManifestDir(CLUSTER, INSTANCE_ID, BINDING_ID)}/configmap-${(cm.metadata as { name: string }).name}.yaml`]: yaml(cm),
  };
}

let repo: string;
let dir: string;

beforeEach(async () => {
  repo = await createTempDir("syncable-");
  dir = path.join(repo, clusterDir(CLUSTER));
  await writeFiles(repo, await brokerClusterFiles());
});

afterEach(async () => {
  await fs.rm(repo, { recursive: true, force: true });
});

describe("a broker-written cluster directory", () => {
  it("is laid out as clusters/<id>/namespace.yaml and instances/<ab>/<cd>/<key>/[bindings/<bkey>/|sensitive/]", async () => {
    const files = (await fs.readdir(dir, { recursive: true, withFileTypes: true }))
      .filter((e) => e.isFile())
      .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
      .sort();
    expect(files).toEqual([
      expect.stringMatching(new RegExp(`^instances/[0-9a-f]{2}/[0-9a-f]{2}/${instanceKey}/bindings/${bindingKey}/configmap-binding-[0-9a-f]{16}\\.yaml$`)),
      expect.stringMatching(new RegExp(`^instances/[0-9a-f]{2}/[0-9a-f]{2}/${instanceKey}/postgresql-pg-${instanceKey}\\.yaml$`)),
      expect.stringMatching(new RegExp(`^instances/[0-9a-f]{2}/[0-9a-f]{2}/${instanceKey}/sensitive/secret-${SEALED}\\.yaml$`)),
      "namespace.yaml",
    ]);
  });

  it("reads, as an Argo CD directory source with recurse, to one object per file", async () => {
    const objects = await readClusterDirObjects(dir);
    expect(objects.map((o) => [o.file.replace(/^instances\/..\/..\//, "instances/*/*/"), o.id])).toEqual([
      [`instances/*/*/${instanceKey}/bindings/${bindingKey}/configmap-binding-${bindingKey.slice(0, 16)}.yaml`, `/ConfigMap/${NAMESPACE}/binding-${bindingKey.slice(0, 16)}`],
      [`instances/*/*/${instanceKey}/postgresql-pg-${instanceKey}.yaml`, `acid.zalan.do/postgresql/${NAMESPACE}/pg-${instanceKey}`],
      [`instances/*/*/${instanceKey}/sensitive/secret-${SEALED}.yaml`, `/Secret/${NAMESPACE}/${SEALED}`],
      ["namespace.yaml", `/Namespace//${NAMESPACE}`],
    ]);
    expect(objects[1]?.object).toEqual(postgresql());
  });

  it.skipIf(!hasKubectl)("builds, with the kustomization.yaml Flux generates, to every object exactly once", async () => {
    await expect(assertSyncableClusterDir(dir)).resolves.toEqual({ objects: 4 });
    const built = await kustomizeClusterDir(dir);
    expect(built).toHaveLength(4);
    expect(built).toContainEqual(postgresql());
    expect(built).toContainEqual(bindingConfigMap());
    // kustomize passes the encrypted Secret through, `sops` metadata included, for Flux to decrypt.
    const sealed = parse(await fs.readFile(path.join(repo, sensitiveSecretPath(instanceManifestDir(CLUSTER, INSTANCE_ID), SEALED)), "utf8")) as unknown;
    expect(built).toContainEqual(sealed);
    // The generated kustomization.yaml went to a copy: the directory is as the broker left it.
    await expect(fs.access(path.join(dir, "kustomization.yaml"))).rejects.toThrow(/ENOENT/);
  });
});

describe("a cluster directory that does not sync", () => {
  const instanceDir = () => path.join(repo, instanceManifestDir(CLUSTER, INSTANCE_ID));

  it.each([
    ["two objects in one file", "extra.yaml", `${yaml(bindingConfigMap())}---\n${yaml(postgresql())}`, /extra\.yaml: holds 2 documents/],
    ["an empty file", "empty.yaml", "# nothing\n", /empty\.yaml: holds 0 documents/],
    ["an object without a name", "nameless.yaml", yaml({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: NAMESPACE } }), /nameless\.yaml: metadata\.name missing/],
    ["an object defined twice", "zz-copy.yaml", yaml(postgresql()), new RegExp(`zz-copy\\.yaml: acid\\.zalan\\.do/postgresql/${NAMESPACE}/pg-${instanceKey} is already defined in instances/`)],
    ["invalid YAML", "broken.yaml", "kind: [", /broken\.yaml: is not valid YAML/],
    ["a core object that does not validate", "bad-port.yaml", yaml({ apiVersion: "v1", kind: "Service", metadata: { name: "s", namespace: NAMESPACE }, spec: { ports: [{ port: "x" }] } }), /bad-port\.yaml: does not validate/],
    ["a kustomization file", "kustomization.yaml", yaml({ resources: [] }), /kustomization\.yaml: a kustomization file/],
    ["a file that is not a manifest", "README.md", "notes\n", /README\.md: not a \*\.yaml manifest/],
  ])("rejects %s", async (_what, name, content, message) => {
    await fs.writeFile(path.join(instanceDir(), name), content);
    await expect(readClusterDirObjects(dir)).rejects.toThrow(message);
    await expect(assertSyncableClusterDir(dir)).rejects.toThrow(message);
  });

  it("rejects a directory without namespace.yaml (Argo CD would refuse to prune its last instance)", async () => {
    await fs.rm(path.join(dir, "namespace.yaml"));
    await expect(readClusterDirObjects(dir)).rejects.toThrow(/namespace\.yaml must hold the v1 Namespace/);
  });

  it("lists every problem, not only the first", async () => {
    await fs.writeFile(path.join(instanceDir(), "a.yaml"), "kind: [");
    await fs.writeFile(path.join(instanceDir(), "b.yaml"), "");
    await expect(readClusterDirObjects(dir)).rejects.toThrow(/a\.yaml: is not valid YAML[\s\S]*b\.yaml: holds 0 documents/);
  });

  it.skipIf(!hasKubectl)("fails the kustomize build too when an object is defined twice", async () => {
    await fs.writeFile(path.join(instanceDir(), "copy.yaml"), yaml(postgresql()));
    await expect(kustomizeClusterDir(dir)).rejects.toThrow(/kubectl kustomize .* failed: .*(already registered|conflict)/s);
  });
});
