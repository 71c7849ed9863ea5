import { BaseError, type ErrorOptions } from "./base.js";

/**
 * Stores (ADR 0027, ADR 0036): what the store set and a cluster's move refuse. Messages name a
 * repository as src/stores does (`store <name>`, the control repository), fields keep the names;
 * the broker answers each by its code (ADR 0037).
 */

/**
 * An assertion (ADR 0036): an operation queued on one repository edited a path that belongs to
 * another (a cluster of another store, an instance recorded there, or the control repository).
 * StoreSet.route decides the repository before the operation runs by the rules the edits are
 * checked with, so this is a defect (of the route, or of an operation writing where its placement
 * does not say): its edits are dropped, nothing is committed, the request gets a 500 and the log
 * names both repositories. Never retried elsewhere.
 */
export class StoreMismatchError extends BaseError {
  static override readonly code: string = "StoreMismatch";
  readonly path: string;
  readonly store: string;
  readonly owner: string;

  constructor(message: string, fields: { path: string; store: string; owner: string }, options?: ErrorOptions) {
    super(message, options);
    this.path = fields.path;
    this.store = fields.store;
    this.owner = fields.owner;
  }
}

/** An operation on a cluster whose records are being copied to another store (a move's fence says `moving`): worth retrying shortly. */
export class ClusterMovingError extends BaseError {
  static override readonly code: string = "ClusterMoving";
  readonly clusterId: string;
  readonly to: string;

  constructor(message: string, fields: { clusterId: string; to: string }, options?: ErrorOptions) {
    super(message, options);
    this.clusterId = fields.clusterId;
    this.to = fields.to;
  }
}

/**
 * An operation on a cluster that a move took out of the store it ran in while it was queued (the
 * store's fence says `moved`): nothing was written; a retry is routed to the cluster's new store.
 */
export class ClusterMovedError extends BaseError {
  static override readonly code: string = "ClusterMoved";
  readonly clusterId: string;
  readonly from: string;
  readonly to: string;

  constructor(message: string, fields: { clusterId: string; from: string; to: string }, options?: ErrorOptions) {
    super(message, options);
    this.clusterId = fields.clusterId;
    this.from = fields.from;
    this.to = fields.to;
  }
}

/**
 * A store that has not answered since the broker started: every request for its clusters, read or
 * write, fails with it until it answers; nothing was changed, and nothing is known to be missing.
 */
export class StoreUnavailableError extends BaseError {
  static override readonly code: string = "StoreUnavailable";
  readonly store: string;

  constructor(message: string, fields: { store: string }, options?: ErrorOptions) {
    super(message, options);
    this.store = fields.store;
  }
}

/** An instance to be moved to a cluster of another repository than its own: one commit cannot move it (`gitops-broker move`). */
export class InstanceMoveAcrossStoresError extends BaseError {
  static override readonly code: string = "InstanceMoveAcrossStores";
  readonly instanceId: string;
  readonly clusterId: string;
  readonly from: string;
  readonly to: string;

  constructor(message: string, fields: { instanceId: string; clusterId: string; from: string; to: string }, options?: ErrorOptions) {
    super(message, options);
    this.instanceId = fields.instanceId;
    this.clusterId = fields.clusterId;
    this.from = fields.from;
    this.to = fields.to;
  }
}

/** A cluster's move (`gitops-broker move-cluster`) that cannot be made as asked: an unknown cluster or store, a registry entry that names no store. */
export class ClusterMoveRefusedError extends BaseError {
  static override readonly code: string = "ClusterMoveRefused";
}

/** A cluster's move that the repositories' state contradicts: the cluster is there already, the target holds other content, no move to finish. */
export class ClusterMoveConflictError extends BaseError {
  static override readonly code: string = "ClusterMoveConflict";
}
