import { spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import { acquireSlot, slotCount, SLOTS_VARIABLE, type Slot } from "./file-slots.js";
import { createTempDir } from "./git-fixtures.js";
import { EVENT_CEILING_MS } from "./processes.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const held: Slot[] = [];
afterEach(async () => {
  await Promise.all(held.splice(0).map((slot) => slot.release()));
});
const take = async (dir: string, count: number) => {
  const slot = await acquireSlot({ dir, count });
  held.push(slot);
  return slot;
};

describe("test-file slots shared by every run on the machine", () => {
  it("hands out each slot once; a further file waits until one is released, then gets that one", async () => {
    const dir = await createTempDir("slots-");
    const [a, b] = [await take(dir, 2), await take(dir, 2)];
    expect([a.number, b.number].sort()).toEqual([0, 1]);

    let noticed = 0;
    const third = acquireSlot({ dir, count: 2, waitNoticeMs: 200, onWait: () => noticed++ });
    // Still waiting while both are held (the turnstile looks once a second).
    const early = await Promise.race([third.then(() => "got one"), new Promise((r) => setTimeout(r, 2_500, "waiting"))]);
    expect(early).toBe("waiting");
    expect(noticed).toBe(1);

    await a.release();
    held.splice(held.indexOf(a), 1);
    const c = await third;
    held.push(c);
    expect(c.number).toBe(a.number);
  }, EVENT_CEILING_MS);

  it("a slot whose process was killed with SIGKILL is free again (the kernel drops the lock)", async () => {
    const dir = await createTempDir("slots-");
    // Another worker: a node process that takes the only slot, says so, and is then killed.
    const child = spawn(process.execPath, ["--import", "tsx", "-e", `import { acquireSlot } from ${JSON.stringify(path.join(HERE, "file-slots.ts"))}; await acquireSlot({ dir: ${JSON.stringify(dir)}, count: 1 }); console.log("held"); setInterval(() => {}, 1000);`], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      let out = "";
      child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
      await vi.waitFor(() => expect(out).toContain("held"), { timeout: EVENT_CEILING_MS, interval: 50 });
      let got = false;
      const mine = acquireSlot({ dir, count: 1 }).then((slot) => {
        got = true;
        held.push(slot);
        return slot;
      });
      await new Promise((r) => setTimeout(r, 2_500));
      expect(got).toBe(false);
      child.kill("SIGKILL");
      await once(child, "exit");
      expect((await mine).number).toBe(0);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
  }, EVENT_CEILING_MS);

  it(`${SLOTS_VARIABLE} sets the number (0: no limit); anything but a whole number is refused`, () => {
    expect(slotCount({ [SLOTS_VARIABLE]: "3" })).toBe(3);
    expect(slotCount({ [SLOTS_VARIABLE]: "0" })).toBe(0);
    expect(slotCount({})).toBeGreaterThanOrEqual(3);
    expect(() => slotCount({ [SLOTS_VARIABLE]: "two" })).toThrow(/whole number/);
    expect(() => slotCount({ [SLOTS_VARIABLE]: "-1" })).toThrow(/whole number/);
  });
});

