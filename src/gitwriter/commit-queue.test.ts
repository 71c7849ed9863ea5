import { describe, expect, it } from "vitest";
import type { Applied } from "./apply-operation.js";
import { CommitQueue, type Entry } from "./commit-queue.js";
import type { Tip } from "./object-store.js";
import type { Operation } from "./types.js";

const R: Tip = { commit: "r1", tree: "tree-r1" };
const R2: Tip = { commit: "r2", tree: "tree-r2" };

/** What an operation of these tests does on a draft: commit as `name`, commit nothing, or throw. */
type Does = { commit: string } | "nothing" | Error;

/**
 * A queue whose operations are named by what they do (`does`): `apply` commits `name` on top of
 * `base` (commit ids tell their chain: "r1>a>b"). Every answer lands in `answers`.
 */
function setup() {
  const does = new WeakMap<Operation<unknown>, Does>();
  const gauge: number[] = [];
  const refused: { entry: Entry; error: unknown }[] = [];
  const answers: Record<string, unknown> = {};
  const queue = new CommitQueue({
    apply: async (op, base): Promise<Applied> => {
      const what = does.get(op)!;
      if (what instanceof Error) throw what;
      if (what === "nothing") return { tip: base, result: "same", paths: [] };
      const commit = `${base.commit}>${what.commit}`;
      return { tip: { commit, tree: `tree-${commit}` }, result: what.commit, paths: [`${what.commit}.yaml`] };
    },
    refused: (entry, error) => void refused.push({ entry, error }),
    queued: { set: (value) => void gauge.push(value) },
    labels: { store: "control" },
  });
  queue.reset(R);
  const entry = (name: string, what: Does = { commit: name }): Entry => {
    const op: Operation<unknown> = async () => ({ commit: null, result: undefined });
    does.set(op, what);
    return {
      op,
      queuedAt: 0,
      resolve: (value) => void (answers[name] = value),
      reject: (error) => void (answers[name] = error),
    };
  };
  const add = (...entries: Entry[]) => {
    for (const e of entries) queue.add(e);
    return entries;
  };
  return { queue, entry, add, gauge, refused, answers };
}

const commits = (entries: readonly Entry[]) => entries.map((e) => e.outcome?.commit);

