import path from "node:path";
import { createRepoView, type LiveRepoView } from "../catalog/index.js";
import { CHART_CACHE_DIR, RemoteCharts } from "../charts/index.js";
import type { Config } from "../config/index.js";
import type { GitWriter } from "../gitwriter/index.js";
import { createInstanceSummaryCache, type InstanceSummaryCache } from "../repo/index.js";
import { openWriters, type OpenWritersOptions, type StoreSet } from "../stores/index.js";

export interface OpenedRepository {
  /** The control repository's writer, or the store set over it and the stores (ADR 0027). */
  writer: GitWriter;
  /** With stores configured. */
  storeSet?: StoreSet;
  view: LiveRepoView;
  summaries: InstanceSummaryCache;
}

/**
 * The writers (started) and the repository view over them (loaded), for `serve` and the commands
 * alike. The view's registry says which store a cluster is in, so the writers are made first and
 * read it through the view once it exists. `opened` hears of the writer and the view as each is
 * made, so that a caller can close them when a later step fails.
 */
export async function openRepository(
  config: Config,
  options: Omit<OpenWritersOptions, "clusters" | "holdRepacksUntil">,
  opened: { writer?: (writer: GitWriter) => void; view?: (view: LiveRepoView) => void } = {},
): Promise<OpenedRepository> {
  let clusters: () => readonly { id: string; store?: string | undefined; schedulable: boolean }[] = () => [];
  // A clone's repack waits for the view's first load: the cold fold is the start's critical path
  // and the repack would take CPU from it (ADR 0038, 2026-11-29). A failed start closes the
  // writers, which runs what is held.
  let viewLoaded: () => void = () => undefined;
  const holdRepacksUntil = new Promise<void>((resolve) => (viewLoaded = resolve));
  const { writer, storeSet } = openWriters(config, { ...options, clusters: () => clusters(), holdRepacksUntil });
  opened.writer?.(writer);
  await writer.start();
  const summaries = createInstanceSummaryCache();
  const view = createRepoView(
    writer,
    options.logger.child({ component: "repo-view" }),
    summaries,
    // Remote charts (http(s) url pinned by digest) are fetched when the catalog loads, cached by digest.
    { remoteCharts: new RemoteCharts({ dir: path.join(config.dataDir, CHART_CACHE_DIR) }) },
    storeSet ? { stores: new Set(storeSet.names) } : {},
  );
  clusters = () => view.clusters();
  opened.view?.(view);
  await view.reload();
  viewLoaded();
  return { writer, ...(storeSet ? { storeSet } : {}), view, summaries };
}
