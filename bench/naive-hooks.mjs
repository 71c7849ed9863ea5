// Module resolution hook for bench/naive-broker.ts: `gitops-broker serve` unchanged, except that
// src/cli/serve.ts gets its createGitWriter from bench/naive-gitwriter.ts.
const SHIM = new URL("./naive-gitwriter.ts", import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if (specifier === "../gitwriter/index.js" && context.parentURL?.endsWith("/src/cli/serve.ts")) {
    // Through the next hooks (tsx's), so the TypeScript shim is loaded like any source file.
    return nextResolve(SHIM, context);
  }
  return nextResolve(specifier, context);
}
