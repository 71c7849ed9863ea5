import fs from "node:fs/promises";
import path from "node:path";
import { decryptSops } from "sops-age";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PassThrough } from "node:stream";
import { parse, stringify } from "yaml";
import { runMove } from "../../src/cli/admin-commands.js";
import {
  bindingManifestDir,
  bindingRecordPath,
  dirTreeReader,
  instanceManifestDir,
  instanceRecordPath,
  keyOf,
  sensitiveSecretPath,
  type BindingRecord,
  type InstanceRecord,
} from "../../src/repo/index.js";
import { formatValidationProblem, validateRepo } from "../../src/validate/index.js";
import { ageDecrypt, ageKeygen, type AgeIdentity } from "../support/age.js";
import { startHarness, type Harness } from "../support/broker-harness.js";
import { allBlobs } from "../support/git-objects.js";
import { createTempDir, git, readRemoteFile } from "../support/git-fixtures.js";
import { assertSyncableClusterDir, commandExists } from "../support/syncable.js";
import { provisionBody, remoteFiles, remoteHead, samplePlans, type SamplePlans } from "./helpers.js";
import { filesWith, withSensitiveSchemas } from "./reconcile-support.js";

/**
 * Sensitive parameters on a cluster that declares `spec.encryption.sops.age` (ADR 0007), through
 * the real broker and a real remote: they are committed only as SOPS-encrypted Secrets that the
 * cluster's age identity decrypts (sops-age, and the age CLI for the data key), never in a record,
 * and the cluster directory still validates and builds with kustomize.
 */

const hasKubectl = await commandExists("kubectl");

let h: Harness;
let plans: SamplePlans;
let keys: string;
let cluster: AgeIdentity;
let backup: AgeIdentity;

const PLAINTEXTS = ["hunter2-initial", "correct-horse-battery", "-----BEGIN KEY----- tls-one", "-----BEGIN KEY----- tls-two", "t0k3n-for-b1"];

beforeAll(async () => {
  keys = await createTempDir("gitops-broker-age-");
  cluster = await ageKeygen(keys, "cluster");
  backup = await ageKeygen(keys, "backup");
  const files = await filesWith(
    ({ small }) => {
      withSensitiveSchemas(small, {
        adminPassword: { type: "string", writeOnly: true },
        tls: { type: "object", properties: { key: { type: "string", format: "password" }, cert: { type: "string" } } },
        "bad key": { type: "string", writeOnly: true },
      });
      // A plan wires the encrypted Secret into its objects through `sensitive`.
      const provision = small.spec.templates.find((t: { action: string }) => t.action === "provision");
      provision.content += [
        "---",
        "apiVersion: apps/v1",
        "kind: Deployment",
        "metadata:",
        "  name: pg-{{instance.metadata.name}}-admin",
        "spec:",
        "  selector:",
        "    matchLabels: {app: pg-admin}",
        "  template:",
        "    metadata:",
        "      labels: {app: pg-admin}",
        "    spec:",
        "      containers:",
        "      - name: admin",
        "        image: postgres:16",
        "        env:",
        "        - name: PGHOST",
        "          value: pg-{{instance.metadata.name}}",
        "        {{#each sensitive}}",
        "        - name: SENSITIVE_{{@index}}",
        "          valueFrom:",
        "            secretKeyRef:",
        "              name: {{name}}",
        "              key: {{key}}",
        "        {{/each}}",
        "",
      ].join("\n");
    },
    [
      { id: "local", spec: { encryption: { sops: { age: [cluster.recipient, backup.recipient] } } } },
      // Only a target for `move`: drained, so every instance is placed on local.
      { id: "other", schedulable: false, spec: { encryption: { sops: { age: [backup.recipient] } } } },
    ],
  );
  h = await startHarness({ files });
  plans = await samplePlans(h.osb);
});
afterAll(async () => {
  await h?.close();
  if (keys) await fs.rm(keys, { recursive: true, force: true });
});

const small = (parameters: Record<string, unknown>) => provisionBody(plans.serviceId, plans.small.id, { parameters });
const instanceDir = instanceManifestDir("local", "enc-1");

async function record<T>(file: string): Promise<T> {
  return parse((await readRemoteFile(h.remoteDir, "main", file)) ?? "null") as T;
}

/** The encrypted Secret `name` of `dir` on the remote, decrypted with the cluster's identity. */
async function decrypted(dir: string, name: string, identity = cluster): Promise<{ metadata: Record<string, unknown>; stringData: Record<string, string> }> {
  const text = await readRemoteFile(h.remoteDir, "main", sensitiveSecretPath(dir, name));
  if (text === null) throw new Error(`no encrypted Secret ${name} in ${dir}`);
  return (await decryptSops(text, { secretKey: identity.secretKey, fileType: "yaml" })) as never;
}

