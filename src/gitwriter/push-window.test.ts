import { describe, expect, it } from "vitest";
import { PushWindow, pushSpacingMs } from "./push-window.js";

describe("PushWindow", () => {
  it("spaces pushes by the window plus a tenth of it, at most 5 s more; no window, no spacing", () => {
    expect(pushSpacingMs(0)).toBe(0);
    expect(pushSpacingMs(10_000)).toBe(11_000);
    expect(pushSpacingMs(2_000)).toBe(2_200);
    expect(pushSpacingMs(600_000)).toBe(605_000);
  });

  it("opens a window after the start of the last push the remote saw", () => {
    const window = new PushWindow(10_000);
    expect(window.paced).toBe(true);
    expect(window.opensAt).toBe(Number.NEGATIVE_INFINITY);
    window.counted(1_000);
    expect(window.opensAt).toBe(12_000);
    expect(new PushWindow(0).paced).toBe(false);
  });

  it("counts what each operation on the chain waited, from its arrival or the hold, whichever is later", () => {
    const window = new PushWindow(10_000);
    const early: { queuedAt: number; windowWaitMs?: number } = { queuedAt: 100 };
    const late = { queuedAt: 5_000, windowWaitMs: 7 };
    window.open(9_000, [early, late]);
    expect(early).toEqual({ queuedAt: 100 }); // not held: nothing waited
    expect(window.openedAt).toBe(Number.NEGATIVE_INFINITY);
    window.hold(2_000);
    window.hold(3_000); // held already: the first hold counts
    window.open(9_000, [early, late]);
    expect(early.windowWaitMs).toBe(7_000);
    expect(late.windowWaitMs).toBe(7 + 4_000);
    expect(window.openedAt).toBe(9_000);
  });
});