describe("CommitQueue", () => {
  it("runs queued operations in order on the remote tip, one commit each, and counts the queue", async () => {
    const { queue, entry, add, gauge, answers } = setup();
    const [a, b] = add(entry("a"), entry("b"));
    expect(queue.unbuilt).toBe(true);
    await queue.build(R);
    expect(queue.unbuilt).toBe(false);
    expect(queue.built).toBe(2);
    expect(queue.base).toEqual(R);
    expect(queue.tip.commit).toBe("r1>a>b");
    expect(commits([a!, b!])).toEqual(["r1>a", "r1>a>b"]);
    expect(b!.outcome?.paths).toEqual(["b.yaml"]);
    expect(queue.batch()).toEqual([a, b]);
    expect(gauge).toEqual([1, 2]);
    expect(answers).toEqual({}); // answered only once pushed
  });

  it("answers an operation that commits nothing on top of nothing unpushed at once; after an unpushed commit it waits for the push", async () => {
    const { queue, entry, add, gauge, answers } = setup();
    const [, a, after] = add(entry("first", "nothing"), entry("a"), entry("after", "nothing"));
    await queue.build(R);
    expect(answers).toEqual({ first: { result: "same", commit: null } });
    expect(queue.entries).toEqual([a, after]);
    expect(commits(queue.entries)).toEqual(["r1>a", null]);
    expect(queue.tip.commit).toBe("r1>a");
    expect(gauge).toEqual([1, 2, 3, 2]);
  });

  it("hands an operation that throws to refused, out of the queue, and goes on with the next", async () => {
    const { queue, entry, add, refused, gauge } = setup();
    const boom = new Error("conflict");
    const [, bad, b] = add(entry("a"), entry("bad", boom), entry("b"));
    await queue.build(R);
    expect(refused).toEqual([{ entry: bad, error: boom }]);
    expect(queue.entries.includes(bad!)).toBe(false);
    expect(b!.outcome?.commit).toBe("r1>a>b");
    expect(gauge.at(-1)).toBe(2);
  });

  it("stops when told; a build on a newer remote tip drops the chain and runs everything again on it", async () => {
    const { queue, entry, add } = setup();
    const [a, b] = add(entry("a"), entry("b"));
    await queue.build(R, () => queue.built > 0);
    expect(queue.built).toBe(1);
    expect(a!.outcome?.commit).toBe("r1>a");
    await queue.build(R2);
    expect(queue.base).toEqual(R2);
    expect(commits([a!, b!])).toEqual(["r2>a", "r2>a>b"]);
  });

  it("after a push of the batch: it leaves the queue, and what ran on top of it stays on the chain, based on the pushed tip", async () => {
    const { queue, entry, add, gauge } = setup();
    const [a] = add(entry("a"));
    await queue.build(R);
    const pushedTip = queue.tip;
    const batch = queue.batch();
    const [b, c] = add(entry("b"), entry("c"));
    await queue.build(R, () => queue.built > 1); // b runs during the push
    queue.pushed(batch.length, pushedTip);
    expect(batch).toEqual([a]);
    expect(queue.entries).toEqual([b, c]);
    expect(queue.built).toBe(1);
    expect(queue.base).toEqual(pushedTip);
    expect(queue.tip.commit).toBe("r1>a>b");
    expect(gauge.at(-1)).toBe(2);
    await queue.build(pushedTip);
    expect(c!.outcome?.commit).toBe("r1>a>b>c"); // the chain was kept, not re-run
  });

  it("rejects what it is told with the error and drops the chain: what stays re-runs on the remote tip", async () => {
    const { queue, entry, add, answers, gauge } = setup();
    const [a, b] = add(entry("a"), entry("b"));
    await queue.build(R);
    const error = new Error("refused by a hook");
    queue.reject([a!], error, R);
    expect(answers).toEqual({ a: error });
    expect(queue.entries).toEqual([b]);
    expect(queue.built).toBe(0);
    expect(queue.tip).toEqual(R);
    expect(gauge.at(-1)).toBe(1);
    await queue.build(R);
    expect(b!.outcome?.commit).toBe("r1>b");
  });

  it("drops the late entries behind a push; the chain is cut back to the pushed tip only when one of them ran on it", async () => {
    const { queue, entry, add } = setup();
    const [a] = add(entry("a"));
    await queue.build(R);
    const pushedTip = queue.tip;
    const [b, c] = add(entry("b"), entry("c"));
    expect(queue.dropBehind(1, pushedTip, () => false)).toEqual([]);
    expect(queue.dropBehind(1, pushedTip, (e) => e === c)).toEqual([c]); // had not run: the chain stays
    expect(queue.entries).toEqual([a, b]);
    await queue.build(R);
    expect(queue.built).toBe(2);
    expect(queue.dropBehind(1, pushedTip, (e) => e === b || e === a)).toEqual([b]); // `a` is in the push: never dropped
    expect(queue.entries).toEqual([a]);
    expect(queue.built).toBe(1);
    expect(queue.tip).toEqual(pushedTip);
  });

  it("puts confirmed refusals back after what ran on the chain, ahead of what has not, and counts them", async () => {
    const { queue, entry, add, gauge } = setup();
    const [a, b] = add(entry("a"), entry("b"));
    await queue.build(R, () => queue.built > 0);
    const again = entry("again");
    queue.requeue([again]);
    expect(queue.entries).toEqual([a, again, b]);
    expect(gauge.at(-1)).toBe(3);
    await queue.build(R);
    expect(commits(queue.entries)).toEqual(["r1>a", "r1>a>again", "r1>a>again>b"]);
  });

  it("counts the batch's pushes rejected in a row until its pushes are over", () => {
    const { queue } = setup();
    expect(queue.pushRejected()).toBe(1);
    expect(queue.pushRejected()).toBe(2);
    queue.pushesSettled();
    expect(queue.pushRejected()).toBe(1);
  });
});
