/** scripts/own-words.mjs, for its tests. */
export const FORMS: { pattern: RegExp; instead: string }[];
export function ownWordsProblems(root: string): string[];
