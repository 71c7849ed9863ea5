import { describe, expect, it } from "vitest";
import { Repacker } from "./repacker.js";

/** A store double: records the repacks in `events`, which the test appends to as well. */
function setup(needsCompaction: boolean, holdUntil?: PromiseLike<unknown>, owed = false) {
  const events: string[] = [];
  let release: () => void = () => undefined;
  let capped: () => void = () => undefined;
  const cap = new Promise<void>((resolve) => (capped = resolve));
  const logs: string[] = [];
  const log = (_obj: object, msg: string) => void logs.push(msg);
  const store = {
    needsCompaction,
    packCount: 30,
    deltaCapOwed: owed,
    oweDeltaCap: () => {
      store.deltaCapOwed = true;
      events.push("owe");
    },
    compact: () => new Promise<void>((resolve) => ((release = resolve), events.push("compact"))),
    capDeltaChains: async () => {
      store.deltaCapOwed = false;
      events.push("cap");
      capped();
    },
  };
  const repacker = new Repacker({ store, logger: { info: log, warn: log, error: log }, ...(holdUntil ? { holdUntil } : {}) });
  return { repacker, events, logs, release: () => release(), cap, store };
}

/** A promise and what settles it. */
function deferred(): { promise: Promise<void>; resolve: () => void; reject: (error: Error) => void } {
  let resolve: () => void = () => undefined;
  let reject: (error: Error) => void = () => undefined;
  const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("Repacker", () => {
  it("rolls up packs after a push only when needed, one repack at a time, in order", async () => {
    const { repacker, events, release, logs, cap } = setup(true);
    repacker.afterPush();
    repacker.afterPush(); // one compaction is running: not a second
    repacker.afterFetch(50_000); // owed, queued behind it
    await turn();
    expect(events).toEqual(["owe", "compact"]);
    release();
    await cap;
    await repacker.finish();
    expect(events).toEqual(["owe", "compact", "cap"]);
    expect(logs).toEqual(["packs compacted", "repacking the fetched pack with short delta chains", "fetched pack repacked with short delta chains"]);
  });

  it("leaves small fetches and a store with few packs alone", async () => {
    const { repacker, events } = setup(false);
    repacker.afterPush();
    repacker.afterFetch(10);
    await repacker.finish();
    expect(events).toEqual([]);
  });

  it("starts a clone's repack when the hold is released, not before", async () => {
    const hold = deferred();
    const { repacker, events, cap } = setup(true, hold.promise);
    repacker.afterFetch(50_000);
    repacker.afterPush(); // a repack is waiting: no second one
    for (let i = 0; i < 5; i++) await turn();
    events.push("view loaded");
    hold.resolve();
    await cap;
    expect(events).toEqual(["owe", "view loaded", "cap"]);
    await repacker.finish();
    expect(events).toEqual(["owe", "view loaded", "cap"]);
  });

  it("holds the roll-up after a push too, until the hold is released", async () => {
    const hold = deferred();
    const { repacker, events, release } = setup(true, hold.promise);
    repacker.afterPush();
    for (let i = 0; i < 5; i++) await turn();
    events.push("view loaded");
    hold.resolve();
    await turn();
    expect(events).toEqual(["view loaded", "compact"]);
    release();
    await repacker.finish();
  });

  it("finish() starts nothing held: a writer closed before the view loaded leaves its clone's repack owed to the next start", async () => {
    const { repacker, events, logs, store } = setup(false, new Promise<never>(() => undefined));
    repacker.afterFetch(50_000);
    await turn();
    expect(events).toEqual(["owe"]);
    await repacker.finish();
    for (let i = 0; i < 5; i++) await turn();
    expect(events).toEqual(["owe"]);
    expect(logs).toEqual([]);
    expect(store.deltaCapOwed).toBe(true);
  });

  it("finish() waits for the repack under way and drops the one queued behind it", async () => {
    const { repacker, events, release, logs, store } = setup(true);
    repacker.afterPush();
    repacker.afterFetch(50_000);
    await turn();
    expect(events).toEqual(["owe", "compact"]);
    let finished = false;
    const finishing = repacker.finish().then(() => (finished = true));
    for (let i = 0; i < 5; i++) await turn();
    expect(finished).toBe(false);
    release();
    await finishing;
    expect(events).toEqual(["owe", "compact"]);
    expect(logs).toEqual(["packs compacted"]);
    expect(store.deltaCapOwed).toBe(true);
  });

  it("a hold that fails (the view did not load) releases the repack as well", async () => {
    const hold = deferred();
    const { repacker, events, cap } = setup(false, hold.promise);
    repacker.afterFetch(50_000);
    await turn();
    expect(events).toEqual(["owe"]);
    hold.reject(new Error("the catalog did not load"));
    await cap;
    expect(events).toEqual(["owe", "cap"]);
    await repacker.finish();
  });

  it("at start, runs a repack a stopped process owed (held like any), once even when the fetch is large too", async () => {
    const hold = deferred();
    const { repacker, events, cap } = setup(false, hold.promise, true);
    repacker.atStart();
    repacker.afterFetch(50_000);
    await turn();
    expect(events).toEqual(["owe"]);
    hold.resolve();
    await cap;
    await repacker.finish();
    expect(events).toEqual(["owe", "cap"]);
  });

  it("at start, owes nothing when nothing is owed", async () => {
    const { repacker, events } = setup(false);
    repacker.atStart();
    repacker.afterFetch(10);
    await repacker.finish();
    expect(events).toEqual([]);
  });
});
