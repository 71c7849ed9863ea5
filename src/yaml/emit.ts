import { LRUCache } from "lru-cache";
import { compareKeys, libraryYaml, nonStringPatterns, SORTED, type KeyOrder, type YamlStyle } from "./library.js";

/**
 * The block YAML the `yaml` library writes (libraryYaml), for the values the broker writes, without
 * building the library's node tree (ADR 0040). It writes plain objects, arrays, strings, safe
 * integers, booleans and null, and answers undefined for anything else, and for any string whose
 * text it cannot vouch for in every place it may stand: the caller then asks the library.
 *
 * What makes it the library's text, rule by rule (yaml 2.x, stringifyPair, stringifyCollection,
 * stringifyString): a map is `key: value` lines, a nested collection on the next lines two spaces
 * deeper (sequences too: `indentSeq`), a sequence `- item` lines, the first pair of a map in a
 * sequence on the `- ` line, an empty collection `{}` / `[]`, a pair whose value is undefined left
 * out, an undefined sequence item `null`. A string's text does not depend on where it stands
 * as long as it has no line break (`lineWidth: 0` folds nothing; only line breaks are indented) and
 * it is not a key starting a document marker (`---`, `...`, `%`: quoted only at the root).
 */

const MAX_DEPTH = 100;
/** Strings up to this length are remembered, up to MEMO_SIZE of them per style and position. */
const MEMO_LENGTH = 256;
const MEMO_SIZE = 4096;
/** A key longer than this is written as an explicit key (`? key`). */
const MAX_IMPLICIT_KEY = 1024;

/**
 * A string the library writes plain unless the schema reads it as another type: it starts with
 * no indicator, holds no line break, tab, `: ` or ` #`, and does not end with a space or `:`.
 * Nothing in it needs an escape, so quoted it is `"<text>"`.
 */
const PLAIN = /^[A-Za-z0-9_/][\w./+=@-]*(?:[: ][\w./+=@-]+)*$/;
const DOCUMENT_MARKER = /^(?:%|---|\.\.\.)/m;

/** What the memo keeps for a string whose text spans lines (no scalar's text is empty). */
const SPANS_LINES = "";

interface Scalars {
  style: YamlStyle;
  nonString: RegExp[];
  values: LRUCache<string, string>;
  keys: LRUCache<string, string>;
}

const scalarsOf = new WeakMap<YamlStyle, Scalars>();

function scalars(style: YamlStyle): Scalars {
  let s = scalarsOf.get(style);
  if (s === undefined) {
    s = { style, nonString: nonStringPatterns(style), values: new LRUCache({ max: MEMO_SIZE }), keys: new LRUCache({ max: MEMO_SIZE }) };
    scalarsOf.set(style, s);
  }
  return s;
}

function plainOrQuoted(s: Scalars, text: string): string {
  for (const re of s.nonString) if (re.test(text)) return `"${text}"`;
  return text;
}

/** The library's text of a string as a key or as a value, asked once for a short string. */
function remembered(s: Scalars, text: string, key: boolean): string | undefined {
  const probe = key ? probeKey : probeValue;
  if (text.length > MEMO_LENGTH) return probe(s, text) ?? undefined;
  const memo = key ? s.keys : s.values;
  let out = memo.get(text);
  if (out === undefined) {
    out = probe(s, text) ?? SPANS_LINES;
    // A copy, exact to the code unit (lone surrogates too): a substring of a parsed template's
    // output would keep that whole text alive in the memo.
    memo.set(JSON.parse(JSON.stringify(text)) as string, out);
  }
  return out === SPANS_LINES ? undefined : out;
}

/** The library's text of a string as a map value or sequence item, or null when it spans lines. */
function probeValue(s: Scalars, text: string): string | null {
  if (text.includes("\n")) return null;
  const doc = libraryYaml({ k: text }, s.style);
  const out = doc.slice(3, -1);
  return doc.startsWith("k: ") && doc.endsWith("\n") && !out.includes("\n") ? out : null;
}

/** The library's text of a string as an implicit key, or null when that depends on the key's depth. */
function probeKey(s: Scalars, text: string): string | null {
  if (text.includes("\n") || DOCUMENT_MARKER.test(text)) return null;
  const doc = libraryYaml({ [text]: 0 }, s.style);
  const out = doc.slice(0, -4);
  return doc.endsWith(": 0\n") && !out.includes("\n") && out.length <= MAX_IMPLICIT_KEY ? out : null;
}

function valueText(s: Scalars, text: string): string | undefined {
  return PLAIN.test(text) ? plainOrQuoted(s, text) : remembered(s, text, false);
}

function keyText(s: Scalars, key: string): string | undefined {
  // An inherited name would make the library's sortMaps look up Object.prototype's members.
  if (key in Object.prototype) return undefined;
  if (PLAIN.test(key)) return key.length > MAX_IMPLICIT_KEY - 2 ? undefined : plainOrQuoted(s, key);
  return remembered(s, key, true);
}

