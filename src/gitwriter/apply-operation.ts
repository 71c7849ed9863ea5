import { InvalidArgumentError } from "../errors/index.js";
import { formatCommitMessage } from "./commit-message.js";
import { EMPTY_TREE_OID, type ObjectStore, type Tip } from "./object-store.js";
import { DraftTree } from "./tree-view.js";
import type { GitAuthor, Operation, OperationOutcome } from "./types.js";

/** What an operation did on a draft: the new tip (the base when it made no commit), its result, the paths its commit edited. */
export interface Applied {
  tip: Tip;
  result: unknown;
  paths: string[];
}

export interface ApplyDeps {
  store: ObjectStore;
  author: GitAuthor;
  /** The commit's date. */
  now: () => Date;
}

/**
 * Runs one operation on a draft over `base` and makes its commit (in memory, like every object
 * before a push): resolves with the new tip, `base` when there is nothing to commit (no commit
 * asked, nothing edited, or edits that leave the tree as it was).
 */
export async function applyOperation(deps: ApplyDeps, op: Operation<unknown>, base: Tip): Promise<Applied> {
  const draft = new DraftTree(deps.store, base);
  let outcome: unknown;
  try {
    outcome = await op(draft);
  } finally {
    draft.seal();
  }
  if (typeof outcome !== "object" || outcome === null || !("commit" in outcome)) {
    throw new InvalidArgumentError("an operation must resolve with { commit, result }");
  }
  const { commit: spec, result } = outcome as OperationOutcome<unknown>;
  if (spec === null || !draft.changed) return { tip: base, result, paths: [] };
  const message = formatCommitMessage(spec);
  const tree = await draft.writeTree();
  if (tree === (base.tree ?? EMPTY_TREE_OID)) return { tip: base, result, paths: [] };
  const commit = deps.store.writeCommit({
    tree,
    parent: base.commit,
    message,
    author: deps.author,
    date: deps.now(),
  });
  return { tip: { commit, tree }, result, paths: draft.editedPaths() };
}
