import type { Draft } from "./types.js";

/**
 * A Draft that passes every call to `draft` and tells `onEdit` of each write (content) and
 * removal (null) first: for callers that need to know what a render wrote (a move's file list,
 * an import's edits to replay elsewhere).
 */
export function tappedDraft(draft: Draft, onEdit: (path: string, content: string | Uint8Array | null) => void): Draft {
  return {
    get commit() {
      return draft.commit;
    },
    get bulk() {
      return draft.bulk;
    },
    get changed() {
      return draft.changed;
    },
    readFile: (path) => draft.readFile(path),
    readText: (path) => draft.readText(path),
    list: (dir) => draft.list(dir),
    oid: (path) => draft.oid(path),
    write: (path, content) => {
      onEdit(path, content);
      draft.write(path, content);
    },
    remove: (path) => {
      onEdit(path, null);
      draft.remove(path);
    },
  };
}
