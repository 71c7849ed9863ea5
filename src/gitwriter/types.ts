/**
 * Contract of the git writer. It stores what it is given: it knows nothing of HTTP, OSB,
 * records or manifests. Paths are repo-relative, `/`-separated, never starting with `/`.
 */

/** Read access to one tree (a commit's, plus pending changes for a Draft). */
export interface TreeReader {
  /** Commit this reader is based on (null for an empty repository). */
  readonly commit: string | null;
  /** File content, or null when the path is not a file. */
  readFile(path: string): Promise<Uint8Array | null>;
  /** UTF-8 file content, or null. */
  readText(path: string): Promise<string | null>;
  /** Entries (files and directories) directly below `dir` ("" = root), sorted by name; null when not a directory. */
  list(dir: string): Promise<TreeEntryInfo[] | null>;
  /** Blob oid of a file, or null. Cheap: used for optimistic checks and parse caches. */
  oid(path: string): Promise<string | null>;
  /**
   * Reads for folds over a whole subtree (many thousand files), by tree oid (see TreeEntryInfo).
   * Optional: a reader over a plain directory does without, and folds then read file by file.
   */
  readonly bulk?: BulkReader;
  /**
   * A tree made of several repositories' trees (the stores, ADR 0027), by store name: folds over
   * every instance fold each part alone (with its own bulk reads and memo) and merge the results.
   */
  readonly parts?: ReadonlyMap<string, TreeReader>;
}

export interface BulkReader {
  /**
   * The entries below the tree `treeOid` at any depth that `keep` accepts (default: all), parents
   * before children; paths relative to it.
   */
  walk(treeOid: string, keep?: (path: string, type: "blob" | "tree") => boolean): Promise<WalkEntry[]>;
  /**
   * Calls `each` with the content of each blob of `oids`, in order. The content is only valid
   * during the call (it may be a view into a buffer that is reused).
   */
  readBlobs(oids: readonly string[], each: (content: Uint8Array, index: number) => void): Promise<void>;
}

export interface WalkEntry {
  path: string;
  type: "blob" | "tree";
  oid: string;
}

export interface TreeEntryInfo {
  name: string;
  type: "blob" | "tree";
  /**
   * Object id: always set for files; set for directories unchanged from the base commit (a
   * directory edited in a draft has none until it is written). Lets readers memoize per subtree.
   */
  oid?: string;
}

/** A TreeReader with pending edits. Edits are visible to its own reads. */
export interface Draft extends TreeReader {
  write(path: string, content: string | Uint8Array): void;
  /** Remove a file, or a whole directory subtree. Removing a missing path is a no-op. */
  remove(path: string): void;
  /** True when at least one edit changes the tree. */
  readonly changed: boolean;
}

export interface CommitSpec {
  /** Subject line. */
  subject: string;
  /** Optional body paragraphs. */
  body?: string;
  /** Git trailers, written in insertion order as `Key: value` after a blank line; a list repeats its key. */
  trailers: Readonly<Record<string, string | readonly string[]>>;
}

export interface OperationOutcome<R> {
  /** null: nothing to commit (the draft must be unchanged). */
  commit: CommitSpec | null;
  result: R;
}

/**
 * An operation decides against the draft (base = current tip plus earlier operations of the same
 * push batch) and edits it. It may be called more than once: after a rejected push it is re-run on
 * the new remote tip, so it must be a pure function of the draft. Throwing rejects this operation
 * only (its edits are dropped); other operations in the batch are unaffected.
 */
export type Operation<R> = (draft: Draft) => Promise<OperationOutcome<R>>;

export interface SubmitResult<R> {
  result: R;
  /** The commit that carries this operation, or null when it changed nothing. */
  commit: string | null;
}

/** See GitReader.log. */
export interface LogOptions {
  firstParent?: boolean;
  /** At most this many commits (a positive integer). */
  max?: number;
}

