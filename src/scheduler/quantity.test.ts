import { describe, expect, it } from "vitest";
import { formatQuantity, parseQuantity } from "./quantity.js";

const GIB = 1n << 30n;
const NANO = 1_000_000_000n;

describe("parseQuantity", () => {
  it.each<[string | number, bigint, boolean]>([
    // cpu
    ["1", NANO, false],
    ["500m", 500_000_000n, false],
    ["1.5", 1_500_000_000n, false],
    [".5", 500_000_000n, false],
    ["2.", 2n * NANO, false],
    ["0", 0n, false],
    ["100n", 100n, false],
    ["250u", 250_000n, false],
    ["+3", 3n * NANO, false],
    ["-1", -NANO, false],
    [1, NANO, false],
    [0.25, 250_000_000n, false],
    // memory, binary and decimal
    ["512Mi", 512n * (1n << 20n) * NANO, true],
    ["2Gi", 2n * GIB * NANO, true],
    ["1.5Gi", 3n * (GIB / 2n) * NANO, true],
    ["1Ki", 1024n * NANO, true],
    ["1Ei", (1n << 60n) * NANO, true],
    ["1G", 1_000_000_000n * NANO, false],
    ["1k", 1000n * NANO, false],
    ["1M", 1_000_000n * NANO, false],
    ["1T", 10n ** 12n * NANO, false],
    ["1P", 10n ** 15n * NANO, false],
    ["1E", 10n ** 18n * NANO, false],
    // exponents
    ["1e3", 1000n * NANO, false],
    ["1E3", 1000n * NANO, false],
    ["1.5e-3", 1_500_000n, false],
    ["2e+2", 200n * NANO, false],
    [1e21, 10n ** 21n * NANO, false],
    // finer than a nano-unit rounds up, as Kubernetes does
    ["0.1n", 1n, false],
    ["1e-12", 1n, false],
    ["1.0000000001", NANO + 1n, false],
  ])("%j", (text, nano, binary) => {
    expect(parseQuantity(text)).toEqual({ nano, binary });
  });

  it.each<string | number>(["", " 1", "1 ", "Mi", "1.5.5", "1mi", "1KB", "1e", "1e1.5", "1Gi2", "abc", "--1", ".", "1e2000", NaN, Infinity])(
    "rejects %j",
    (text) => {
      expect(parseQuantity(text)).toBeUndefined();
    },
  );
});

describe("formatQuantity", () => {
  it.each<[bigint, boolean, string]>([
    [0n, false, "0"],
    [NANO, false, "1"],
    [1_500_000_000n, false, "1500m"],
    [250_000n, false, "250u"],
    [7n, false, "7n"],
    [4000n * NANO, false, "4k"],
    [1_500_000n * NANO, false, "1500k"],
    [10n ** 9n * NANO, false, "1G"],
    [1234n * NANO, false, "1234"],
    [2n * GIB * NANO, true, "2Gi"],
    [1536n * (1n << 20n) * NANO, true, "1536Mi"],
    [1000n * NANO, true, "1000"],
    [-2n * NANO, false, "-2"],
  ])("%s nano (binary %s) is %j", (nano, binary, text) => {
    expect(formatQuantity({ nano, binary })).toBe(text);
  });

  it.each(["500m", "1536Mi", "2Gi", "3k", "7n", "12"])("round-trips %j", (text) => {
    const q = parseQuantity(text);
    expect(q && formatQuantity(q)).toBe(text);
  });
});
