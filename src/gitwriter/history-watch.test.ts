import { describe, expect, it } from "vitest";
import { HistoryWatch } from "./history-watch.js";
import type { LostCommit } from "./remote.js";

function setup(lost: (previous: string, tip: string) => LostCommit[] | Error) {
  const logs: { msg: string; obj: Record<string, unknown> }[] = [];
  const gauge: number[] = [];
  const log = (obj: object, msg: string) => void logs.push({ msg, obj: obj as Record<string, unknown> });
  const watch = new HistoryWatch({
    lostCommits: async (previous, tip) => {
      const result = lost(previous, tip);
      if (result instanceof Error) throw result;
      return result;
    },
    logger: { info: log, warn: log, error: log },
    metrics: { lostCommits: { set: (v: number) => void gauge.push(v), inc: () => undefined, reset: () => undefined } as never },
    labels: { store: "control" },
    now: () => new Date("2026-11-29T00:00:00Z"),
  });
  return { watch, logs, gauge };
}

const erased: LostCommit[] = [{ commit: "c2", subject: "provision x", instanceIds: ["x"] }];

describe("HistoryWatch", () => {
  it("a fast-forward erases nothing", async () => {
    const { watch, logs } = setup(() => []);
    await watch.check("a", "b");
    expect(watch.rewrite).toBeUndefined();
    expect(logs).toEqual([]);
  });

  it("a force-push erasing acknowledged operations is an error naming them, kept until they are back", async () => {
    let back = false;
    const { watch, logs, gauge } = setup((previous) => (back ? [] : previous === "c2" ? erased : []));
    await watch.check("c2", "c1");
    expect(watch.rewrite).toMatchObject({ previousTip: "c2", tip: "c1", lostInstances: ["x"], noticedAt: "2026-11-29T00:00:00.000Z" });
    expect(logs[0]).toMatchObject({ msg: "the remote branch was rewritten: acknowledged operations are gone from it; following the remote" });
    back = true;
    await watch.check("c1", "c3");
    expect(watch.rewrite).toBeUndefined();
    expect(gauge).toEqual([1, 0]);
  });

  it("a check that cannot be made is a warning, never a failure", async () => {
    const { watch, logs } = setup(() => new Error("bad object"));
    await watch.check("a", "b");
    expect(logs[0]?.msg).toBe("cannot tell whether the remote branch was rewritten");
  });
});
