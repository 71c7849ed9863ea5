import { BaseError, type ErrorOptions } from "./base.js";

/** The git writer's failures: a remote that refuses or does not answer, a repository not as it should be, a writer closed. */

/** Where a GitRemoteError happened, and what is known of a push that got no answer. */
export interface GitRemoteErrorDetails extends ErrorOptions {
  /** The repository's name in messages: "the control repository" or "store <name>" (see storeLabel). */
  repository?: string | undefined;
  /**
   * A push that got no verdict after its pack may have reached the remote: the remote may still
   * accept it. Its operations are never answered "nothing was changed" before the remote's branch
   * shows whether it did (ADR 0005's addendum of 2026-11-29).
   */
  inDoubt?: boolean;
  /** The command was killed for want of an answer (a remote that hangs), rather than failing. */
  timedOut?: boolean;
}

/** A Git remote refused a push (non-fast-forward, hook) or could not be reached. */
export class GitRemoteError extends BaseError {
  static override readonly code: string = "GitRemoteError";
  /** `rejected`: non-fast-forward (someone else pushed); `hook`: refused by a server hook; `unreachable`. */
  readonly kind: "rejected" | "hook" | "unreachable";
  /** What the remote said (stderr of git, `remote:` lines), for logs and OSB descriptions. */
  readonly remoteMessage: string;
  /** The repository's name in messages ("the control repository", "store eu"); undefined: not known here. */
  readonly repository: string | undefined;
  /** See GitRemoteErrorDetails. */
  readonly inDoubt: boolean;
  readonly timedOut: boolean;
  constructor(kind: "rejected" | "hook" | "unreachable", remoteMessage: string, details: GitRemoteErrorDetails = {}) {
    const { repository, inDoubt = false, timedOut = false, ...options } = details;
    super(`git remote ${kind}${repository ? ` (${repository})` : ""}: ${remoteMessage}`, options);
    this.kind = kind;
    this.remoteMessage = remoteMessage;
    this.repository = repository;
    this.inDoubt = inDoubt;
    this.timedOut = timedOut;
  }
}

/**
 * A Git repository is not what it should be: in the writer's local repository an object missing
 * or of another type, a malformed object, pack, pack index or ref, a git command answering less
 * than asked; or a revision a record names that the remote does not have. Never an OSB answer of
 * its own: the operation fails as an internal error.
 */
export class GitRepositoryError extends BaseError {
  static override readonly code: string = "GitRepositoryError";
}

/** The git writer takes no operations: not started yet, or closed for shutdown. */
export class GitWriterClosedError extends BaseError {
  static override readonly code: string = "GitWriterClosed";
}
