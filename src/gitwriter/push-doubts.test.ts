import { describe, expect, it } from "vitest";
import { PushDoubts } from "./push-doubts.js";

describe("PushDoubts", () => {
  it("holds the operations of pushes in doubt until the branch moves", () => {
    const doubts = new PushDoubts<string, number>();
    expect(doubts.has("a")).toBe(false);
    doubts.record("c1", new Map([["a", 1]]));
    expect(doubts.has("a")).toBe(true);
    expect(doubts.size).toBe(1);
    doubts.clear();
    expect(doubts.has("a")).toBe(false);
  });

  it("on a fetched tip: the outcomes of the pushes it holds; the others can never land; cleared either way", async () => {
    const doubts = new PushDoubts<string, number>();
    doubts.record("c1", new Map([["a", 1], ["b", 2]]));
    doubts.record("c2", new Map([["c", 3]]));
    const history: Record<string, string[]> = { t: ["t", "c1", "base"] };
    const landed = await doubts.settle("t", async (commit, tip) => history[tip]!.includes(commit));
    expect([...landed]).toEqual([["a", 1], ["b", 2]]);
    expect(doubts.size).toBe(0);
  });

  it("a failing ancestry check counts as not landed (the operations run again), and an empty branch holds nothing", async () => {
    const doubts = new PushDoubts<string, number>();
    doubts.record("c1", new Map([["a", 1]]));
    expect((await doubts.settle("t", () => Promise.reject(new Error("no such commit")))).size).toBe(0);
    doubts.record("c1", new Map([["a", 1]]));
    expect((await doubts.settle(null, async () => true)).size).toBe(0);
  });
});
