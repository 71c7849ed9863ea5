import { Document, isMap, isScalar, isSeq, stringify, type Pair } from "yaml";

/**
 * The YAML the broker wrote before it had its own emitter (src/render/yaml-output.ts and
 * src/repo/records.ts of 5695e31), kept verbatim: src/yaml's emitter must write these bytes
 * (ADR 0040).
 */

interface Order {
  first: readonly string[];
  nested: Readonly<Record<string, Order>>;
}
const SORTED: Order = { first: [], nested: {} };
const MANIFEST: Order = { first: ["apiVersion", "kind", "metadata"], nested: { metadata: { first: ["name", "namespace"], nested: {} } } };

export function libraryManifestYaml(value: unknown): string {
  const doc = new Document(value, { compat: "yaml-1.1", aliasDuplicateObjects: false });
  sortMaps(doc.contents, MANIFEST);
  return doc.toString({ lineWidth: 0 });
}

function sortMaps(node: unknown, order: Order): void {
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

export function libraryRecordYaml(value: unknown): string {
  return stringify(value, { lineWidth: 0, aliasDuplicateObjects: false, sortMapEntries: false });
}
