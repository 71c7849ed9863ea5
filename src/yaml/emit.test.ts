import { describe, expect, it } from "vitest";
import { MANIFEST_STYLE } from "../render/yaml-output.js";
import { RECORD_STYLE } from "../repo/records.js";
import { libraryManifestYaml as oldManifestYaml, libraryRecordYaml as oldRecordYaml } from "../../test/support/yaml-oracle.js";
import { emitYaml, yamlOf, type YamlStyle } from "./index.js";
import { prng } from "../../test/support/prng.js";

/**
 * The emitter against the `yaml` library on generated values. The oracles are the calls the
 * broker made before the emitter (test/support/yaml-oracle.ts): the emitter must answer their
 * bytes, or answer undefined (and then yamlOf the library's).
 */

const NASTY = [
  "", " ", "yes", "No", "on", "Off", "y", "n", "Y", "N", "0777", "0o17", "0x1F", "0b101", "1_000", "1:20", "-1:20", "1:20.5", "1e3", "1E+3", ".5", "5.",
  "-", "- a", "-a", "?", "? a", "?a", ":", "a:", "a:b", "a: b", "#x", "a #b", "a#b", "'q'", "\"q\"", "it's", "say \"hi\"", "both ' and \"",
  "null", "Null", "NULL", "~", "true", "True", "FALSE", "12", "-12", "+12", "1.5", ".inf", "-.Inf", ".nan", "2026-11-29", "2026-11-29T10:00:00Z",
  "2026-11-29 10:00:00 +1", "2026-1-2", "a\nb", "a\n", "\nb", "a \nb", "a\n b", "a\n\nb", "\n", "é", "ünïcödé", "日本語", "😀", "\u2028", "\u0085", "\u00a0",
  "\x00", "\x07", "\x1b", "\r", "a\rb", "\t", "a\tb", "\ta", "a\t", "\ud800", "\\", "a\\b", "@x", "`x", "%x", "!x", "&x", "*x", "|x", ">x", "[x", "]x",
  "{x", "}x", "x]", "x}", ",", ",x", "x,", "a, b", "---", "--- a", "---x", "...", "...x", "a\n---\nb", "<<", "=", "a ", " a", "a  b", "  ", "a :b",
  "x".repeat(300), `${"word ".repeat(60)}end`, "k".repeat(1030), "10", "2", "007", "0", "-0",
  "postgres:16", "500m", "1Gi", "gitops-broker.io/instance-id", "/var/lib/postgresql/data", "app.kubernetes.io/name", "sha256:0af3", "registry.local/pg@sha256:ab12",
  "0304b210-fcfd-11e8-a31b-b6001f10c97f", "key=value", "a/b/c", "_x", "x_y", "A-Z.0-9", "apiVersion", "kind", "metadata", "name", "namespace",
];
const KEY_EXTRA = ["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf", "spec", "status", "labels", "10", "2", "1", "09", "-1"];
const ALPHABET = [..."aZ09._-/:# ?'\"\\\t\n,[]{}!&*|>%@`~=+éß".split(""), "😀", "\u2028", "\x00", "\x85", "\ud800"];

interface Gen {
  rnd: () => number;
  /** Only single-line strings, safe integers, booleans, null and undefined: what the emitter writes itself. */
  tame: boolean;
  pick<T>(xs: readonly T[]): T;
}

function gen(seed: number, tame = false): Gen {
  const rnd = prng(seed);
  return { rnd, tame, pick: (xs) => xs[Math.floor(rnd() * xs.length)]! };
}

function randomString(g: Gen): string {
  const s = anyString(g);
  return g.tame && s.includes("\n") ? s.replaceAll("\n", " ") : s;
}

function anyString(g: Gen): string {
  const r = g.rnd();
  if (r < 0.6) return g.pick(NASTY);
  if (r < 0.8) {
    let s = "";
    const n = Math.floor(g.rnd() * 8);
    for (let i = 0; i < n; i++) s += g.pick(ALPHABET);
    return s;
  }
  return `${g.pick(NASTY)}${g.pick(ALPHABET)}${g.pick(NASTY)}`;
}

