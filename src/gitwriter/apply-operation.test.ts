import fs from "node:fs/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../errors/index.js";
import { createBareRemote, createTempDir, git, revParse } from "../../test/support/git-fixtures.js";
import { applyOperation, type ApplyDeps } from "./apply-operation.js";
import { ObjectStore, type Tip } from "./object-store.js";
import type { Draft, Operation } from "./types.js";

const AUTHOR = { name: "gitops-broker", email: "broker@example.com" };
const NOW = new Date("2026-11-29T10:00:00Z");
const SPEC = { subject: "provision x", trailers: { "Instance-Id": "x" } };

let root: string;
let bare: string;
let deps: ApplyDeps;
let base: Tip;

beforeEach(async () => {
  root = await createTempDir("apply-operation-test-");
  bare = await createBareRemote(root, "base.git", { "README.md": "seed\n", "a/b.yaml": "b\n" });
  const store = new ObjectStore(bare);
  deps = { store, author: AUTHOR, now: () => NOW };
  const commit = (await revParse(bare, "main"))!;
  base = { commit, tree: await store.commitTree(commit) };
});

afterEach(async () => {
  deps.store.close();
  await fs.rm(root, { recursive: true, force: true });
});

const op = (edit: (draft: Draft) => void, commit: typeof SPEC | null = SPEC): Operation<unknown> => async (draft) => {
  edit(draft);
  return { commit, result: "done" };
};

describe("applyOperation", () => {
  it("commits the draft's edits on top of the base, with the author and the date, and names the paths it edited", async () => {
    const applied = await applyOperation(deps, op((d) => d.write("a/c.yaml", "c\n")), base);
    expect(applied.result).toBe("done");
    expect(applied.paths).toEqual(["a/c.yaml"]);
    expect(applied.tip.commit).not.toBe(base.commit);
    await deps.store.flush();
    const commit = await git(["cat-file", "-p", applied.tip.commit!], bare);
    expect(commit).toContain(`tree ${applied.tip.tree}\nparent ${base.commit}\n`);
    expect(commit).toContain(`author gitops-broker <broker@example.com> ${NOW.getTime() / 1000} +0000`);
    expect(commit).toContain("provision x\n\nInstance-Id: x\n");
    expect(await git(["show", `${applied.tip.commit}:a/c.yaml`], bare)).toBe("c\n");
  });

  it("makes no commit when none is asked, nothing was edited, or the edits leave the tree as it was", async () => {
    for (const o of [
      op((d) => d.write("a/c.yaml", "c\n"), null),
      op(() => undefined),
      op((d) => d.write("a/b.yaml", "b\n")),
    ]) {
      expect(await applyOperation(deps, o, base)).toEqual({ tip: base, result: "done", paths: [] });
    }
  });

  it("refuses an outcome without { commit, result }, and closes the draft when the operation returns", async () => {
    let kept: Draft | undefined;
    const bad: Operation<unknown> = async (draft) => {
      kept = draft;
      return "done" as never;
    };
    await expect(applyOperation(deps, bad, base)).rejects.toThrow(InvalidArgumentError);
    expect(() => kept!.write("late.yaml", "x")).toThrow("the draft is closed");
  });

  it("an operation that throws rejects with its error", async () => {
    const boom = new Error("conflict");
    await expect(applyOperation(deps, async () => Promise.reject(boom), base)).rejects.toBe(boom);
  });
});
