import { createDecipheriv, createHash } from "node:crypto";
import fs from "node:fs/promises";
import { decryptSops } from "sops-age";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, parseDocument } from "yaml";
import { ageDecrypt, ageKeygen, type AgeIdentity } from "../../test/support/age.js";
import { createTempDir } from "../../test/support/git-fixtures.js";
import { ENCRYPTED_REGEX, SOPS_VERSION, encryptYaml, isEncryptedValue } from "./index.js";

/**
 * What encryptYaml writes is checked against implementations that are not this one: the
 * `sops-age` package decrypts it (its own AES-GCM and age), the real `age` CLI unwraps the data
 * key, and the values and the MAC are decrypted and recomputed here with node:crypto, following
 * getsops/sops (sops.go, aes/cipher.go). The sops binary itself cannot be installed on these
 * machines, so `sops -d` is not run.
 */

let dir: string;
let alice: AgeIdentity;
let bob: AgeIdentity;

const unwrapWithAgeCli = (enc: string, identity: AgeIdentity) => ageDecrypt(dir, identity, enc);

interface SopsMetadata {
  age: { recipient: string; enc: string }[];
  encrypted_regex: string;
  lastmodified: string;
  mac: string;
  version: string;
}

/** aes/cipher.go Decrypt, written again with node:crypto: the plaintext string and its type. */
function decryptValue(value: string, key: Buffer, additionalData: string): { plaintext: string; type: string } {
  const m = /^ENC\[AES256_GCM,data:(.*),iv:(.*),tag:(.*),type:(.*)\]$/.exec(value);
  if (!m) throw new Error(`not an encrypted value: ${value}`);
  const iv = Buffer.from(m[2]!, "base64");
  expect(iv).toHaveLength(32);
  const decipher = createDecipheriv("aes-256-gcm", key, iv);
  decipher.setAAD(Buffer.from(additionalData));
  decipher.setAuthTag(Buffer.from(m[3]!, "base64"));
  const plaintext = Buffer.concat([decipher.update(Buffer.from(m[1]!, "base64")), decipher.final()]).toString("utf8");
  return { plaintext, type: m[4]! };
}

/**
 * sops.go Tree.Decrypt + MAC check: walks the document (without `sops`) in file order, decrypts
 * what lies under a key matching the regex with the path as additional data, hashes every value
 * (encrypted or not, nulls left out) and compares with the stored MAC. Returns the plaintexts by path.
 */
function decryptTree(text: string, key: Buffer): Map<string, string> {
  const { sops, ...data } = parse(text) as { sops: SopsMetadata } & Record<string, unknown>;
  const regex = new RegExp(sops.encrypted_regex);
  const hash = createHash("sha512");
  const plain = new Map<string, string>();
  const visit = (node: unknown, keys: string[]): void => {
    if (node === null) return;
    if (Array.isArray(node)) {
      for (const item of node) visit(item, keys);
      return;
    }
    if (typeof node === "object") {
      for (const [k, v] of Object.entries(node)) visit(v, [...keys, k]);
      return;
    }
    let bytes = typeof node === "boolean" ? (node ? "True" : "False") : String(node);
    if (keys.some((k) => regex.test(k)) && node !== "") bytes = decryptValue(String(node), key, `${keys.join(":")}:`).plaintext;
    hash.update(bytes);
    plain.set(keys.join("."), bytes);
  };
  visit(data, []);
  const stored = decryptValue(sops.mac, key, sops.lastmodified);
  expect(stored.type).toBe("str");
  if (stored.plaintext !== hash.digest("hex").toUpperCase()) throw new Error("MAC mismatch");
  return plain;
}

const NOW = new Date("2026-03-04T05:06:07.890Z");

/** Deterministic bytes: 0, 1, 2, ... (tests only: a fixed data key and fixed nonces). */
function counter(): (size: number) => Uint8Array {
  let next = 0;
  return (size) => Uint8Array.from({ length: size }, () => next++ % 256);
}

function secret(stringData: Record<string, string>): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "pg-1-sensitive", namespace: "gitops-broker-instances", labels: { "app.kubernetes.io/managed-by": "gitops-broker" } },
    type: "Opaque",
    stringData,
  };
}

beforeAll(async () => {
  dir = await createTempDir("sops-test-");
  alice = await ageKeygen(dir, "alice");
  bob = await ageKeygen(dir, "bob");
});
afterAll(async () => {
  if (dir) await fs.rm(dir, { recursive: true, force: true });
});