function randomScalar(g: Gen): unknown {
  const r = g.rnd();
  if (r < 0.65) return randomString(g);
  if (r < 0.8) return g.pick(g.tame ? [0, 1, -1, 12, 5432, 1000000] : [0, 1, -1, 12, 5432, 1000000, -0, 1.5, 2 ** 53, 1e21, NaN, Infinity, -Infinity, 0.1]);
  if (r < 0.88) return g.rnd() < 0.5;
  if (r < 0.95) return null;
  if (r < 0.98 || g.tame) return undefined;
  return g.pick([new Date(0), 10n, () => 1, Symbol("s"), new Map([["a", 1]])]);
}

function setKey(map: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(map, key, { value, enumerable: true, writable: true, configurable: true });
}

function randomValue(g: Gen, depth: number): unknown {
  const r = g.rnd();
  if (depth >= 4 || r < 0.45) return randomScalar(g);
  if (r < 0.75) return randomMap(g, depth + 1);
  const n = Math.floor(g.rnd() * 4);
  return Array.from({ length: n }, () => randomValue(g, depth + 1));
}

/** Keys the emitter leaves to the library: Object.prototype's names, document markers, explicit (long) keys. */
const UNSURE_KEY = (k: string) => k in Object.prototype || /^(?:%|---|\.\.\.)/m.test(k) || k.length > 1000;

function randomKey(g: Gen): string {
  for (;;) {
    const k = g.rnd() < 0.2 ? g.pick(KEY_EXTRA) : randomString(g);
    if (!g.tame || !UNSURE_KEY(k)) return k;
  }
}

function randomMap(g: Gen, depth: number): Record<string, unknown> {
  const map: Record<string, unknown> = {};
  const n = Math.floor(g.rnd() * 5);
  for (let i = 0; i < n; i++) setKey(map, randomKey(g), randomValue(g, depth));
  return map;
}

/** A root like a Kubernetes object or a record: the first keys, metadata with name and namespace, then random keys. */
function randomDocument(g: Gen): Record<string, unknown> {
  const doc = randomMap(g, 0);
  if (g.rnd() < 0.5) {
    const metadata = randomMap(g, 2);
    setKey(metadata, "namespace", randomScalar(g));
    setKey(metadata, "name", randomScalar(g));
    setKey(doc, "metadata", metadata);
    setKey(doc, "kind", "ConfigMap");
    setKey(doc, "apiVersion", "v1");
  }
  return doc;
}

const SAFE_STRINGS = ["postgres:16", "500m", "1Gi", "app.kubernetes.io/name", "a b c", "yes", "0777", "1:20", "2026-11-29T10:00:00Z", "12", "null", "x-y_z", "/data"];

/** Values of the kinds the emitter writes itself: it must answer for every one of them. */
function safeValue(g: Gen, depth: number): unknown {
  const r = g.rnd();
  if (depth >= 4 || r < 0.5) return g.pick([...SAFE_STRINGS, 0, 7, -3, true, false, null]);
  if (r < 0.8) {
    const map: Record<string, unknown> = {};
    const n = Math.floor(g.rnd() * 4);
    for (let i = 0; i < n; i++) map[g.pick([...SAFE_STRINGS, "10", "2", "kind", "name"])] = safeValue(g, depth + 1);
    return map;
  }
  return Array.from({ length: Math.floor(g.rnd() * 4) }, () => safeValue(g, depth + 1));
}

type Outcome = { text: string } | { error: string };
function outcome(f: () => string): Outcome {
  try {
    return { text: f() };
  } catch (e) {
    return { error: e instanceof Error ? e.name : String(e) };
  }
}

const SEED = Number(process.env.YAML_FUZZ_SEED ?? 20261129);
const CASES = 4000;

