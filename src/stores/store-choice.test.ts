import { describe, expect, it } from "vitest";
import { storeForNewInstance } from "./store-choice.js";

const clusters = [
  { id: "a1", schedulable: true },
  { id: "b1", schedulable: true },
  { id: "b2", schedulable: true },
  { id: "b3", schedulable: true },
  { id: "c1", schedulable: false },
];
const storeOf = (id: string) => id[0]!;

describe("storeForNewInstance", () => {
  it("is a function of the id and the registry: the same answer in any order, on every call", () => {
    for (let i = 0; i < 200; i++) {
      const id = `inst-${i}`;
      const once = storeForNewInstance(id, clusters, storeOf);
      expect(storeForNewInstance(id, [...clusters].reverse(), storeOf)).toBe(once);
      expect(storeForNewInstance(id, clusters, storeOf)).toBe(once);
    }
  });

  it("spreads new ids in proportion to each store's schedulable clusters, never to a store with none", () => {
    const counts = new Map<string, number>();
    const n = 20_000;
    for (let i = 0; i < n; i++) {
      const store = storeForNewInstance(`id-${i}`, clusters, storeOf)!;
      counts.set(store, (counts.get(store) ?? 0) + 1);
    }
    expect(counts.get("c")).toBeUndefined();
    // a: 1 of 4 schedulable clusters, b: 3 of 4. Binomial sd at n = 20k is ~61: 5 % is ~16 sd.
    expect(Math.abs(counts.get("a")! / n - 0.25)).toBeLessThan(0.05);
    expect(Math.abs(counts.get("b")! / n - 0.75)).toBeLessThan(0.05);
  });

  it("moves only the ids of a store that loses its clusters (rendezvous: the others keep their store)", () => {
    const without = clusters.filter((c) => c.id !== "a1");
    for (let i = 0; i < 500; i++) {
      const id = `keep-${i}`;
      const before = storeForNewInstance(id, clusters, storeOf);
      if (before !== "a") expect(storeForNewInstance(id, without, storeOf)).toBe(before);
    }
  });

  it("is undefined when no cluster is schedulable", () => {
    expect(storeForNewInstance("x", [{ id: "c1", schedulable: false }], storeOf)).toBeUndefined();
  });
});