describe("encryptYaml", () => {
  it("writes a Secret that sops-age decrypts back to the values, with only stringData encrypted", async () => {
    const text = await encryptYaml(secret({ adminPassword: "hunter2", "users.0.password": "p@ss: w0rd\n" }), { recipients: [alice.recipient], now: NOW });
    const doc = parse(text) as Record<string, unknown> & { stringData: Record<string, string>; sops: SopsMetadata };
    expect(Object.values(doc.stringData).every(isEncryptedValue)).toBe(true);
    expect(text).not.toContain("hunter2");
    expect(doc.metadata).toEqual(secret({}).metadata);

    const decrypted: unknown = await decryptSops(text, { secretKey: alice.secretKey, fileType: "yaml" });
    expect(decrypted).toEqual(secret({ adminPassword: "hunter2", "users.0.password": "p@ss: w0rd\n" }));
  });

  it("wraps the data key for the real age CLI and authenticates every value with its path and the MAC", async () => {
    const text = await encryptYaml(secret({ adminPassword: "hunter2", token: "t0k3n" }), { recipients: [alice.recipient], now: NOW });
    const { sops } = parse(text) as { sops: SopsMetadata };
    const key = await unwrapWithAgeCli(sops.age[0]!.enc, alice);
    expect(key).toHaveLength(32);
    const plain = decryptTree(text, key);
    expect(Object.fromEntries(plain)).toEqual({
      apiVersion: "v1",
      kind: "Secret",
      "metadata.labels.app.kubernetes.io/managed-by": "gitops-broker",
      "metadata.name": "pg-1-sensitive",
      "metadata.namespace": "gitops-broker-instances",
      "stringData.adminPassword": "hunter2",
      "stringData.token": "t0k3n",
      type: "Opaque",
    });
    // The MAC's additional data is lastmodified as Go's time.RFC3339 writes it.
    expect(sops.lastmodified).toBe("2026-03-04T05:06:07Z");
  });

  it("writes the metadata as sops does: keys in name order, the regex, the version, armored enc", async () => {
    const text = await encryptYaml(secret({ a: "1" }), { recipients: [alice.recipient, bob.recipient], now: NOW, randomBytes: counter() });
    const doc = parseDocument(text);
    expect(Object.keys(doc.toJS() as object)).toEqual(["apiVersion", "kind", "metadata", "stringData", "type", "sops"]);
    const { sops } = doc.toJS() as { sops: SopsMetadata };
    expect(Object.keys(sops)).toEqual(["age", "encrypted_regex", "lastmodified", "mac", "version"]);
    expect(sops.age.map((a) => Object.keys(a))).toEqual([["recipient", "enc"], ["recipient", "enc"]]);
    expect(sops.age.map((a) => a.recipient)).toEqual([alice.recipient, bob.recipient]);
    expect(sops.age[0]!.enc).toMatch(/^-----BEGIN AGE ENCRYPTED FILE-----\n([A-Za-z0-9+/=]{1,64}\n)+-----END AGE ENCRYPTED FILE-----\n$/);
    expect({ regex: sops.encrypted_regex, version: sops.version }).toEqual({ regex: ENCRYPTED_REGEX, version: SOPS_VERSION });
    expect(text).toContain('    lastmodified: "2026-03-04T05:06:07Z"\n');
  });

  it("lets each of two recipients decrypt, with sops-age and with the age CLI", async () => {
    const text = await encryptYaml(secret({ adminPassword: "hunter2" }), { recipients: [alice.recipient, bob.recipient], now: NOW });
    for (const id of [alice, bob]) {
      const decrypted = (await decryptSops(text, { secretKey: id.secretKey, fileType: "yaml" })) as { stringData: unknown };
      expect(decrypted.stringData).toEqual({ adminPassword: "hunter2" });
    }
    const { sops } = parse(text) as { sops: SopsMetadata };
    const [a, b] = await Promise.all([unwrapWithAgeCli(sops.age[0]!.enc, alice), unwrapWithAgeCli(sops.age[1]!.enc, bob)]);
    expect(a.equals(b)).toBe(true);
    await expect(unwrapWithAgeCli(sops.age[0]!.enc, bob)).rejects.toThrow(/no identity matched any of the recipients/);
  });

  it("fails decryption when a value is moved to another path, and the MAC when a plain value changes", async () => {
    const text = await encryptYaml(secret({ adminPassword: "hunter2", token: "t0k3n" }), { recipients: [alice.recipient], now: NOW });
    const { sops } = parse(text) as { sops: SopsMetadata };
    const key = await unwrapWithAgeCli(sops.age[0]!.enc, alice);
    const doc = parse(text) as { stringData: Record<string, string>; metadata: { name: string } };

    // The same ciphertext under another key: its additional data (the path) no longer matches.
    const moved = text.replace(`token: ${doc.stringData.token}`, `token: ${doc.stringData.adminPassword}`);
    expect(() => decryptTree(moved, key)).toThrow(/unable to authenticate data|Unsupported state/);
    await expect(decryptSops(moved, { secretKey: alice.secretKey, fileType: "yaml" })).rejects.toThrow(/AES-GCM decryption failed at path/);

    // A changed ciphertext byte fails its tag.
    const data = /data:([^,]+),/.exec(doc.stringData.token!)![1]!;
    const flipped = Buffer.from(data, "base64");
    flipped[0] = flipped[0]! ^ 1;
    const tampered = text.replace(`data:${data},`, `data:${flipped.toString("base64")},`);
    expect(() => decryptTree(tampered, key)).toThrow(/unable to authenticate data|Unsupported state/);

    // Unencrypted values are covered by the MAC: renaming the Secret is detected.
    const renamed = text.replace("name: pg-1-sensitive", "name: pg-2-sensitive");
    expect(() => decryptTree(renamed, key)).toThrow("MAC mismatch");
    expect(decryptTree(text, key).get("stringData.token")).toBe("t0k3n");
  });

  it("encrypts every value below a matching key, keeps types, leaves nulls and empty strings, uses no list index in the path", async () => {
    const doc = {
      spec: { replicas: 2, tags: ["x"] },
      data: { list: ["a", "b"], nested: { n: 7, f: 1.5, b: true, nothing: null, empty: "" } },
    };
    const text = await encryptYaml(doc, { recipients: [alice.recipient], now: NOW });
    const written = parse(text) as { spec: unknown; data: { list: string[]; nested: Record<string, unknown> } };
    expect(written.spec).toEqual({ replicas: 2, tags: ["x"] });
    expect(written.data.list.every(isEncryptedValue)).toBe(true);
    expect(written.data.nested).toMatchObject({ nothing: null, empty: "" });
    expect([written.data.nested.n, written.data.nested.f, written.data.nested.b].map((v) => /type:(\w+)\]$/.exec(String(v))?.[1])).toEqual(["int", "float", "bool"]);

    const { sops } = parse(text) as { sops: SopsMetadata };
    const key = await unwrapWithAgeCli(sops.age[0]!.enc, alice);
    expect(decryptValue(written.data.list[1]!, key, "data:list:").plaintext).toBe("b");
    expect(decryptValue(String(written.data.nested.b), key, "data:nested:b:").plaintext).toBe("True");
    expect(() => decryptTree(text, key)).not.toThrow();
    expect(await decryptSops(text, { secretKey: alice.secretKey, fileType: "yaml" })).toEqual(doc);
  });

  it("is deterministic given the random source and the clock (but for the age stanzas)", async () => {
    const options = { recipients: [alice.recipient], now: NOW };
    const [one, two] = await Promise.all([
      encryptYaml(secret({ adminPassword: "hunter2" }), { ...options, randomBytes: counter() }),
      encryptYaml(secret({ adminPassword: "hunter2" }), { ...options, randomBytes: counter() }),
    ]);
    const withoutAge = (t: string) => t.replace(/-----BEGIN AGE ENCRYPTED FILE-----[\s\S]*?-----END AGE ENCRYPTED FILE-----/, "");
    expect(withoutAge(one)).toBe(withoutAge(two));
    // Data key 0..31, then the value's nonce 32..63.
    expect((parse(one) as { stringData: { adminPassword: string } }).stringData.adminPassword).toContain(
      `iv:${Buffer.from(Uint8Array.from({ length: 32 }, (_, i) => 32 + i)).toString("base64")},`,
    );
  });

  it("rejects what sops cannot hold", async () => {
    const options = { recipients: [alice.recipient], now: NOW };
    await expect(encryptYaml({ a: "x" }, { ...options, recipients: [] })).rejects.toThrow(/at least one age recipient/);
    await expect(encryptYaml({ a: "x" }, { ...options, recipients: ["age1nope"] })).rejects.toThrow(/"age1nope" is not an age recipient/);
    await expect(encryptYaml({ sops: {} }, options)).rejects.toThrow(/already has a sops key/);
    await expect(encryptYaml({ data: { big: 1e21 } }, options)).rejects.toThrow(/data\.big: 1e\+21 cannot be written/);
    await expect(encryptYaml({ data: { when: new Date() } }, options)).rejects.toThrow(/data\.when: a object cannot be stored/);
  });
});
