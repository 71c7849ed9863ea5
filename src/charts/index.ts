/**
 * Helm charts for `type: helm` plans and `render-chart`: reading a chart (from the repository
 * tree, a local path, or a digest-pinned remote archive cached on disk) and calling the Go
 * module's Helm engine (go/helm). See docs/adr/0015-helm-charts-from-the-repository.md.
 */
export { chartFromPath, chartFromTree, isGzip } from "./chart-input.js";
export type { ChartFile, ChartInput } from "./chart-input.js";
export { helmCheck, helmRender, helmSetFilePaths } from "./module.js";
export type { ChartSummary, HelmDocument, HelmOptions, HelmRenderRequest, HelmRenderResult, ModuleCall } from "./module.js";
export { adler32, releaseName } from "./release.js";
export { CHART_CACHE_DIR, RemoteCharts, digestHex, fetchDownloader, sha256Hex } from "./remote.js";
export type { ChartDownloader, RemoteChartsOptions } from "./remote.js";
