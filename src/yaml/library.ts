import { Document, isMap, isScalar, isSeq, type Pair } from "yaml";

/** Keys that come first in a map (in this order), then the others sorted; `nested` applies to the value of a key. */
export interface KeyOrder {
  first: readonly string[];
  nested: Readonly<Record<string, KeyOrder>>;
}

/**
 * How a document is written, always in block style with `lineWidth: 0` and duplicate objects
 * written out, never aliased. `order`: every map sorted by it; absent: keys in insertion order.
 * `compat: "yaml-1.1"`: strings a YAML 1.1 parser would read as something else (`yes`, `on`, `y`,
 * `0777`, `1:20`, dates) are quoted too; absent: only what YAML 1.2's core schema would misread.
 */
export interface YamlStyle {
  readonly order?: KeyOrder;
  readonly compat?: "yaml-1.1";
}

export const SORTED: KeyOrder = { first: [], nested: {} };

function documentOf(value: unknown, style: YamlStyle): Document {
  return new Document(value, style.compat === undefined ? { aliasDuplicateObjects: false } : { compat: style.compat, aliasDuplicateObjects: false });
}

/** The `yaml` library's text of `value` in `style`: the oracle the emitter (emit.ts) must match byte for byte. */
export function libraryYaml(value: unknown, style: YamlStyle): string {
  const doc = documentOf(value, style);
  if (style.order !== undefined) sortMaps(doc.contents, style.order);
  return doc.toString({ lineWidth: 0 });
}

/**
 * Sorts the map nodes rather than the JS objects: JS objects always enumerate integer-like keys
 * (`"10"`, `"2"`) first, whatever order they were inserted in.
 */
function sortMaps(node: unknown, order: KeyOrder): void {
  if (isMap(node)) {
    node.items.sort((a, b) => compareKeys(keyOf(a), keyOf(b), order.first));
    for (const pair of node.items) sortMaps(pair.value, order.nested[keyOf(pair)] ?? SORTED);
  } else if (isSeq(node)) {
    for (const item of node.items) sortMaps(item, SORTED);
  }
}

function keyOf(pair: Pair): string {
  return isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
}

/** `first` keys in their order, then the others by UTF-16 code unit. */
export function compareKeys(a: string, b: string, first: readonly string[]): number {
  const ra = first.indexOf(a);
  const rb = first.indexOf(b);
  return (ra === -1 ? first.length : ra) - (rb === -1 ? first.length : rb) || (a < b ? -1 : a > b ? 1 : 0);
}

/**
 * The patterns of the style's schema (and compat schema) that make a plain scalar something
 * other than a string: the library quotes a string that matches one (its plainString). One
 * pattern, their alternation, when they all have the same flags and no back-references (the
 * library's: no flags, none).
 */
export function nonStringPatterns(style: YamlStyle): RegExp[] {
  const { tags, compat } = documentOf(null, style).schema;
  const out: RegExp[] = [];
  for (const tag of [...tags, ...(compat ?? [])]) {
    if (!tag.default || tag.tag === "tag:yaml.org,2002:str" || tag.test === undefined) continue;
    // A copy without g/y: `test` must not depend on a previous call.
    out.push(new RegExp(tag.test.source, tag.test.flags.replace(/[gy]/g, "")));
  }
  const flags = out[0]?.flags ?? "";
  if (out.length < 2 || out.some((re) => re.flags !== flags || /\\[1-9k]/.test(re.source))) return out;
  try {
    // No anchor of its own: it matches where one of them would.
    return [new RegExp(out.map((re) => `(?:${re.source})`).join("|"), flags)];
  } catch {
    return out; // e.g. a group name used twice
  }
}
