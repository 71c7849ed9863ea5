import { libraryYaml, SORTED, yamlOf, type YamlStyle } from "../yaml/index.js";

/**
 * `compat: yaml-1.1` quotes strings that YAML 1.1 would read as something else (`yes`, `on`,
 * `y`, `0777`, `1:20`): Kubernetes, Argo CD and Flux read manifests with a YAML 1.1 parser, so
 * a string must stay a string for them too. Duplicate objects are written out, never aliased.
 */
export const MANIFEST_STYLE: YamlStyle = {
  order: { first: ["apiVersion", "kind", "metadata"], nested: { metadata: { first: ["name", "namespace"], nested: {} } } },
  compat: "yaml-1.1",
};

const SORTED_1_1: YamlStyle = { order: SORTED, compat: "yaml-1.1" };

/** The YAML text of one Kubernetes object: apiVersion, kind, metadata (name, namespace) first, the rest sorted. */
export function manifestYaml(object: Record<string, unknown>): string {
  return yamlOf(object, MANIFEST_STYLE);
}

/** YAML of any value with every map sorted by key, without the final newline (for the `toYaml` helper). */
export function yamlText(value: unknown): string {
  const text = libraryYaml(value === undefined ? null : value, SORTED_1_1).replace(/\n$/, "");
  // A block scalar at the root with an indentation indicator (`|1-`, for text starting with a
  // blank) would change meaning once `nindent` moves it; a double-quoted string cannot.
  return typeof value === "string" && /^[|>][-+]?\d/.test(text) ? JSON.stringify(value) : text;
}
