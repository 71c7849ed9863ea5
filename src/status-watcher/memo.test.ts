import { describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../errors/index.js";
import { createMemo, sameInputs } from "./memo.js";

describe("sameInputs", () => {
  it("compares each input by identity, and the lengths", () => {
    const catalog = { services: [] };
    expect(sameInputs([1, catalog, undefined], [1, catalog, undefined])).toBe(true);
    expect(sameInputs([], [])).toBe(true);
    // An equal copy of the catalog is another catalog: loaded again, it may differ in what a status reads.
    expect(sameInputs([1, catalog], [1, { services: [] }])).toBe(false);
    expect(sameInputs([1, "cluster east cannot be reached"], [1, undefined])).toBe(false);
    expect(sameInputs([1], [1, undefined])).toBe(false);
    expect(sameInputs([Number.NaN], [Number.NaN])).toBe(true);
  });
});

describe("a memo of computed results", () => {
  it("serves a value only for the inputs it was computed from", () => {
    const memo = createMemo<string>(10);
    const catalog = {};
    memo.set("op-1", [3, catalog], "in progress");
    expect(memo.get("op-1", [3, catalog])).toBe("in progress");
    expect(memo.get("op-1", [4, catalog])).toBeUndefined();
    expect(memo.get("op-1", [3, {}])).toBeUndefined();
    expect(memo.get("op-2", [3, catalog])).toBeUndefined();
    memo.set("op-1", [4, catalog], "succeeded");
    expect(memo.get("op-1", [4, catalog])).toBe("succeeded");
    expect(memo.get("op-1", [3, catalog])).toBeUndefined();
  });

  it("without inputs, keeps a value for good (until dropped)", () => {
    const memo = createMemo<string>(10);
    memo.set("op-1", [], "succeeded");
    expect(memo.get("op-1", [])).toBe("succeeded");
    memo.delete("op-1");
    expect(memo.get("op-1", [])).toBeUndefined();
    expect(memo.size).toBe(0);
  });

  it("through: computes once per inputs, and stores only what `keep` accepts", () => {
    const memo = createMemo<{ n: number; pending?: boolean }>(10);
    let computed = 0;
    const compute = (pending = false) => () => ({ n: ++computed, ...(pending ? { pending } : {}) });
    const keep = (v: { pending?: boolean }) => !v.pending;
    expect(memo.through("k", [1], compute(true), keep)).toEqual({ n: 1, pending: true });
    expect(memo.through("k", [1], compute(), keep)).toEqual({ n: 2 });
    expect(memo.through("k", [1], compute(), keep)).toEqual({ n: 2 });
    expect(memo.through("k", [2], compute())).toEqual({ n: 3 });
    expect(computed).toBe(3);
  });

  it("at its limit drops the value stored first; storing a key again keeps its place", () => {
    const memo = createMemo<number>(3);
    memo.set("a", [], 1);
    memo.set("b", [], 2);
    memo.set("c", [], 3);
    memo.set("a", [], 10);
    memo.get("a", []);
    memo.set("d", [], 4);
    expect(memo.size).toBe(3);
    expect(memo.get("a", [])).toBeUndefined();
    expect([...memo.values()]).toEqual([2, 3, 4]);
    memo.set("e", [], 5);
    expect([...memo.values()]).toEqual([3, 4, 5]);
  });

  it("refuses a limit that is not a whole number from 1", () => {
    for (const limit of [0, -1, 1.5, Number.NaN]) expect(() => createMemo(limit)).toThrow(InvalidArgumentError);
  });
});
