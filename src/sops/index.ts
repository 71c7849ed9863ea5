/**
 * The sops component: writes SOPS-encrypted YAML (AES-256-GCM values, the data key wrapped for
 * age recipients) that Flux's kustomize-controller decrypts. It only encrypts: the broker never
 * holds a key that could decrypt what it wrote. See docs/adr/0007-sensitive-parameters.md.
 */
export { encryptYaml, isEncryptedValue, ENCRYPTED_REGEX, SOPS_VERSION } from "./encrypt.js";
export type { SopsEncryptOptions } from "./encrypt.js";
