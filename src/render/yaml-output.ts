import { Document, isMap, isScalar, isSeq, type Pair } from "yaml";

/** Keys that come first in a map (in this order), then the others sorted; `nested` applies to the value of a key. */
interface KeyOrder {
  first: readonly string[];
  nested: Readonly<Record<string, KeyOrder>>;
}

const SORTED: KeyOrder = { first: [], nested: {} };

const MANIFEST: KeyOrder = {
  first: ["apiVersion", "kind", "metadata"],
  nested: { metadata: { first: ["name", "namespace"], nested: {} } },
};

/**
 * `compat: yaml-1.1` quotes strings that YAML 1.1 would read as something else (`yes`, `on`,
 * `y`, `0777`, `1:20`): Kubernetes, Argo CD and Flux read manifests with a YAML 1.1 parser, so
 * a string must stay a string for them too. Duplicate objects are written out, never aliased.
 */
function stringify(value: unknown, order: KeyOrder): string {
  const doc = new Document(value, { compat: "yaml-1.1", aliasDuplicateObjects: false });
  sortMaps(doc.contents, order);
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

function compareKeys(a: string, b: string, first: readonly string[]): number {
  const rank = (k: string) => (first.includes(k) ? first.indexOf(k) : first.length);
  return rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0);
}

/** The YAML text of one Kubernetes object: apiVersion, kind, metadata (name, namespace) first, the rest sorted. */
export function manifestYaml(object: Record<string, unknown>): string {
  return stringify(object, MANIFEST);
}

/** YAML of any value with every map sorted by key, without the final newline (for the `toYaml` helper). */
export function yamlText(value: unknown): string {
  const text = stringify(value === undefined ? null : value, SORTED).replace(/\n$/, "");
  // A block scalar at the root with an indentation indicator (`|1-`, for text starting with a
  // blank) would change meaning once `nindent` moves it; a double-quoted string cannot.
  return typeof value === "string" && /^[|>][-+]?\d/.test(text) ? JSON.stringify(value) : text;
}
