import { describe, expect, it } from "vitest";
import { Repacker } from "./repacker.js";

function setup(needsCompaction: boolean) {
  const ran: string[] = [];
  let release: () => void = () => undefined;
  const logs: string[] = [];
  const log = (_obj: object, msg: string) => void logs.push(msg);
  const store = {
    needsCompaction,
    packCount: 30,
    compact: () => new Promise<void>((resolve) => ((release = resolve), ran.push("compact"))),
    capDeltaChains: async () => void ran.push("cap"),
  };
  const repacker = new Repacker({ store, logger: { info: log, warn: log, error: log } });
  return { repacker, ran, logs, release: () => release() };
}

describe("Repacker", () => {
  it("rolls up packs after a push only when needed, one repack at a time, in order", async () => {
    const { repacker, ran, release, logs } = setup(true);
    repacker.afterPush();
    repacker.afterPush(); // one compaction is running: not a second
    repacker.afterFetch(50_000); // queued behind it
    await new Promise((resolve) => setImmediate(resolve));
    expect(ran).toEqual(["compact"]);
    release();
    await repacker.finish();
    expect(ran).toEqual(["compact", "cap"]);
    expect(logs).toEqual(["packs compacted", "fetched pack repacked with short delta chains"]);
  });

  it("leaves small fetches and a store with few packs alone", async () => {
    const { repacker, ran } = setup(false);
    repacker.afterPush();
    repacker.afterFetch(10);
    await repacker.finish();
    expect(ran).toEqual([]);
  });
});
