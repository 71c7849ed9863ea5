export { loadConfig } from "./load-config.js";
export type { LoadConfigOptions } from "./load-config.js";
export { ensureDataDir } from "./data-dir.js";
export { lockDataDir } from "./data-dir-lock.js";
export type { DataDirLock, LockRole } from "./data-dir-lock.js";
export { EMBEDDED_REMOTE_DIR, SEED_MESSAGE, prepareEmbedded } from "./embedded.js";
export type { PrepareEmbeddedOptions } from "./embedded.js";
export { GENERATED_PASSWORD_FILE, ensurePassword, readGitTokens, readPassword, readStartSecrets, readWebhookSecret } from "./password.js";
export type { Credentials, StartSecrets } from "./password.js";
export { addressMatcher, parseAddressRange } from "./address-range.js";
export type { AddressRange } from "./address-range.js";
export { parseSubjectPattern, subjectMatcher } from "./subject-pattern.js";
export type { CertificateSubject, SubjectPattern } from "./subject-pattern.js";
export type {
  AuthConfig,
  AuthMode,
  Config,
  GitConfig,
  HttpConfig,
  ListenAddress,
  LogLevel,
  ReconcileConfig,
  RecordsConfig,
  TlsConfig,
  WebhookConfig,
} from "./types.js";
