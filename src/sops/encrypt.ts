import { createCipheriv, createHash, randomBytes as nodeRandomBytes } from "node:crypto";
import { Document, Scalar } from "yaml";
import { InvalidArgumentError } from "../errors/index.js";

/**
 * A writer of SOPS-encrypted YAML, as `sops encrypt --age <recipients> --encrypted-regex
 * '^(data|stringData)$'` writes it, so that the Go sops library (Flux's kustomize-controller)
 * decrypts it. It follows getsops/sops: `aes/cipher.go` (values), `sops.go` (tree walk, which
 * values are encrypted, the MAC), `age/keysource.go` (the data key per recipient) and
 * `stores/` (the `sops:` metadata). See docs/adr/0007-sensitive-parameters.md.
 */

/** `--encrypted-regex` of the Kubernetes convention: a key matching it is encrypted with all below it. */
export const ENCRYPTED_REGEX = "^(data|stringData)$";

/** The sops release whose output format this writer follows; written as `sops.version`. */
export const SOPS_VERSION = "3.13.2";

const NONCE_SIZE = 32; // aes/cipher.go nonceSize: sops uses 32-byte GCM nonces, not the usual 12
const TAG_SIZE = 16;
const ENCRYPTED_KEY = new RegExp(ENCRYPTED_REGEX);

/** `ENC[AES256_GCM,data:<b64>,iv:<b64>,tag:<b64>,type:<type>]`, the format of aes/cipher.go. */
const ENCRYPTED_VALUE = /^ENC\[AES256_GCM,data:[A-Za-z0-9+/=]*,iv:[A-Za-z0-9+/=]+,tag:[A-Za-z0-9+/=]+,type:(str|int|int64|float|bool|bytes|comment)\]$/;

/** True for a value in sops' encrypted format. */
export function isEncryptedValue(value: unknown): boolean {
  return typeof value === "string" && ENCRYPTED_VALUE.test(value);
}

export interface SopsEncryptOptions {
  /** age X25519 recipients (`age1...`); the data key is encrypted for each. At least one. */
  recipients: readonly string[];
  /** The time of encryption: `sops.lastmodified`, and the additional data of the MAC. */
  now: Date;
  /** Source of the data key and the nonces; node:crypto's by default. */
  randomBytes?: (size: number) => Uint8Array;
}

type Leaf = string | number | boolean;
type Tree = { [key: string]: Node };
type Node = Leaf | null | Tree | Node[];

/**
 * The document with every value under a key matching ENCRYPTED_REGEX encrypted and the `sops`
 * metadata appended, as YAML. Keys are written in byte order at every level: the MAC covers
 * the values in the order sops walks them, and kustomize-controller re-serializes a resource as
 * JSON (sorted keys) before it decrypts, so sorted is the one order both agree on.
 * Throws InvalidArgumentError for a document sops cannot hold (a `sops` key, a value that is not a string,
 * finite number, boolean, null, array or mapping) or an invalid recipient.
 */
export async function encryptYaml(document: Record<string, unknown>, options: SopsEncryptOptions): Promise<string> {
  if (options.recipients.length === 0) throw new InvalidArgumentError("at least one age recipient is needed");
  if (Object.hasOwn(document, "sops")) throw new InvalidArgumentError("the document already has a sops key (reserved for the metadata)");
  const random = options.randomBytes ?? ((size: number) => new Uint8Array(nodeRandomBytes(size)));
  const tree = canonical(document, "") as Tree;

  const dataKey = random(32);
  const mac = createHash("sha512");
  const encrypted = walk(tree, [], (value, path) => {
    // sops.go Tree.Encrypt: the MAC covers every value, encrypted or not, in walk order.
    mac.update(toBytes(value));
    return path.some((key) => ENCRYPTED_KEY.test(key)) ? encryptValue(value, dataKey, `${path.join(":")}:`, random) : value;
  }) as Tree;
  // sops writes `lastmodified` with Go's time.RFC3339: UTC, whole seconds.
  const lastModified = options.now.toISOString().replace(/\.\d{3}Z$/, "Z");
  const encryptedMac = encryptValue(mac.digest("hex").toUpperCase(), dataKey, lastModified, random);

  const age: { recipient: string; enc: string }[] = [];
  for (const recipient of options.recipients) age.push({ recipient, enc: await wrapDataKey(dataKey, recipient) });

  const out = new Document({
    ...encrypted,
    // stores/metadata.go: the metadata keys in name order, empty ones left out.
    sops: { age, encrypted_regex: ENCRYPTED_REGEX, lastmodified: lastModified, mac: encryptedMac, version: SOPS_VERSION },
  });
  // Quoted as yaml.v3 does (it would otherwise read as a timestamp).
  const stamp = out.getIn(["sops", "lastmodified"], true) as Scalar;
  stamp.type = Scalar.QUOTE_DOUBLE;
  // sops' YAML store writes with an indent of 4.
  return out.toString({ lineWidth: 0, indent: 4, indentSeq: true });
}

