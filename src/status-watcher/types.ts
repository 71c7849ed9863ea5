import type { KubeConfig } from "@kubernetes/client-node";
import type { Catalog, ClusterEntry, KubeconfigRef } from "../catalog/index.js";
import type { GitReader } from "../gitwriter/index.js";
import type { Logger } from "../log/index.js";
import type { StatusWatcherInstruments } from "../metrics/index.js";
import type { BindingRecord, InstanceRecord, OperationEntry } from "../repo/index.js";

export type StatusMode = "commit" | "live";

export type OperationState = "in progress" | "succeeded" | "failed";

export interface OperationStatus {
  state: OperationState;
  description?: string;
  instanceUsable?: boolean;
  updateRepeatable?: boolean;
  /** From the status template's `provision`/`update` section (OSB `dashboard_url`). */
  dashboardUrl?: string;
  /**
   * "In progress" only because the watcher is still gathering its view of the cluster (after a
   * start, a new kind): the broker waits (settle) rather than answer a state it may have left.
   */
  provisional?: boolean;
}

export interface BindingResult {
  /** Credentials as read from the live cluster (never from Git). Undefined when the mode cannot read them. */
  credentials?: Record<string, unknown>;
  endpoints?: unknown[];
}

/** How a bind ended after `awaitBinding`, or that it had not ended within the bound. */
export type BindingOutcome =
  | { state: "succeeded"; result: BindingResult }
  | { state: "failed" | "in progress"; description: string };

/**
 * The status watcher answers "how far is this operation?" for last_operation, GET instance and
 * GET binding, from memory (zero Kubernetes API requests per call). It never writes to Git.
 */
export interface StatusWatcher {
  /** The default mode; a cluster may set its own (`ClusterEntry.statusMode`). */
  readonly mode: StatusMode;
  instanceStatus(instance: InstanceRecord, operation: OperationEntry): OperationStatus;
  bindingStatus(instance: InstanceRecord, binding: BindingRecord, operation: OperationEntry): OperationStatus;
  bindingResult(instance: InstanceRecord, binding: BindingRecord): BindingResult;
  /**
   * Waits, at most the watcher's bind bound, until the bind `operation` is no longer in progress
   * (live mode: applied and its credentials readable). Commit mode answers at once.
   */
  awaitBinding(instance: InstanceRecord, binding: BindingRecord, operation: OperationEntry): Promise<BindingOutcome>;
  /**
   * Waits, at most the same bound, until the instance `operation` of a synchronous plan is no
   * longer in progress; resolves with its status then (or the in-progress one at the bound).
   * Commit mode answers at once (ADR 0012: a 201 / 200 means done).
   */
  awaitInstance?(instance: InstanceRecord, operation: OperationEntry): Promise<OperationStatus>;
  /**
   * The broker acknowledged `operationId` (its commit is on the remote) now: a plan's
   * maximum_polling_duration counts from here, as the platform counts from the 202.
   */
  acknowledged?(operationId: string): void;
  /**
   * Resolves once the status of `operation` is no longer provisional, or after the settle bound:
   * a restarted broker does not answer "in progress" for what it answered "succeeded" before.
   * At once without live clusters.
   */
  /** Whether any cluster is observed live (settle can wait); false: every answer is final at once. */
  observing?(): boolean;
  settle?(instance: InstanceRecord, binding: BindingRecord | undefined, operation: OperationEntry): Promise<void>;
  /** Stops every watch. */
  close(): Promise<void>;
}

/** The catalog and registry as last loaded (the broker's RepoView). */
export interface StatusView {
  catalog(): Catalog;
  clusters(): readonly ClusterEntry[];
}

/** What the watcher reads of the repository: the read-only GitReader (it never writes). */
export type StatusWriter = Pick<GitReader, "readerAt" | "refresh" | "snapshot" | "onTip">;

export interface StatusWatcherOptions {
  view: StatusView;
  writer: StatusWriter;
  logger: Logger;
  /** The watcher's instruments (default: record nothing). */
  metrics?: StatusWatcherInstruments;
  /** Mode of clusters without `spec.status.mode` (config `status.mode`). */
  defaultMode: StatusMode;
  /**
   * The KubeConfig for a cluster (`ref` is the cluster's kubeconfig, or its sync object's when
   * that lives elsewhere). Default: `createKubeConfigResolver()`.
   */
  kubeConfigFor?: (ref: KubeconfigRef | undefined, cluster: ClusterEntry) => Promise<KubeConfig>;
  /** Clock for maximum_polling_duration (default: the wall clock). */
  now?: () => Date;
  /** Waits between retries of the watches (default: timers). */
  delay?: (ms: number) => Promise<void>;
  /** Jitter source of the watches' backoff (default Math.random). */
  random?: () => number;
  /** How long a synchronous bind waits for its credentials (default 10 s). */
  bindTimeoutMs?: number;
  /**
   * How long a synchronous provision, update or deprovision waits for its status to leave "in
   * progress" (awaitInstance) before the broker answers 202 or 503 (default 60 s, Cloud Foundry's
   * default broker timeout).
   */
  syncTimeoutMs?: number;
  /** How long an answer waits for the watcher's view of a cluster to be complete (default: bindTimeoutMs). */
  settleTimeoutMs?: number;
  /**
   * Longest time between receiving a request and acknowledging it (the push timeout): an
   * operation acknowledged by another process (a replica, or this one before a restart) has its
   * maximum_polling_duration counted from its receipt plus this, never earlier than the platform
   * counts (default 0).
   */
  acknowledgeBoundMs?: number;
  /** Full re-list period of every watch (default 5 minutes). */
  relistIntervalMs?: number;
}
