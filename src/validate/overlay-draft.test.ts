import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { tempDirTree, type TempDirTree } from "../../test/support/dir-tree.js";
import { overlayDraft } from "./overlay-draft.js";

let repo: TempDirTree;
beforeEach(async () => {
  repo = await tempDirTree();
  await repo.write({ "a/x.yaml": "x", "a/b/y.yaml": "y", "c.txt": "c" });
});
afterEach(async () => {
  await repo.remove();
});

const names = async (draft: ReturnType<typeof overlayDraft>, dir: string) => (await draft.list(dir))?.map((e) => `${e.name}:${e.type}`) ?? null;

describe("overlayDraft", () => {
  it("reads through to the base until edited, and never writes to it", async () => {
    const draft = overlayDraft(repo.tree);
    expect(draft.changed).toBe(false);
    expect(await draft.readText("a/x.yaml")).toBe("x");
    expect(await draft.oid("a/x.yaml")).toBe(await repo.tree.oid("a/x.yaml"));
    draft.write("a/x.yaml", "new");
    draft.write("d/e/z.yaml", "z");
    expect(draft.changed).toBe(true);
    expect(await draft.readText("a/x.yaml")).toBe("new");
    expect(await draft.oid("a/x.yaml")).not.toBe(await repo.tree.oid("a/x.yaml"));
    expect(await repo.tree.readText("a/x.yaml")).toBe("x");
    expect(await names(draft, "")).toEqual(["a:tree", "c.txt:blob", "d:tree"]);
    expect(await names(draft, "d/e")).toEqual(["z.yaml:blob"]);
  });

  it("removing a directory hides the base below it; writes there show again", async () => {
    const draft = overlayDraft(repo.tree);
    draft.remove("a");
    expect(await draft.readText("a/b/y.yaml")).toBeNull();
    expect(await draft.list("a")).toBeNull();
    expect(await names(draft, "")).toEqual(["c.txt:blob"]);
    draft.write("a/b/w.yaml", "w");
    expect(await names(draft, "a")).toEqual(["b:tree"]);
    expect(await names(draft, "a/b")).toEqual(["w.yaml:blob"]);
    expect(await draft.readText("a/x.yaml")).toBeNull();
  });

  it("a directory whose files were all removed is gone", async () => {
    const draft = overlayDraft(repo.tree);
    draft.remove("a/b/y.yaml");
    expect(await draft.list("a/b")).toBeNull();
    expect(await names(draft, "a")).toEqual(["x.yaml:blob"]);
    draft.write("a/b/v.yaml", "v");
    draft.remove("a/b/v.yaml");
    expect(await draft.readText("a/b/v.yaml")).toBeNull();
    expect(await names(draft, "a")).toEqual(["x.yaml:blob"]);
  });
});