describe.each([
  { name: "manifests (sorted, YAML 1.1 compat)", style: MANIFEST_STYLE, oracle: oldManifestYaml },
  { name: "records (insertion order, core schema)", style: RECORD_STYLE, oracle: oldRecordYaml },
])("emitter against the yaml library: $name", ({ style, oracle }: { style: YamlStyle; oracle: (v: unknown) => string }) => {
  it.each([
    { kind: "any values", tame: false, share: 0.2 },
    { kind: "single-line strings, integers, booleans, null", tame: true, share: 1 },
  ])(`writes the library's bytes or answers undefined: ${CASES} generated documents of $kind (seed ${SEED})`, ({ tame, share }) => {
    let answered = 0;
    for (let i = 0; i < CASES; i++) {
      const doc = randomDocument(gen(SEED + i, tame));
      const expected = outcome(() => oracle(doc));
      const emitted = emitYaml(doc, style);
      if (emitted !== undefined) {
        answered++;
        expect({ seed: SEED + i, text: emitted }).toEqual({ seed: SEED + i, ...expected });
      }
      expect({ seed: SEED + i, ...outcome(() => yamlOf(doc, style)) }).toEqual({ seed: SEED + i, ...expected });
    }
    // Not a test of "always undefined": the emitter answers a good share of the hostile documents, every tame one.
    expect(answered).toBeGreaterThanOrEqual(CASES * share);
  });

  it(`answers every document of plain values, ${CASES} generated documents`, () => {
    for (let i = 0; i < CASES; i++) {
      const g = gen(SEED * 7 + i);
      const doc = { kind: "x", metadata: { name: "n", labels: safeValue(g, 2) }, spec: safeValue(g, 1), data: safeValue(g, 1) };
      expect({ seed: SEED * 7 + i, text: emitYaml(doc, style) }).toEqual({ seed: SEED * 7 + i, text: oracle(doc) });
    }
  });

  it("answers each nasty string as a value and as a key the library's way, at every depth", () => {
    for (const s of [...NASTY, ...KEY_EXTRA]) {
      const asValues: Record<string, unknown> = { a: s, b: [s, [s]], c: { d: s, e: [{ f: s }] } };
      const asKeys: Record<string, unknown> = {};
      setKey(asKeys, s, 1);
      setKey(asKeys, "n", Object.defineProperty({}, s, { value: [Object.defineProperty({}, s, { value: s, enumerable: true })], enumerable: true }));
      for (const doc of [asValues, asKeys]) {
        const emitted = emitYaml(doc, style);
        const expected = outcome(() => oracle(doc));
        if (emitted !== undefined) expect({ s, text: emitted }).toEqual({ s, ...expected });
        expect({ s, ...outcome(() => yamlOf(doc, style)) }).toEqual({ s, ...expected });
      }
    }
  });
});

describe("fallback to the library", () => {
  it("is taken for what the emitter does not write itself, with the library's text", () => {
    const unsure: Record<string, unknown>[] = [
      { a: "line 1\nline 2\n" },
      { a: 1.5 },
      { a: new Date(0) },
      { a: 2 ** 53 },
      { "---x": 1 },
      { a: new Map([["k", "v"]]) },
      { constructor: { b: 1 } },
      { ["k".repeat(1030)]: 1 },
    ];
    for (const doc of unsure) {
      for (const [style, oracle] of [
        [MANIFEST_STYLE, oldManifestYaml],
        [RECORD_STYLE, oldRecordYaml],
      ] as const) {
        expect(emitYaml(doc, style)).toBeUndefined();
        expect(outcome(() => yamlOf(doc, style))).toEqual(outcome(() => oracle(doc)));
      }
    }
    expect(yamlOf({ a: "line 1\nline 2\n" }, RECORD_STYLE)).toBe("a: |\n  line 1\n  line 2\n");
  });

  it("is not taken for plain values: integer-like keys sort as strings in manifests, keep their order in records", () => {
    const doc = { metadata: { namespace: "ns", name: "n", b: "on" }, kind: "K", "10": 1, "2": "yes", apiVersion: "v1", a: [{ y: "1:20" }] };
    expect(emitYaml(doc, MANIFEST_STYLE)).toBe(
      'apiVersion: v1\nkind: K\nmetadata:\n  name: "n"\n  namespace: ns\n  b: "on"\n"10": 1\n"2": "yes"\na:\n  - "y": "1:20"\n',
    );
    expect(emitYaml(doc, RECORD_STYLE)).toBe('"2": yes\n"10": 1\nmetadata:\n  namespace: ns\n  name: n\n  b: on\nkind: K\napiVersion: v1\na:\n  - y: 1:20\n');
  });
});