function scalarText(s: Scalars, value: unknown): string | undefined {
  switch (typeof value) {
    case "string":
      return valueText(s, value);
    case "number":
      return Number.isSafeInteger(value) && !Object.is(value, -0) ? String(value) : undefined;
    case "boolean":
      return value ? "true" : "false";
    default:
      return value === null ? "null" : undefined;
  }
}

type PlainMap = Record<string, unknown>;

/** An object the library writes as a map of its own enumerable string keys. */
function isPlainMap(value: unknown): value is PlainMap {
  if (value === null || typeof value !== "object") return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return (proto === Object.prototype || proto === null) && !(Symbol.iterator in value) && typeof (value as { toJSON?: unknown }).toJSON !== "function";
}

function isPlainArray(value: unknown): value is unknown[] {
  return Array.isArray(value) && Object.getPrototypeOf(value) === Array.prototype;
}

interface Walk {
  s: Scalars;
  /** Whether maps are sorted (the style's order) or keep insertion order. */
  sorted: boolean;
}

function definedKeys(map: PlainMap, order: KeyOrder | undefined): string[] {
  const keys: string[] = [];
  for (const k of Object.keys(map)) if (map[k] !== undefined) keys.push(k);
  if (order === undefined) return keys;
  // Without `first`, compareKeys is the default sort's order: by UTF-16 code unit.
  return order.first.length === 0 ? keys.sort() : keys.sort((a, b) => compareKeys(a, b, order.first));
}

/** A non-empty map's pairs, the first without indentation, the others on lines of their own at `indent`. */
function mapText(w: Walk, map: PlainMap, keys: string[], indent: string, order: KeyOrder | undefined, depth: number): string | undefined {
  let out = "";
  for (const key of keys) {
    const k = keyText(w.s, key);
    if (k === undefined) return undefined;
    const nested = order === undefined ? undefined : (order.nested[key] ?? SORTED);
    const v = pairValueText(w, map[key], indent, nested, depth);
    if (v === undefined) return undefined;
    out += out === "" ? `${k}:${v}` : `\n${indent}${k}:${v}`;
  }
  return out;
}

/** What follows `key:`: ` scalar`, ` {}`, ` []`, or the collection on the next lines, two spaces deeper. */
function pairValueText(w: Walk, value: unknown, indent: string, order: KeyOrder | undefined, depth: number): string | undefined {
  const inner = `${indent}  `;
  const block = collectionText(w, value, inner, order, depth + 1);
  if (block === undefined) return undefined;
  if (block !== null) return block.empty ? ` ${block.text}` : `\n${inner}${block.text}`;
  const scalar = scalarText(w.s, value);
  return scalar === undefined ? undefined : ` ${scalar}`;
}

/** A sequence's items, `- ` each, the first without indentation, the others at `indent`. */
function seqText(w: Walk, items: unknown[], indent: string, depth: number): string | undefined {
  let out = "";
  const inner = `${indent}  `;
  for (const raw of items) {
    const item = raw === undefined ? null : raw;
    const block = collectionText(w, item, inner, w.sorted ? SORTED : undefined, depth + 1);
    if (block === undefined) return undefined;
    const text = block === null ? scalarText(w.s, item) : block.text;
    if (text === undefined) return undefined;
    out += out === "" ? `- ${text}` : `\n${indent}- ${text}`;
  }
  return out;
}

/**
 * A map or sequence as its text (its first line without indentation, the others at `indent`),
 * `empty` for `{}` / `[]`; null when `value` is not a collection; undefined when this emitter
 * cannot write it.
 */
function collectionText(
  w: Walk,
  value: unknown,
  indent: string,
  order: KeyOrder | undefined,
  depth: number,
): { text: string; empty: boolean } | null | undefined {
  if (value === null || typeof value !== "object") return null;
  if (depth > MAX_DEPTH) return undefined;
  if (isPlainArray(value)) {
    if (value.length === 0) return { text: "[]", empty: true };
    const text = seqText(w, value, indent, depth);
    return text === undefined ? undefined : { text, empty: false };
  }
  if (!isPlainMap(value)) return undefined;
  const keys = definedKeys(value, order);
  if (keys.length === 0) return { text: "{}", empty: true };
  const text = mapText(w, value, keys, indent, order, depth);
  return text === undefined ? undefined : { text, empty: false };
}

/**
 * `libraryYaml(value, style)` for a plain object of the values described above, without the
 * library; undefined when this emitter is not sure of every byte (then ask the library).
 */
export function emitYaml(value: unknown, style: YamlStyle): string | undefined {
  if (!isPlainMap(value)) return undefined;
  const w: Walk = { s: scalars(style), sorted: style.order !== undefined };
  const block = collectionText(w, value, "", style.order, 0);
  return block === undefined || block === null ? undefined : `${block.text}\n`;
}

/** The library's text of `value` in `style`: the emitter's where it is sure, the library's otherwise. */
export function yamlOf(value: unknown, style: YamlStyle): string {
  return emitYaml(value, style) ?? libraryYaml(value, style);
}
