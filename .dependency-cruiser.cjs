/**
 * The shape of src/ (ADR 0010): no import cycle between files or between folders, and a folder is
 * entered only through its index.ts. `npm run deps` (part of `npm test`) checks it.
 * @type {import('dependency-cruiser').IConfiguration}
 */
module.exports = {
  forbidden: [
    {
      name: "no-file-cycle",
      severity: "error",
      comment: "A cycle between files: the layout is the data flow, so nothing imports what imports it.",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "no-folder-cycle",
      severity: "error",
      scope: "folder",
      comment: "A cycle between component folders (src/<folder>/): one of them must not know the other.",
      from: { path: "^src/[^/]+$" },
      to: { circular: true },
    },
    {
      name: "errors-import-no-other-folder",
      severity: "error",
      comment: "src/errors is the one error hierarchy every folder imports: it imports none of them (a cycle otherwise).",
      from: { path: "^src/errors/" },
      to: { path: "^src/", pathNot: "^src/errors/" },
    },
    {
      name: "kube-knows-no-component",
      severity: "error",
      comment:
        "src/kube is how every component talks to a cluster (ADR 0030): it imports src/errors and the registry's types of src/catalog, nothing that talks to it (a cycle otherwise) or knows OSB, Git or rendering.",
      from: { path: "^src/kube/" },
      to: { path: "^src/", pathNot: ["^src/kube/", "^src/errors/", "^src/catalog/index\\.ts$"] },
    },
    {
      name: "enter-a-folder-through-its-index",
      severity: "error",
      comment: "Another folder's files are reached only through its index.ts, its one import surface.",
      from: { path: "^src/([^/]+)/" },
      to: { path: "^src/([^/]+)/", pathNot: ["^src/$1/", "^src/[^/]+/index\\.ts$"] },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    includeOnly: "^src/",
    exclude: { path: "\\.test\\.ts$" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".js"] },
  },
};