/** A copy with keys in byte order (Go's), checked for what sops can hold. */
function canonical(value: unknown, at: string): Node {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") {
    const unsafe = !Number.isFinite(value) || /e/i.test(String(value)) || (Number.isInteger(value) && !Number.isSafeInteger(value));
    if (unsafe) throw new InvalidArgumentError(`${at || "the document"}: ${value} cannot be written as sops writes numbers`);
    return value;
  }
  if (Array.isArray(value)) return value.map((v, i) => canonical(v, `${at}[${i}]`));
  if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    const keys = Object.keys(value).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    return Object.fromEntries(keys.map((k) => [k, canonical((value as Record<string, unknown>)[k], at ? `${at}.${k}` : k)]));
  }
  throw new InvalidArgumentError(`${at || "the document"}: a ${typeof value} cannot be stored in a sops file`);
}

/**
 * sops.go walkBranch / walkSlice: mappings extend the path with their key, list items keep the
 * path of their list (no index), null values are left as they are and not hashed.
 */
function walk(node: Node, path: string[], onLeaf: (value: Leaf, path: string[]) => Leaf): Node {
  if (node === null) return null;
  if (Array.isArray(node)) return node.map((item) => walk(item, path, onLeaf));
  if (typeof node === "object") return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v, [...path, k], onLeaf)]));
  return onLeaf(node, path);
}

/** sops.go ToBytes (and the plaintext of aes/cipher.go Encrypt): bools as Python wrote them. */
function toBytes(value: Leaf): Buffer {
  if (typeof value === "boolean") return Buffer.from(value ? "True" : "False");
  return Buffer.from(String(value), "utf8");
}

function typeOf(value: Leaf): string {
  if (typeof value === "string") return "str";
  if (typeof value === "boolean") return "bool";
  return Number.isInteger(value) ? "int" : "float";
}

/** aes/cipher.go Encrypt: AES-256-GCM, 32-byte nonce, the path as additional data; "" stays "". */
function encryptValue(value: Leaf, key: Uint8Array, additionalData: string, random: (size: number) => Uint8Array): string {
  if (value === "") return "";
  const iv = random(NONCE_SIZE);
  const cipher = createCipheriv("aes-256-gcm", key, iv, { authTagLength: TAG_SIZE });
  cipher.setAAD(Buffer.from(additionalData, "utf8"));
  const data = Buffer.concat([cipher.update(toBytes(value)), cipher.final()]);
  const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64");
  return `ENC[AES256_GCM,data:${b64(data)},iv:${b64(iv)},tag:${b64(cipher.getAuthTag())},type:${typeOf(value)}]`;
}

/**
 * age/keysource.go Encrypt: the raw data key, age-encrypted to one recipient, ASCII-armored.
 * age-encryption (with its post-quantum code, ~0.16 s of CPU to import) is loaded on the first
 * encryption: a broker whose plans have no sensitive parameters never loads it.
 */
async function wrapDataKey(dataKey: Uint8Array, recipient: string): Promise<string> {
  const { armor, Encrypter } = await import("age-encryption");
  const encrypter = new Encrypter();
  try {
    encrypter.addRecipient(recipient);
  } catch (e) {
    throw new InvalidArgumentError(`${JSON.stringify(recipient)} is not an age recipient`, { cause: e });
  }
  return armor.encode(await encrypter.encrypt(dataKey));
}
