/**
 * Kubernetes resource quantities ("500m", "1.5", "512Mi", "1G", "1e3"), held exactly as
 * bigint nano-units so that sums and comparisons never suffer from floating point.
 * Grammar: apimachinery `resource.Quantity` (sign, digits with optional fraction, then a
 * binary suffix Ki..Ei, a decimal suffix n u m k M G T P E, or an exponent e<int>/E<int>).
 */

/** An exact quantity in nano-units (10^-9); `binary` if written with Ki..Ei (kept for formatting sums). */
export interface Quantity {
  nano: bigint;
  binary: boolean;
}

const NANO = 1_000_000_000n;
const BINARY_SUFFIXES: ReadonlyArray<readonly [string, bigint]> = [
  ["Ei", 1n << 60n],
  ["Pi", 1n << 50n],
  ["Ti", 1n << 40n],
  ["Gi", 1n << 30n],
  ["Mi", 1n << 20n],
  ["Ki", 1n << 10n],
];
const DECIMAL_SUFFIXES: ReadonlyArray<readonly [string, number]> = [
  ["E", 18],
  ["P", 15],
  ["T", 12],
  ["G", 9],
  ["M", 6],
  ["k", 3],
  ["", 0],
  ["m", -3],
  ["u", -6],
  ["n", -9],
];
const NUMBER = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(.*)$/;
const EXPONENT = /^[eE]([+-]?\d+)$/;
/** Keeps the bigint powers bounded; no real quantity comes near 10^±1000. */
const MAX_EXPONENT = 1000;

/** The quantity, or undefined if `text` is not a Kubernetes quantity. Numbers (YAML `cpu: 1`) are read as written. */
export function parseQuantity(text: string | number): Quantity | undefined {
  if (typeof text === "number" && !Number.isFinite(text)) return undefined;
  const match = NUMBER.exec(String(text));
  if (!match) return undefined;
  const [, sign = "", number = "", suffix = ""] = match;
  const [whole = "", fraction = ""] = number.split(".");
  const mantissa = BigInt(whole + fraction || "0");

  let exponent: number;
  let multiplier = 1n;
  const binary = BINARY_SUFFIXES.find(([s]) => s === suffix);
  const decimal = DECIMAL_SUFFIXES.find(([s]) => s === suffix);
  const written = EXPONENT.exec(suffix);
  if (binary) {
    exponent = 0;
    multiplier = binary[1];
  } else if (decimal) {
    exponent = decimal[1];
  } else if (written?.[1] !== undefined) {
    exponent = Number(written[1]);
    if (Math.abs(exponent) > MAX_EXPONENT) return undefined;
  } else {
    return undefined;
  }

  const power = exponent + 9 - fraction.length;
  const scaled = mantissa * multiplier;
  // Finer than a nano-unit rounds up (away from zero), as Kubernetes does ("0.1n" -> "1n").
  const magnitude = power >= 0 ? scaled * 10n ** BigInt(power) : ceilDiv(scaled, 10n ** BigInt(-power));
  return { nano: sign === "-" ? -magnitude : magnitude, binary: binary !== undefined };
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}

/** Canonical text: whole units with the largest exact suffix (binary if `binary`), else m/u/n. */
export function formatQuantity({ nano, binary }: Quantity): string {
  if (nano % NANO !== 0n) {
    if (nano % 1_000_000n === 0n) return `${nano / 1_000_000n}m`;
    if (nano % 1000n === 0n) return `${nano / 1000n}u`;
    return `${nano}n`;
  }
  const units = nano / NANO;
  if (units === 0n) return "0";
  const suffixes = binary
    ? BINARY_SUFFIXES
    : DECIMAL_SUFFIXES.filter(([, e]) => e > 0).map(([s, e]) => [s, 10n ** BigInt(e)] as const);
  const fit = suffixes.find(([, m]) => units % m === 0n);
  return fit ? `${units / fit[1]}${fit[0]}` : `${units}`;
}
