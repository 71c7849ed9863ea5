import { describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../errors/index.js";
import { backoffDelayMs } from "./index.js";

const POLICY = { baseMs: 1_000, capMs: 8_000 };

describe("backoffDelayMs", () => {
  it("doubles the step with each attempt, up to the cap, and waits between half and all of it", () => {
    const steps = [1_000, 2_000, 4_000, 8_000, 8_000, 8_000];
    steps.forEach((step, i) => {
      expect(backoffDelayMs(i + 1, POLICY, () => 0)).toBe(step / 2);
      expect(backoffDelayMs(i + 1, POLICY, () => 0.5)).toBe((step * 3) / 4);
      expect(backoffDelayMs(i + 1, POLICY, () => 0.999_999)).toBe(step);
    });
  });

  it("stays at the cap however many attempts failed (no overflow to Infinity or NaN)", () => {
    expect(backoffDelayMs(5_000, POLICY, () => 0.5)).toBe(6_000);
  });

  it("is never 0, whatever the random source says", () => {
    expect(backoffDelayMs(1, { baseMs: 25, capMs: 1_000 }, () => 0)).toBeGreaterThan(0);
  });

  it("refuses an attempt that is not a whole number from 1", () => {
    for (const attempt of [0, -1, 1.5, Number.NaN]) expect(() => backoffDelayMs(attempt, POLICY)).toThrow(InvalidArgumentError);
  });
});
