/**
 * The broker's configuration after `loadConfig`: complete, validated, paths absolute.
 * Every key is documented in docs/configuration.md and src/config/config.schema.json.
 */

export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace";

export interface ListenAddress {
  host: string;
  port: number;
}

export interface GitConfig {
  /** null: the embedded remote `<dataDir>/remote.git` (see prepareEmbedded). */
  remote: string | null;
  branch: string;
  author: { name: string; email: string };
  /** How long a request waits for an unreachable remote (then 503). */
  pushTimeoutSeconds: number;
  /** A fetch or push without an answer for this long makes /readyz report the remote as not answering. */
  activityTimeoutSeconds: number;
  /** Interval of fetching the remote to notice others' commits. */
  pollIntervalSeconds: number;
  /** Push pacing of the control repository: a push at most this often (0: as soon as a commit is ready). */
  minPushIntervalSeconds: number;
  /** GIT_SSH_COMMAND for ssh deploy keys. */
  sshCommand?: string;
  /** Absolute path of a file holding the https token. */
  tokenFile?: string;
}

/**
 * Who may call the OSB API: `basic` (the default) HTTP basic auth; with `tls.clientCa`,
 * `certificate` a client certificate alone (Service Fabrik's secureIncomingConnections), `both`
 * a certificate and basic auth, `either` one of the two.
 */
export type AuthMode = "basic" | "certificate" | "both" | "either";

export interface AuthConfig {
  mode: AuthMode;
  username: string;
  /** At most one of password and passwordFile is set; neither: see ensurePassword. */
  password: string | null;
  /** Absolute path. */
  passwordFile: string | null;
}

export interface TlsConfig {
  /** Absolute paths of PEM files, readable at load time. */
  cert: string;
  key: string;
  /** Absolute path of the PEM file of the CAs that issue client certificates; null: none asked for. */
  clientCa: string | null;
  /** Allowed client-certificate subjects (see subject-pattern.ts); empty: any certificate clientCa issued. */
  clientSubjects: string[];
}

export interface WebhookConfig {
  /** Shared secret of POST /admin/webhook; at most one of secret and secretFile is set; neither: no webhook endpoint. */
  secret: string | null;
  /** Absolute path of a file holding the secret. */
  secretFile: string | null;
}

export interface ReconcileConfig {
  /** Re-render commits submitted per second at most (mass re-renders). */
  maxPerSecond: number;
  /** Re-renders queued in the git writer at once; OSB requests queue behind at most this many. */
  batchSize: number;
  /** Wait before retrying an instance skipped because an operation was in progress. */
  retrySeconds: number;
}

/** Records GC (ADR 0018). */
export interface RecordsConfig {
  /** Days a deprovisioned instance's record stays on the tip; 0: forever (no GC). */
  retentionDays: number;
  /** Time between two GC passes (one commit at most each). */
  gcIntervalSeconds: number;
  /** Records one GC commit removes at most. */
  gcBatchSize: number;
}

export interface MetricsConfig {
  /** Address of the Prometheus /metrics server, apart from the OSB port; null: no metrics served. */
  listen: ListenAddress | null;
}

/** Bounds of the OSB HTTP(S) server's sockets (ADR 0013). */
export interface HttpConfig {
  /** Time to receive a request's headers; then 408 and the connection is closed. */
  headersTimeoutSeconds: number;
  /** Time to receive a whole request, headers and body; then 408 and the connection is closed. */
  requestTimeoutSeconds: number;
  /** A keep-alive connection idle this long between requests is closed. */
  idleTimeoutSeconds: number;
  /** Open connections per client address at most; as many more are answered 503, any beyond closed at once. 0: no bound. */
  maxConnectionsPerClient: number;
  /** Addresses or CIDR blocks of the proxies in front (ingress controller): bounded by maxConnectionsPerProxy instead (ADR 0028). */
  trustedProxies: string[];
  /** Open connections per trusted proxy address at most, as maxConnectionsPerClient. 0: no bound. */
  maxConnectionsPerProxy: number;
}

/** Leader election among replicas (ADR 0024). */
export interface LeaderElectionConfig {
  /** Take part; false: this process does all background work. */
  enabled: boolean;
  leaseName: string;
  /** null: the pod's namespace, else the kubeconfig context's. */
  namespace: string | null;
  /** null: host name and a random suffix. */
  identity: string | null;
  leaseDurationSeconds: number;
  renewDeadlineSeconds: number;
  retryPeriodSeconds: number;
}

/** One store (ADR 0027): a Git repository holding the instances of the clusters that name it. Defaults filled by loadConfig. */
export interface StoreConfig {
  remote: string;
  branch: string;
  sshCommand?: string;
  /** Absolute path of a file holding the https token. */
  tokenFile?: string;
  minPushIntervalSeconds: number;
  pollIntervalSeconds: number;
}

export interface Config {
  listen: ListenAddress;
  http: HttpConfig;
  /** Absolute. */
  dataDir: string;
  git: GitConfig;
  auth: AuthConfig;
  tls: TlsConfig | null;
  log: { level: LogLevel };
  status: { mode: "commit" | "live"; bindTimeoutSeconds: number; syncTimeoutSeconds: number };
  scheduler: { type: "single" | "round-robin" | "least-utilized" | "label-selector" };
  webhook: WebhookConfig;
  reconcile: ReconcileConfig;
  records: RecordsConfig;
  metrics: MetricsConfig;
  leaderElection: LeaderElectionConfig;
  /** By store name; empty: the control repository holds every instance. */
  stores: Record<string, StoreConfig>;
}