/** A fresh clone of the remote. */
async function checkout(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(keys, "checkout-"));
  await git(["clone", "--quiet", h.remoteDir, dir]);
  return dir;
}

async function sealedFiles(dir: string): Promise<string[]> {
  return (await remoteFiles(h.remoteDir, `${dir}/sensitive/`)).map((f) => path.posix.basename(f));
}

describe("sensitive parameters on a cluster that declares SOPS encryption", () => {
  let first: string;

  it("provision commits them only as an encrypted Secret, named after the instance and the operation", async () => {
    const res = await h.osb.provision("enc-1", small({ version: "16", adminPassword: "hunter2-initial", tls: { key: PLAINTEXTS[2], cert: "public" } }));
    expect(res.status).toBe(201);

    const inst = await record<InstanceRecord>(instanceRecordPath("enc-1"));
    expect(inst.spec.parameters).toEqual({ version: "16", tls: { cert: "public" } });
    first = inst.spec.sensitiveParameters!.adminPassword!;
    expect(first).toMatch(/^enc-1-sensitive-[a-z0-9-]+$/);
    expect(first).toBe(`enc-1-sensitive-${keyOf(inst.status.operations[0]!.id)}`);
    expect(inst.spec.sensitiveParameters).toEqual({ adminPassword: first, "tls.key": first });

    const secret = await decrypted(instanceDir, first);
    expect(secret.stringData).toEqual({ adminPassword: "hunter2-initial", "tls.key": PLAINTEXTS[2] });
    expect(secret.metadata).toEqual({
      name: first,
      namespace: "gitops-broker-instances",
      labels: { "app.kubernetes.io/managed-by": "gitops-broker", "gitops-broker.io/instance-id": "enc-1" },
    });
    // Every recipient the cluster declares can decrypt; the data key unwraps with the age CLI too.
    expect((await decrypted(instanceDir, first, backup)).stringData.adminPassword).toBe("hunter2-initial");
    const raw = parse((await readRemoteFile(h.remoteDir, "main", sensitiveSecretPath(instanceDir, first)))!) as { sops: { age: { enc: string }[] } };
    expect(await ageDecrypt(keys, cluster, raw.sops.age[0]!.enc)).toHaveLength(32);

    // The template referenced the Secret by name and key.
    const deployment = parse((await readRemoteFile(h.remoteDir, "main", `${instanceDir}/deployment-pg-enc-1-admin.yaml`))!) as {
      spec: { template: { spec: { containers: { env: unknown[] }[] } } };
    };
    expect(deployment.spec.template.spec.containers[0]!.env).toEqual([
      { name: "PGHOST", value: "pg-enc-1" },
      { name: "SENSITIVE_0", valueFrom: { secretKeyRef: { name: first, key: "adminPassword" } } },
      { name: "SENSITIVE_1", valueFrom: { secretKeyRef: { name: first, key: "tls.key" } } },
    ]);
    expect((await h.osb.getInstance("enc-1")).body.parameters).toEqual({ version: "16", tls: { cert: "public" } });
  });

  it("a repeated provision with the same keys is identical (values cannot be compared), other keys conflict", async () => {
    expect((await h.osb.provision("enc-1", small({ version: "16", adminPassword: "whatever", tls: { key: "k", cert: "public" } }))).status).toBe(200);
    expect((await h.osb.provision("enc-1", small({ version: "16", tls: { key: "k", cert: "public" } }))).status).toBe(409);
  });

  it("update replaces the value it sends; the others stay in their Secret; a Secret no key names any more goes", async () => {
    expect((await h.osb.update("enc-1", { service_id: plans.serviceId, parameters: { adminPassword: "correct-horse-battery" } })).status).toBe(200);
    let refs = (await record<InstanceRecord>(instanceRecordPath("enc-1"))).spec.sensitiveParameters!;
    const second = refs.adminPassword!;
    expect(second).not.toBe(first);
    expect(refs).toEqual({ adminPassword: second, "tls.key": first });
    expect((await decrypted(instanceDir, second)).stringData).toEqual({ adminPassword: "correct-horse-battery" });
    expect((await decrypted(instanceDir, first)).stringData["tls.key"]).toBe(PLAINTEXTS[2]);

    // An update without sensitive values re-renders and keeps both Secrets as they are.
    const before = await sealedFiles(instanceDir);
    expect((await h.osb.update("enc-1", { service_id: plans.serviceId, parameters: { storageGB: 3 } })).status).toBe(200);
    expect(await sealedFiles(instanceDir)).toEqual(before);
    expect(before).toHaveLength(2);

    // Replacing `tls` (top-level) replaces tls.key: the first Secret is named by nothing any more.
    expect((await h.osb.update("enc-1", { service_id: plans.serviceId, parameters: { tls: { key: PLAINTEXTS[3] } } })).status).toBe(200);
    refs = (await record<InstanceRecord>(instanceRecordPath("enc-1"))).spec.sensitiveParameters!;
    const third = refs["tls.key"]!;
    expect(refs).toEqual({ adminPassword: second, "tls.key": third });
    expect(await sealedFiles(instanceDir)).toEqual([`secret-${second}.yaml`, `secret-${third}.yaml`].sort());
    expect((await decrypted(instanceDir, third)).stringData).toEqual({ "tls.key": PLAINTEXTS[3] });
    expect((await h.osb.getInstance("enc-1")).body.parameters).toEqual({ version: "16", storageGB: 3, tls: {} });
  });

  it("a parameter whose path cannot be a Secret key is refused with 400", async () => {
    const res = await h.osb.update("enc-1", { service_id: plans.serviceId, parameters: { "bad key": "x" } });
    expect({ status: res.status, description: res.body.description }).toEqual({
      status: 400,
      description: expect.stringMatching(/^parameters\["bad key"\] is marked writeOnly in plan small, but cannot be stored: it becomes the key "bad key" of an encrypted Secret/),
    });
  });

  it("bind seals the binding's values in the binding's directory; GET binding leaves them out", async () => {
    const res = await h.osb.bind("enc-1", "b-1", { service_id: plans.serviceId, plan_id: plans.small.id, parameters: { token: "t0k3n-for-b1", note: "n" } });
    expect(res.status).toBe(201);
    const binding = await record<BindingRecord>(bindingRecordPath("enc-1", "b-1"));
    expect(binding.spec.parameters).toEqual({ note: "n" });
    const name = binding.spec.sensitiveParameters!.token!;
    const dir = bindingManifestDir("local", "enc-1", "b-1");
    const secret = await decrypted(dir, name);
    expect(secret.stringData).toEqual({ token: "t0k3n-for-b1" });
    expect(secret.metadata.labels).toMatchObject({ "gitops-broker.io/binding-id": "b-1" });
    expect((await h.osb.getBinding("enc-1", "b-1")).body.parameters).toEqual({ note: "n" });
    // The instance's re-render on bind kept the instance's Secrets.
    expect(await sealedFiles(instanceDir)).toHaveLength(2);
  });

  it("leaves no plaintext in any blob or commit message of the remote's history", async () => {
    const blobs = await allBlobs(h.remoteDir);
    expect(blobs.length).toBeGreaterThan(10);
    const leaks = blobs.filter((b) => PLAINTEXTS.some((p) => b.data.includes(p))).map((b) => b.oid);
    expect(leaks).toEqual([]);
    const messages = await git(["log", "--all", "--format=%B"], h.remoteDir);
    expect(messages).toContain("bind postgresql/small instance enc-1 binding b-1");
    expect(PLAINTEXTS.filter((p) => messages.includes(p))).toEqual([]);
  });

  it("leaves a checkout that gitops-broker validate accepts (encrypted Secrets, no drift)", async () => {
    expect((await validateRepo(dirTreeReader(await checkout()))).map(formatValidationProblem)).toEqual([]);
  });

  it.skipIf(!hasKubectl)("leaves a cluster directory that builds with kustomize, the encrypted Secrets passed through", async () => {
    // namespace, postgresql + Deployment, two instance Secrets, the binding's Secret
    await expect(assertSyncableClusterDir(path.join(await checkout(), "clusters/local"))).resolves.toEqual({ objects: 6 });
  });

  it("an instance holding encrypted values is not moved to another cluster (nothing to re-encrypt them with)", async () => {
    const head = await remoteHead(h.remoteDir);
    const configFile = path.join(h.root, "cli.yaml");
    await fs.writeFile(configFile, stringify({ dataDir: path.join(h.root, "cli-data"), git: { remote: h.remoteUrl } }));
    const err = new PassThrough();
    const chunks: Buffer[] = [];
    err.on("data", (c: Buffer) => chunks.push(c));
    expect(await runMove(["enc-1", "other", "--yes", "--config", configFile], new PassThrough(), err)).toBe(1);
    expect(Buffer.concat(chunks).toString()).toMatch(/instance enc-1 holds sensitive parameters encrypted for cluster local; the broker cannot re-encrypt them for other/);
    expect(await remoteHead(h.remoteDir)).toBe(head);
  });

  it("unbind and deprovision remove the encrypted files with the rest", async () => {
    expect((await h.osb.unbind("enc-1", "b-1", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(200);
    expect(await remoteFiles(h.remoteDir, `${bindingManifestDir("local", "enc-1", "b-1")}/`)).toEqual([]);
    expect(await sealedFiles(instanceDir)).toHaveLength(2);
    expect((await h.osb.deprovision("enc-1", { service_id: plans.serviceId, plan_id: plans.small.id })).status).toBe(200);
    expect(await remoteFiles(h.remoteDir, `${instanceDir}/`)).toEqual([]);
  });
});