/** One commit of a history (see GitReader.log). */
export interface CommitInfo {
  commit: string;
  /** Author date as git prints it (strict ISO 8601, with the author's offset). */
  authorDate: string;
  author: GitAuthor;
  subject: string;
  /** The message's trailers (`Key: value`, unfolded), in order; a repeated key has its values in order. */
  trailers: Record<string, string | string[]>;
}

/**
 * Read-only access to the repository the writer keeps: what the status watcher, validate and the
 * history use. It never writes to the remote (refresh only fetches).
 */
export interface GitReader {
  /** Reader for the last tip known to be on the remote. */
  snapshot(): TreeReader;
  /** Reader for any commit present in the local repository (e.g. an applied revision); null when absent. */
  readerAt(commit: string): Promise<TreeReader | null>;
  /** Fetch the remote; when it moved, adopt its tip (after pending pushes). Resolves with the tip. */
  refresh(): Promise<string | null>;
  /** Called whenever the known remote tip changes (our push or a fetch). */
  onTip(listener: (tip: string | null, previous: string | null) => void): () => void;
  /**
   * The commits reachable from `from` that touch any of `paths` (git pathspecs, `:(glob)` magic
   * allowed), newest first, like `git log <from> -- <paths>`; `firstParent` follows only the first
   * parent of merges (a merge counts when it differs from its first parent), `max` stops early.
   */
  log(from: string, paths: readonly string[], options?: LogOptions): Promise<CommitInfo[]>;
}

export interface GitWriter extends GitReader {
  /** Clone/fetch the remote into the local bare repository and load the tip. */
  start(): Promise<void>;
  /**
   * Queue an operation. Resolves only after the push carrying its commit (or, for a no-change
   * outcome, the push of everything queued before it) was accepted by the remote.
   */
  submit<R>(op: Operation<R>): Promise<SubmitResult<R>>;
  /**
   * Called after each push of ours the remote accepted (not for commits of others a fetch brings),
   * with the commits it carried and the paths each changed. After the push, before the operations
   * it carried are acknowledged; a listener must not block (it is called synchronously).
   */
  onPushed(listener: (event: PushEvent) => void): () => void;
  /**
   * True when the last contact with the remote succeeded and the fetch or push in flight (if any)
   * has waited less than the activity timeout.
   */
  readonly remoteReachable: boolean;
  /** Why the remote does not count as reachable (see remoteReachable); undefined when it does. */
  readonly remoteTrouble?: string | undefined;
  /** The last history rewrite that erased commits, while they are still missing from the branch. */
  readonly historyRewrite?: HistoryRewrite | undefined;
  /** Stop taking operations, finish queued ones (push them), then resolve. */
  close(): Promise<void>;
}

/** One accepted push: `previous..tip` on `branch`. */
export interface PushEvent {
  branch: string;
  /** The remote tip before the push (null: the push created the branch). */
  previous: string | null;
  tip: string;
  /** The commits pushed, oldest first. */
  commits: PushedCommit[];
}

export interface PushedCommit {
  commit: string;
  /**
   * Repo-relative paths the operation wrote or removed (a removed directory is one path), sorted.
   * An edit that left a file as it was may be listed; a changed path is never missing.
   */
  paths: string[];
}

/**
 * The remote's branch was rewritten (force-pushed) so that commits it held before are no longer
 * on it. The writer follows the remote; this records what was erased until the commits are on the
 * branch again (or the process restarts).
 */
export interface HistoryRewrite {
  /** ISO time the rewrite was noticed. */
  noticedAt: string;
  /** The tip before the rewrite, and the one adopted. */
  previousTip: string;
  tip: string;
  /** Erased commits, newest first (at most 1000). */
  lostCommits: { commit: string; subject: string; instanceIds: string[] }[];
  /** Instance-Id trailers of the erased commits (operations that had been acknowledged). */
  lostInstances: string[];
}

export interface GitAuthor {
  name: string;
  email: string;
}
