import type { PieceLogger } from "./history-watch.js";
import type { ObjectStore } from "./object-store.js";

/** A fetch bringing this many objects (a clone, mostly) is repacked for reading (see capDeltaChains). */
const CAP_DELTAS_AFTER_FETCHING = 20_000;

export interface RepackerDeps {
  store: Pick<ObjectStore, "needsCompaction" | "packCount" | "compact" | "capDeltaChains" | "oweDeltaCap" | "deltaCapOwed">;
  logger: PieceLogger;
  /**
   * No repack starts before this settles (resolved or rejected). A broker
   * passes its view's first load: a clone's repack (several threads) would compete with the cold
   * fold of the records for the CPU (ADR 0038, 2026-11-29). Default: no wait.
   */
  holdUntil?: PromiseLike<unknown>;
}

/**
 * Repacking, one of the writer's pieces (ADR 0005): small packs rolled up after pushes, and a
 * large fetched pack (a clone) repacked with short delta chains, in the background, one repack at
 * a time (two repacks of one repository must not race), none before `holdUntil`. Reads go on
 * meanwhile: the store finds objects that moved to the new pack (see ObjectStore.find). A writer
 * that closes waits for a repack under way and starts none: a repack to short chains it leaves is
 * owed in the repository (ObjectStore.oweDeltaCap), and the next start runs it (atStart).
 */
export class Repacker {
  private running: Promise<void> | undefined;
  /** Resolves when repacks may start: `holdUntil` settled, or finish() was called. */
  private readonly released: Promise<void>;
  /** finish() was called: repacks not started yet never start. */
  private finished = false;
  private release: () => void = () => undefined;
  /** A repack to short delta chains is queued and has not started. */
  private capQueued = false;

  constructor(private readonly deps: RepackerDeps) {
    this.released = new Promise<void>((resolve) => (this.release = resolve));
    if (deps.holdUntil === undefined) this.release();
    else void Promise.resolve(deps.holdUntil).then(this.release, this.release);
  }

  /** After a push: rolls up small packs when the store has too many. */
  afterPush(): void {
    const { store } = this.deps;
    if (this.running !== undefined || !store.needsCompaction) return;
    const packs = store.packCount;
    this.inBackground(() => store.compact(), (ms) => ({ msg: "packs compacted", fields: { packs, after: store.packCount, ms } }));
  }

  /**
   * After a fetch that brought `objects` objects: a large one is repacked with short delta chains.
   * In the background: start-up reads in bulk through git (BulkReader); only the few objects an
   * operation reads come through the pack reader, slower until the chains are capped.
   */
  afterFetch(objects: number): void {
    if (objects < CAP_DELTAS_AFTER_FETCHING) return;
    this.deps.store.oweDeltaCap();
    this.queueCap({ objects });
  }

  /** At start, before the fetch: a repack owed by a process stopped before it ran is queued (held like any). */
  atStart(): void {
    if (this.deps.store.deltaCapOwed) this.queueCap({ owed: true });
  }

  private queueCap(fields: { objects?: number; owed?: boolean }): void {
    if (this.capQueued) return;
    this.capQueued = true;
    const queuedAt = performance.now();
    this.inBackground(
      () => {
        this.capQueued = false;
        // How long it waited for the hold (and a repack before it): the start's reads went first.
        this.deps.logger.info({ ...fields, heldMs: Math.round(performance.now() - queuedAt) }, "repacking the fetched pack with short delta chains");
        return this.deps.store.capDeltaChains();
      },
      (ms) => ({ msg: "fetched pack repacked with short delta chains", fields: { ...fields, ms } }),
    );
  }

  /**
   * close(): resolves once no repack runs. One under way finishes; one not started (held, or queued
   * behind another) is dropped, so a shutdown never waits for it: the next start runs an owed one.
   */
  async finish(): Promise<void> {
    this.finished = true;
    this.release();
    while (this.running !== undefined) await this.running;
  }

  private inBackground(job: () => Promise<void>, done: (ms: number) => { msg: string; fields: object }): void {
    const { logger } = this.deps;
    const run: Promise<void> = (this.running ?? this.released)
      .then(async () => {
        if (this.finished) return;
        const started = performance.now();
        await job();
        const { msg, fields } = done(Math.round(performance.now() - started));
        logger.info(fields, msg);
      })
      .catch((error: unknown) => logger.warn({ err: error }, "repacking failed"))
      .finally(() => {
        if (this.running === run) this.running = undefined;
      });
    this.running = run;
  }
}
