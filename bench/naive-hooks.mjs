// Module resolution hook for bench/naive-broker.ts: `gitops-broker serve` unchanged, except that
// every module importing src/gitwriter gets bench/naive-gitwriter.ts instead, which is
// src/gitwriter with the naive writer's createGitWriter. Matched on the resolved file, not on who
// imports it: the call site has moved (src/cli/serve.ts, then src/stores/open.ts on 2026-11-27,
// f37553a), and a hook matching on it silently benchmarked the real writer against itself.
const SHIM = new URL("./naive-gitwriter.ts", import.meta.url).href;
const GITWRITER = new URL("../src/gitwriter/index.ts", import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  if (resolved.url === GITWRITER && context.parentURL !== SHIM) {
    // Through the next hooks (tsx's), so the TypeScript shim is loaded like any source file.
    return nextResolve(SHIM, context);
  }
  return resolved;
}
