/**
 * Deterministic YAML out: the `yaml` library's block style, written by our own emitter where it
 * is sure of every byte and by the library otherwise (ADR 0040). Imports no other component:
 * the renderer (manifests) and the repository records both write through it.
 */
export { emitYaml, yamlOf } from "./emit.js";
export { libraryYaml, SORTED, type KeyOrder, type YamlStyle } from "./library.js";
